"""The one forge write: previewed edits opened as a pull request, idempotent, never leaving a half-made
branch, audited; against each forge's fake over real HTTP. (Claiming it once across workers and
keeping it as a row: tests/delivery/test_opening.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from forges.opening import FAILED, LINKED, OPENED, REFUSED, Opened, open_pull_request
from forges.pins.file_edits import Retag, retag_files
from portal.kernel.audit.models import AuditLog
from tests.fakes.forges.base import Fault
from tests.fakes.forges.harness import BRANCH, COMMIT, KINDS, PR_CREATE, PROD, Harness, running

TITLE = "Update checkout to 1.7.0 in prod"
BODY = "Move `ghcr.io/acme/checkout` from `1.6.0` to `1.7.0`."


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with running(request.param) as harness:
        yield harness


def edits_of(forge: Harness) -> Retag:
    entries, files = forge.forge.pin_files(PROD, "main")
    return retag_files(files, entries, "ghcr.io/acme/checkout", "1.6.0", "1.7.0", PROD)


def opening(forge: Harness, **extra: Any) -> Opened:
    edits = extra.pop("edits") if "edits" in extra else edits_of(forge).edits
    repository = forge.repository.removesuffix(".git")
    return open_pull_request(forge.forge, repository, "main", BRANCH, TITLE, BODY, edits, **extra)


def test_the_edits_are_read_from_the_forge_and_nothing_is_written(forge: Harness) -> None:
    found = edits_of(forge)

    assert [e.path for e in found.edits] == [f"{PROD}/kustomization.yaml", f"{PROD}/values.yaml"]
    kustomization = found.edits[0]
    assert kustomization.after.endswith('    newTag: "1.7.0" # bumped by the portal\n')
    assert [(c.line, c.before.strip(), c.after.strip()) for c in kustomization.lines] == [
        (7, 'newTag: "1.6.0" # bumped by the portal', 'newTag: "1.7.0" # bumped by the portal')
    ]
    assert '-    newTag: "1.6.0"' in kustomization.diff and '+    newTag: "1.7.0"' in kustomization.diff
    assert all(e.sha for e in found.edits)  # Gitea updates a file by its blob SHA
    assert [p.path for p in found.digest_pinned] == [f"{PROD}/migrations.yaml"]
    assert {method for method, _path, _status in forge.server.log} == {"GET"}


def test_open_makes_one_branch_one_commit_and_the_pull_request(forge: Harness, db: None) -> None:
    main_before = forge.model.branches["main"]
    edits = edits_of(forge).edits

    result = opening(
        forge,
        reviewers=["alice", "ghost", "@acme/platform"],
        labels=["portal", "dependencies"],
        commit_message=f"{TITLE}\n\nUpdate ghcr.io/acme/checkout from 1.6.0 to 1.7.0.\n",
        details={"kind": "upgrade"},
    )

    assert result.status == OPENED, result.message
    model = forge.model
    assert model.branches["main"] == main_before  # the base branch is never written
    commits = model.commits_between("main", BRANCH)
    assert len(commits) == 1 and commits[0].message.startswith(f"{TITLE}\n\nUpdate ghcr.io/acme/checkout")
    on_branch = model.files_at(BRANCH)
    assert on_branch[f"{PROD}/values.yaml"] == edits[1].after
    assert on_branch[f"{PROD}/migrations.yaml"] == model.files_at("main")[f"{PROD}/migrations.yaml"]
    [pull] = model.open_pulls()
    assert (pull.title, pull.head, pull.base, pull.body) == (TITLE, BRANCH, "main", BODY)
    assert sorted(pull.labels) == ["dependencies", "portal"]
    assert "alice" in pull.reviewers and "ghost" not in pull.reviewers
    assert "ghost" in result.skipped
    if forge.kind == "gitlab":
        assert "@acme/platform" in result.skipped  # GitLab has no group reviewers over REST
    else:
        assert pull.team_reviewers == ["platform"]
    assert result.pull.number == pull.number and not result.outside
    [audit] = AuditLog.objects.filter(action="pull_request.opened")
    assert audit.target == result.pull.url
    assert (audit.details["kind"], audit.details["branch"], audit.details["number"]) == ("upgrade", BRANCH, pull.number)


@pytest.mark.parametrize("step", ["commit", "pull request"])
def test_a_failure_after_the_branch_exists_removes_the_branch(forge: Harness, db: None, step: str) -> None:
    pattern = COMMIT[forge.kind] if step == "commit" else PR_CREATE[forge.kind]
    forge.server.faults.append(Fault("POST", pattern, 422, body={"message": "Validation Failed"}))

    result = opening(forge)

    assert result.status == FAILED and result.pull is None
    assert "Validation Failed" in result.message
    assert BRANCH not in forge.model.branches
    assert forge.model.pulls == []
    assert AuditLog.objects.filter(action="pull_request.failed").count() == 1
    assert opening(forge).status == OPENED


def test_opening_again_finds_our_pull_request_and_writes_nothing(forge: Harness, db: None) -> None:
    first = opening(forge)
    writes = [entry for entry in forge.server.log if entry[0] != "GET"]

    again = opening(forge)

    assert (again.status, again.pull.number, again.outside) == (LINKED, first.pull.number, False)
    assert [entry for entry in forge.server.log if entry[0] != "GET"] == writes
    assert len(forge.model.pulls) == 1


def test_a_pull_request_the_caller_recognises_is_linked_instead(forge: Harness, db: None) -> None:
    head = "renovate/ghcr.io-acme-checkout-1.x"
    forge.model.branches[head] = forge.model.branches["main"]
    outside = forge.model.add_pull("Update ghcr.io/acme/checkout Docker tag to v1.7.0", head)
    forge.model.branches["other"] = forge.model.branches["main"]
    forge.model.add_pull("Something else", "other")

    result = opening(forge, same_change=lambda title: "checkout" in title)

    assert (result.status, result.pull.number, result.outside) == (LINKED, outside.number, True)
    assert BRANCH not in forge.model.branches and len(forge.model.pulls) == 2
    assert AuditLog.objects.filter(action="pull_request.linked").count() == 1


def test_a_branch_left_by_a_dead_attempt_is_started_again_from_the_base(forge: Harness, db: None) -> None:
    forge.model.branches[BRANCH] = forge.model.branches["main"]  # no pull request uses it

    result = opening(forge)

    assert result.status == OPENED, result.message
    assert len(forge.model.commits_between("main", BRANCH)) == 1


def test_a_forge_that_cannot_list_pull_requests_gets_no_write(forge: Harness, db: None) -> None:
    forge.server.faults.append(Fault("GET", r"/(pulls|merge_requests)$", 404, body={"message": "Not Found"}))

    result = opening(forge)

    assert result.status == FAILED and "Could not list open pull requests" in result.message
    assert {method for method, _path, _status in forge.server.log} == {"GET"}


def test_nothing_to_write_is_refused_before_the_forge_is_asked(forge: Harness, db: None) -> None:
    forge.server.log.clear()

    result = opening(forge, edits=[])

    assert (result.status, result.pull) == (REFUSED, None)
    assert forge.server.log == []
    assert forge.model.pulls == [] and BRANCH not in forge.model.branches
