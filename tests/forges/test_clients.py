"""Each forge client over HTTP: rate limits, transient errors, pagination, state and checks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forges.forge import FAIL, NONE, PASS, RUNNING, ForgeError, NotFound, RateLimited
from tests.fakes.forges.base import Fault
from tests.fakes.forges.harness import BRANCH_PATH, KINDS, NOW, PR_CREATE, Harness, running


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with running(request.param) as harness:
        yield harness


def limited(kind: str, wait: int) -> Fault:
    """The answer each forge gives when a primary rate limit is hit."""
    if kind == "github":
        return Fault(
            "GET",
            BRANCH_PATH[kind],
            403,
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + wait), "X-RateLimit-Resource": "core"},
            {
                "message": "API rate limit exceeded for user ID 1.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            },
        )
    return Fault("GET", BRANCH_PATH[kind], 429, {"Retry-After": str(wait)}, {"message": "429 Too Many Requests"})


def test_a_rate_limit_is_waited_out_until_the_reset(forge: Harness) -> None:
    forge.server.faults.append(limited(forge.kind, 30))

    head = forge.forge.branch_head("main")

    assert head == forge.model.branches["main"]
    assert forge.sleeps == [31.0 if forge.kind == "github" else 30.0]  # GitHub: +1 s, the reset's second


def test_github_secondary_limit_honours_retry_after() -> None:
    with running("github") as forge:
        forge.server.faults.append(
            Fault(
                "POST",
                r"/git/refs$",
                403,
                {"Retry-After": "7"},
                {"message": "You have exceeded a secondary rate limit. Please wait."},
            )
        )
        forge.forge.create_branch("portal/x", "main")
        assert forge.sleeps == [7.0] and "portal/x" in forge.model.branches


def test_a_reset_beyond_the_bound_raises_instead_of_blocking(forge: Harness) -> None:
    forge.server.faults.append(limited(forge.kind, 3600))

    with pytest.raises(RateLimited) as raised:
        forge.forge.branch_head("main")

    assert raised.value.wait is not None and raised.value.wait >= 3600
    assert forge.sleeps == []


def test_rate_limits_that_keep_coming_stop_after_the_attempt_bound(forge: Harness) -> None:
    fault = limited(forge.kind, 5)
    fault.times = 10
    forge.server.faults.append(fault)

    with pytest.raises(RateLimited):
        forge.forge.branch_head("main")

    assert len(forge.sleeps) == 3  # max_attempts=4: three waits, then give up
    assert len(forge.server.requests_matching("GET", BRANCH_PATH[forge.kind])) == 4


def test_transient_5xx_on_a_read_is_retried_with_backoff(forge: Harness) -> None:
    forge.server.faults.append(Fault("GET", BRANCH_PATH[forge.kind], 502, body={"message": "Bad Gateway"}, times=2))

    assert forge.forge.branch_head("main") == forge.model.branches["main"]
    assert forge.sleeps == [1.0, 2.0]


def test_5xx_is_retried_only_within_the_bound(forge: Harness) -> None:
    forge.server.faults.append(Fault("GET", BRANCH_PATH[forge.kind], 503, body={"message": "unavailable"}, times=9))

    with pytest.raises(ForgeError) as raised:
        forge.forge.branch_head("main")

    assert raised.value.status == 503
    assert len(forge.server.requests_matching("GET", BRANCH_PATH[forge.kind])) == 4


def test_a_5xx_on_creating_a_pull_request_is_not_repeated(forge: Harness) -> None:
    forge.forge.create_branch("portal/x", "main")
    forge.server.faults.append(Fault("POST", PR_CREATE[forge.kind], 502, body={"message": "Bad Gateway"}))

    with pytest.raises(ForgeError):
        forge.forge.open_pull_request("portal/x", "main", "t", "b")

    assert len(forge.server.requests_matching("POST", PR_CREATE[forge.kind])) == 1


def test_lists_are_read_across_every_page(forge: Harness) -> None:
    main = forge.model.branches["main"]
    for n in range(7):
        forge.model.branches[f"b{n}"] = main
        forge.model.add_pull(f"Change {n}", f"b{n}")
    forge.model.pulls[3].state = "closed"

    titles = [p.title for p in forge.forge.open_pull_requests()]

    assert titles == [f"Change {n}" for n in range(7) if n != 3]
    assert forge.forge.find_pull_request("change 5").number == 6
    assert len(forge.forge.tree("", "main")) == 6  # GitLab and Gitea trees are paged too


def test_missing_things_are_not_found(forge: Harness) -> None:
    with pytest.raises(NotFound):
        forge.forge.branch_head("no-such-branch")
    with pytest.raises(NotFound):
        forge.forge.read_file("apps/nothing.yaml", "main")


def test_a_truncated_github_tree_is_walked_directory_by_directory() -> None:
    with running("github") as forge:
        forge.server.truncate_trees = True
        paths = [e.path for e in forge.forge.tree("apps/checkout/overlays/prod", "main")]
        assert paths == [
            f"apps/checkout/overlays/prod/{n}" for n in ("kustomization.yaml", "migrations.yaml", "values.yaml")
        ]


def test_gitea_labels_go_by_id_and_missing_ones_are_created() -> None:
    with running("gitea") as forge:
        forge.server.org_labels = [{"id": 7, "name": "dependencies", "color": "0000ff"}]
        forge.model.branches["x"] = forge.model.branches["main"]
        pull = forge.model.add_pull("t", "x")

        forge.forge.add_labels(pull.number, ["dependencies", "portal"])

        assert pull.labels == ["dependencies", "portal"]
        assert [lb["name"] for lb in forge.model.labels] == ["portal"]  # only the missing one was created


# --- pull request state and checks --------------------------------------------------


def test_github_actions_only_repository_reads_checks_from_check_runs() -> None:
    with running("github") as forge:
        forge.model.branches["x"] = forge.model.branches["main"]
        pull = forge.model.add_pull("t", "x")
        info = forge.forge.pull_request(pull.number)
        sha = info.head_sha
        # No legacy statuses: combined status is "pending" with total_count 0, which is not "running".
        assert forge.forge.checks(info) == NONE
        forge.model.check_runs[sha] = [{"id": 1, "name": "test", "status": "completed", "conclusion": "success"}]
        assert forge.forge.checks(info) == PASS
        forge.model.statuses[sha] = ["pending"]
        assert forge.forge.checks(info) == RUNNING
        forge.model.statuses[sha] = ["success", "error"]
        assert forge.forge.checks(info) == FAIL
