"""The default branch (what `HEAD` means to Argo CD and Flux), asked of each forge's fake over
real HTTP, once per client; and the checks a GitHub fine-grained token may not read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forges.forge import FAIL, NONE, PASS, ChecksUnreadable
from forges.pr_state import pull_request_state
from tests.fakes.forges.base import Fault
from tests.fakes.forges.harness import KINDS, Harness, running, set_checks

REPOSITORY_PATH = {
    "github": r"/repos/acme/gitops$",
    "gitlab": r"/projects/acme%2Fgitops$",
    "gitea": r"/repos/acme/gitops$",
}
# What GitHub answers a fine-grained token without the Checks / Commit statuses permission.
NOT_ACCESSIBLE = {
    "message": "Resource not accessible by personal access token",
    "documentation_url": "https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference",
    "status": "403",
}


@pytest.fixture(params=KINDS)
def trunk(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with running(request.param, default_branch="trunk") as harness:
        yield harness


def test_the_default_branch_is_what_the_forge_names_and_is_asked_once(trunk: Harness) -> None:
    assert trunk.forge.default_branch() == "trunk"
    assert trunk.forge.default_branch() == "trunk"

    asked = trunk.server.requests_matching("GET", REPOSITORY_PATH[trunk.kind])
    assert [status for _method, _path, status in asked] == [200]


@pytest.fixture
def github() -> Iterator[Harness]:
    with running("github") as harness:
        harness.model.branches["feature"] = harness.model.branches["main"]
        yield harness


def refuse(harness: Harness, pattern: str) -> None:
    harness.server.faults.append(Fault("GET", pattern, 403, body=NOT_ACCESSIBLE, times=100))


def test_check_runs_refused_fall_back_to_commit_statuses(github: Harness) -> None:
    pull = github.model.add_pull("Update checkout to 1.7.0 in prod", "feature")
    head = github.model.branches["feature"]
    set_checks(github, head, "pass")  # a check run that passed: hidden from this token
    github.model.statuses[head] = ["failure"]
    refuse(github, r"/check-runs$")

    assert github.forge.checks(github.forge.pull_request(pull.number)) == FAIL


def test_check_runs_and_statuses_refused_are_checks_unknown_not_an_error(github: Harness) -> None:
    pull = github.model.add_pull("Update checkout to 1.7.0 in prod", "feature")
    refuse(github, r"/check-runs$")
    refuse(github, r"/status$")

    with pytest.raises(ChecksUnreadable) as raised:
        github.forge.checks(github.forge.pull_request(pull.number))
    answer = pull_request_state(github.forge, pull.number)

    assert raised.value.status == 403 and "Checks: read" in str(raised.value)
    assert (answer.state, answer.checks) == ("open", NONE)
    assert "Commit statuses: read" in answer.checks_unknown


def test_a_server_error_on_check_runs_is_still_an_error(github: Harness) -> None:
    # Only "not allowed" is read as unknown: a failing forge must not look like "no checks".
    pull = github.model.add_pull("Update checkout to 1.7.0 in prod", "feature")
    github.server.faults.append(Fault("GET", r"/check-runs$", 500, body={"message": "boom"}, times=100))

    with pytest.raises(Exception) as raised:
        github.forge.checks(github.forge.pull_request(pull.number))
    assert not isinstance(raised.value, ChecksUnreadable)


def test_with_every_permission_both_kinds_of_checks_count(github: Harness) -> None:
    pull = github.model.add_pull("Update checkout to 1.7.0 in prod", "feature")
    head = github.model.branches["feature"]
    set_checks(github, head, "pass")
    github.model.statuses[head] = ["success"]

    assert github.forge.checks(github.forge.pull_request(pull.number)) == PASS
