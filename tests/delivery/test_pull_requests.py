"""The portal's pull requests: planned over a forge, claimed once, linked or opened, and kept as rows,
against each forge's fake over real HTTP (the forge write itself: tests/forges/test_open.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from django.db import IntegrityError, connection, transaction

from forges.forge import Forge
from portal.delivery import planner
from portal.delivery.models import PullRequest
from portal.delivery.planner import Change, Preview
from portal.delivery.pull_requests import FAILED, IN_PROGRESS, LINKED, OPENED, REFUSED, open_planned
from portal.kernel.audit.models import AuditLog
from tests.fakes.forges.base import Fault
from tests.fakes.forges.harness import BRANCH, COMMIT, KINDS, PR_CREATE, PROD, Harness, running


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with running(request.param) as harness:
        yield harness


def preview(forge: Forge, change: Change, prefix: str) -> Preview:
    """The planner over the files the forge holds under the change's path."""
    return planner.plan(change, *forge.pin_files(change.path, change.base_branch), prefix=prefix)


def test_preview_reads_the_files_and_writes_nothing(forge: Harness) -> None:
    result = preview(forge.forge, forge.change(), prefix="portal/")

    assert result.branch == BRANCH
    assert result.title == "Update checkout to 1.7.0 in prod"
    assert [e.path for e in result.edits] == [f"{PROD}/kustomization.yaml", f"{PROD}/values.yaml"]
    kustomization = result.edits[0]
    assert kustomization.after.endswith('    newTag: "1.7.0" # bumped by the portal\n')
    assert [(c.line, c.before.strip(), c.after.strip()) for c in kustomization.lines] == [
        (7, 'newTag: "1.6.0" # bumped by the portal', 'newTag: "1.7.0" # bumped by the portal')
    ]
    assert '-    newTag: "1.6.0"' in kustomization.diff and '+    newTag: "1.7.0"' in kustomization.diff
    assert [p.path for p in result.digest_pinned] == [f"{PROD}/migrations.yaml"]
    assert "left for a person" in result.description and "Faster checkout" in result.description
    assert {method for method, _path, _status in forge.server.log} == {"GET"}


def test_open_makes_one_branch_one_commit_and_the_pull_request(forge: Harness, db: None) -> None:
    plan = preview(forge.forge, forge.change(), prefix="portal/")
    main_before = forge.model.branches["main"]

    result = open_planned(
        forge.forge, plan, reviewers=["alice", "ghost", "@acme/platform"], labels=["portal", "dependencies"]
    )

    assert result.status == OPENED, result.message
    model = forge.model
    assert model.branches["main"] == main_before  # the followed branch is never written
    commits = model.commits_between("main", BRANCH)
    assert len(commits) == 1 and commits[0].message.startswith("Update checkout to 1.7.0 in prod")
    on_branch = model.files_at(BRANCH)
    assert on_branch[f"{PROD}/values.yaml"] == plan.edits[1].after
    assert on_branch[f"{PROD}/migrations.yaml"] == model.files_at("main")[f"{PROD}/migrations.yaml"]
    [pull] = model.open_pulls()
    assert (pull.title, pull.head, pull.base) == ("Update checkout to 1.7.0 in prod", BRANCH, "main")
    assert "`ghcr.io/acme/checkout` from `1.6.0` to `1.7.0`" in pull.body
    assert sorted(pull.labels) == ["dependencies", "portal"]
    assert "alice" in pull.reviewers and "ghost" not in pull.reviewers
    assert "ghost" in result.skipped
    if forge.kind == "gitlab":
        assert "@acme/platform" in result.skipped  # GitLab has no group reviewers over REST
    else:
        assert pull.team_reviewers == ["platform"]
    row = PullRequest.objects.get()
    assert (row.state, row.number, row.branch, row.forge_kind) == ("open", pull.number, BRANCH, forge.kind)
    assert (row.image, row.from_version, row.to_version, row.opened_outside) == (
        "ghcr.io/acme/checkout",
        "1.6.0",
        "1.7.0",
        False,
    )
    assert row.url.endswith(str(pull.number))
    assert AuditLog.objects.filter(action="pull_request.opened", target=row.url).count() == 1


@pytest.mark.parametrize("step", ["commit", "pull request"])
def test_a_failure_after_the_branch_exists_removes_the_branch(forge: Harness, db: None, step: str) -> None:
    pattern = COMMIT[forge.kind] if step == "commit" else PR_CREATE[forge.kind]
    forge.server.faults.append(Fault("POST", pattern, 422, body={"message": "Validation Failed"}))
    plan = preview(forge.forge, forge.change(), prefix="portal/")

    result = open_planned(forge.forge, plan)

    assert result.status == FAILED
    assert "Validation Failed" in result.message
    assert BRANCH not in forge.model.branches
    assert forge.model.pulls == []
    row = PullRequest.objects.get()  # the row says why, and a retry takes it back
    assert (row.state, row.step) == (PullRequest.State.FAILED, FAILED)
    assert "Validation Failed" in row.progress
    assert AuditLog.objects.filter(action="pull_request.failed").count() == 1
    assert open_planned(forge.forge, plan).status == OPENED


@pytest.mark.parametrize(
    ("title", "head"),
    [
        ("Update ghcr.io/acme/checkout Docker tag to v1.7.0", "renovate/ghcr.io-acme-checkout-1.x"),
        ("chore(deps): update ghcr.io/acme/checkout docker tag to v1.7.0", "renovate/ghcr.io-acme-checkout-1.x"),
        (
            "Bump acme/checkout from 1.6.0 to 1.7.0 in /apps/checkout/overlays/prod",
            "dependabot/docker/apps/checkout/overlays/prod/acme/checkout-1.7.0",
        ),
        ("checkout 1.7.0 for prod (hotfix)", "alice/checkout"),
    ],
)
def test_an_open_pull_request_from_someone_else_is_linked(forge: Harness, db: None, title: str, head: str) -> None:
    forge.model.branches[head] = forge.model.branches["main"]
    outside = forge.model.add_pull(title, head, author="renovate[bot]")
    plan = preview(forge.forge, forge.change(), prefix="portal/")

    result = open_planned(forge.forge, plan)

    assert result.status == LINKED, result.message
    assert BRANCH not in forge.model.branches and len(forge.model.pulls) == 1
    row = PullRequest.objects.get()
    assert (row.number, row.opened_outside, row.state) == (outside.number, True, "open")
    # Asked again, the same row answers; still nothing is created.
    assert open_planned(forge.forge, plan).status == LINKED
    assert len(forge.model.pulls) == 1


def test_titles_for_another_version_or_environment_are_not_linked(forge: Harness, db: None) -> None:
    main = forge.model.branches["main"]
    for head, title in [
        ("r1", "Update ghcr.io/acme/checkout Docker tag to v1.6.1"),
        ("d1", "Bump acme/other from 1.6.0 to 1.7.0"),
        ("p1", "Update checkout to 1.7.0 in staging"),
    ]:
        forge.model.branches[head] = main
        forge.model.add_pull(title, head)
    plan = preview(forge.forge, forge.change(), prefix="portal/")

    assert open_planned(forge.forge, plan).status == OPENED
    assert len(forge.model.pulls) == 4


def test_a_closed_pull_request_is_not_reopened_automatically(forge: Harness, db: None) -> None:
    plan = preview(forge.forge, forge.change(), prefix="portal/")
    assert open_planned(forge.forge, plan, automatic=True).status == OPENED
    PullRequest.objects.update(state="closed")

    result = open_planned(forge.forge, plan, automatic=True)

    assert result.status == REFUSED and "not reopened automatically" in result.message
    assert len(forge.model.pulls) == 1


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_opens_make_exactly_one_pull_request(forge: Harness) -> None:
    plan = preview(forge.forge, forge.change(), prefix="portal/")
    barrier = threading.Barrier(2)
    results: list[str] = []

    def click() -> None:
        try:
            own = forge.new_forge()  # each worker has its own client, as two processes would
            barrier.wait()
            results.append(open_planned(own, plan).status)
        finally:
            connection.close()

    threads = [threading.Thread(target=click) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(results) == [LINKED, OPENED], results
    assert len(forge.model.pulls) == 1
    assert PullRequest.objects.count() == 1
    assert len(forge.model.commits_between("main", BRANCH)) == 1


def test_a_claim_held_by_another_worker_is_respected(forge: Harness, db: None) -> None:
    plan = preview(forge.forge, forge.change(), prefix="portal/")
    # What another process leaves while it talks to the forge: the claim row, no number yet.
    PullRequest.objects.create(
        kind="upgrade",
        services=["checkout"],
        repository=forge.repository.removesuffix(".git"),
        forge_kind=forge.kind,
        title=plan.title,
        branch=plan.branch,
        base_branch="main",
    )

    result = open_planned(forge.forge, plan)

    assert result.status == IN_PROGRESS
    assert forge.model.pulls == [] and BRANCH not in forge.model.branches
    assert {method for method, _path, _status in forge.server.log} <= {"GET"}


def test_the_database_refuses_a_second_row_for_one_branch(db: None) -> None:
    fields = {
        "kind": "upgrade",
        "repository": "https://github.com/acme/gitops",
        "forge_kind": "github",
        "title": "t",
        "branch": BRANCH,
        "base_branch": "main",
    }
    PullRequest.objects.create(**fields)

    with pytest.raises(IntegrityError), transaction.atomic():
        PullRequest.objects.create(**fields)
