"""The job that opens a pull request, run in the test's process: each run re-entrant (it adopts or
continues what a dead run left), a rate limit waited out by a later run, the reconciler resolving
every row past its lease, the follow page showing each step. Real workers: test_forge_jobs_workers.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from portal.delivery import forge_jobs
from portal.delivery.models import PullRequest
from tests.fakes.forges.base import Fault
from tests.fakes.forges.github import secondary_rate_limit
from tests.fakes.forges.harness import BRANCH, PR_CREATE, Harness, serving

pytestmark = pytest.mark.django_db


@pytest.fixture
def github(monkeypatch, settings):
    settings.PORTAL_BRANCH_PREFIX = "portal/"
    with serving("github", monkeypatch) as harness:
        yield harness


def claimed(harness: Harness) -> PullRequest:
    row, answer = forge_jobs.claim_job(harness.change(), None, forge=harness.forge)
    assert answer is None and row is not None
    return row


def ours(harness: Harness) -> list[str]:
    return [name for name in harness.model.branches if name.startswith("portal/")]


def test_a_run_after_one_killed_after_the_branch_continues_on_that_branch(github: Harness) -> None:
    row = claimed(github)
    github.model.branches[BRANCH] = github.model.branches["main"]  # what the dead run left

    result = forge_jobs.run(row.pk, row.run, forge=github.forge)

    assert result is not None and result.status == "opened"
    assert ours(github) == [BRANCH] and len(github.model.pulls) == 1
    assert len(github.model.commits_between("main", BRANCH)) == 1
    row.refresh_from_db()
    assert (row.state, row.number, row.step) == ("open", 1, "opened")


def test_a_run_after_one_killed_after_the_commit_opens_only_the_pull_request(github: Harness) -> None:
    row = claimed(github)
    github.server.faults.append(Fault("POST", PR_CREATE["github"], 502))  # the PR is never answered
    github.server.faults.append(Fault("DELETE", "/git/refs/heads/", 502))  # nor is the branch removed
    assert forge_jobs.run(row.pk, row.run, forge=github.forge).status == "failed"
    commits = github.model.commits_between("main", BRANCH)
    assert len(commits) == 1
    row, _ = forge_jobs.claim_job(github.change(), None, forge=github.forge)  # asked again: taken back

    result = forge_jobs.run(row.pk, row.run, forge=github.forge)

    assert result.status == "opened"
    assert github.model.commits_between("main", BRANCH) == commits  # the same commit, not a second
    assert len(github.model.pulls) == 1


def test_a_run_after_one_killed_after_the_pull_request_adopts_it(github: Harness) -> None:
    row = claimed(github)
    github.model.branches[BRANCH] = github.model.branches["main"]
    github.model.add_pull("Update checkout to 1.7.0 in prod", BRANCH)

    result = forge_jobs.run(row.pk, row.run, forge=github.forge)

    assert result.status == "linked"
    assert len(github.model.pulls) == 1 and ours(github) == [BRANCH]
    row.refresh_from_db()
    assert (row.state, row.number) == ("open", 1)


def test_a_stale_message_does_nothing(github: Harness) -> None:
    row = claimed(github)
    assert forge_jobs.run(row.pk, row.run - 1, forge=github.forge) is None
    assert github.model.pulls == [] and github.server.log == []


def test_a_long_rate_limit_is_waited_out_by_a_later_run_not_in_this_one(memory_broker, github: Harness) -> None:
    github.server.faults.append(secondary_rate_limit("POST", PR_CREATE["github"], retry_after=120))
    row = claimed(github)
    before = timezone.now()

    result = forge_jobs.run(row.pk, row.run, forge=github.new_forge_with(forge_jobs.job_policy()))

    row.refresh_from_db()
    assert result.status == "in_progress"
    assert row.state == "opening" and row.step == "waiting"
    assert row.waiting_until is not None
    assert timedelta(seconds=119) < row.waiting_until - before < timedelta(seconds=125)
    assert row.progress == f"waiting for GitHub's rate limit until {row.waiting_until:%H:%M:%S} UTC"
    assert ours(github) == [BRANCH] and github.model.pulls == []  # kept for the next run
    found = memory_broker.take("forge")
    assert [(q.task, q.args) for q in found] == [("delivery.open_pull_request", [row.pk, row.run])], found

    assert forge_jobs.run(row.pk, row.run, forge=github.forge).status == "opened"
    assert len(github.model.pulls) == 1 and ours(github) == [BRANCH]


def test_the_reconciler_resumes_a_row_past_its_lease(memory_broker, github: Harness) -> None:
    row = claimed(github)
    PullRequest.objects.filter(pk=row.pk).update(lease_until=timezone.now() - timedelta(seconds=1))

    assert forge_jobs.reconcile() == {"resumed": 1, "resolved": 0}

    [queued] = memory_broker.take("forge")
    assert queued.args == [row.pk, row.run + 1]
    assert forge_jobs.reconcile() == {"resumed": 0, "resolved": 0}  # its lease is new


@pytest.mark.parametrize("pull", [True, False])
def test_the_reconciler_resolves_a_row_with_no_job_on_the_forge(github: Harness, pull: bool) -> None:
    # What a claim made before jobs existed leaves: `opening`, no lease, no changes recorded.
    row = PullRequest.objects.create(
        kind="upgrade",
        repository=github.repository.removesuffix(".git"),
        forge_kind="github",
        title="t",
        branch=BRANCH,
        base_branch="main",
    )
    PullRequest.objects.filter(pk=row.pk).update(lease_until=None)
    github.model.branches[BRANCH] = github.model.branches["main"]
    if pull:
        github.model.add_pull("Update checkout to 1.7.0 in prod", BRANCH)

    assert forge_jobs.reconcile() == {"resumed": 0, "resolved": 1}

    row.refresh_from_db()
    if pull:
        assert (row.state, row.number) == ("open", 1)
        assert ours(github) == [BRANCH]
    else:
        assert row.state == "failed" and "its branch was deleted" in row.progress
        assert ours(github) == []
    assert not PullRequest.objects.filter(state="opening").exists()


def test_the_follow_page_shows_each_step_and_polls_only_while_opening(github: Harness, client, users) -> None:
    client.force_login(users["viewer"])
    row = claimed(github)
    PullRequest.objects.filter(pk=row.pk).update(step="creating branch", progress="creating branch")

    page = client.get(reverse("pr-opened-rows") + f"?id={row.pk}").content.decode()
    assert "creating branch" in page and 'hx-trigger="every 2s"' in page

    forge_jobs.run(row.pk, row.run, forge=github.forge)
    page = client.get(reverse("pr-opened") + f"?id={row.pk}").content.decode()
    assert "opened #1" in page and "every 2s" not in page
