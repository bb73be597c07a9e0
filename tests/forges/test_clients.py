"""Each forge client over HTTP: rate limits, transient errors, pagination, state and checks."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from forges.forge import FAIL, NONE, PASS, RUNNING, ForgeError, NotFound, RateLimited
from forges.models import PullRequest
from forges.opening import OPENED, open_pull_request
from forges.planning import preview
from forges.pr_state import refresh_open
from forges.tasks import track_pull_requests
from portal.audit.models import AuditLog
from tests.forge_fakes.base import Fault
from tests.forge_fakes.harness import KINDS, NOW, TOKEN, Harness, running

BRANCH_PATH = {"github": r"/branches/main$", "gitlab": r"/repository/branches/main$", "gitea": r"/branches/main$"}
PR_CREATE = {"github": r"/pulls$", "gitlab": r"/merge_requests$", "gitea": r"/pulls$"}


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


# --- tracking ----------------------------------------------------------------------


def set_checks(forge: Harness, sha: str, state: str) -> None:
    model = forge.model
    if forge.kind == "github":
        run = {"pass": ("completed", "success"), "running": ("in_progress", None), "fail": ("completed", "failure")}
        status, conclusion = run[state]
        model.check_runs[sha] = [{"id": 1, "name": "build", "status": status, "conclusion": conclusion}]
    elif forge.kind == "gitlab":
        model.pipelines[sha] = {"pass": "success", "running": "running", "fail": "failed"}[state]
    else:
        model.statuses[sha] = [{"pass": "success", "running": "pending", "fail": "failure"}[state]]


def opened(forge: Harness) -> PullRequest:
    result = open_pull_request(forge.forge, preview(forge.forge, forge.change(), prefix="portal/"))
    assert result.status == OPENED
    return PullRequest.objects.get()


def test_tracking_follows_checks_and_the_merge(forge: Harness, db: None) -> None:
    row = opened(forge)
    head = forge.model.branches[row.branch]
    by_url = {forge.repository.removesuffix(".git"): forge.forge}
    t0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    refresh_open(by_url.__getitem__, now=t0)
    row.refresh_from_db()
    assert (row.state, row.checks, row.checks_failed_notified_at) == ("open", NONE, None)

    set_checks(forge, head, "running")
    refresh_open(by_url.__getitem__, now=t0 + timedelta(minutes=30))
    row.refresh_from_db()
    assert row.checks == RUNNING

    set_checks(forge, head, "fail")
    report = refresh_open(by_url.__getitem__, now=t0 + timedelta(minutes=60))
    row.refresh_from_db()
    assert (row.checks, row.checks_failed_notified_at, report.checks_failed) == (FAIL, t0 + timedelta(minutes=60), 1)

    report = refresh_open(by_url.__getitem__, now=t0 + timedelta(minutes=90))
    row.refresh_from_db()
    assert row.checks_failed_notified_at == t0 + timedelta(minutes=60)  # marked once per pull request
    assert report.checks_failed == 0

    set_checks(forge, head, "pass")
    pull = forge.model.pull(row.number)
    pull.state, pull.merged_at, pull.closed_at = "closed", t0 + timedelta(minutes=95), t0 + timedelta(minutes=95)
    report = refresh_open(by_url.__getitem__, now=t0 + timedelta(minutes=120))
    row.refresh_from_db()
    assert (row.state, row.checks, row.merged_at, report.merged) == ("merged", PASS, t0 + timedelta(minutes=95), 1)


def test_tracking_a_pull_request_closed_without_merging(forge: Harness, db: None) -> None:
    row = opened(forge)
    pull = forge.model.pull(row.number)
    pull.state, pull.closed_at = "closed", datetime(2026, 1, 6, tzinfo=UTC)

    refresh_open(lambda url: forge.forge)

    row.refresh_from_db()
    assert (row.state, row.closed_at, row.merged_at) == ("closed", datetime(2026, 1, 6, tzinfo=UTC), None)


def test_a_forge_error_during_tracking_keeps_the_last_state(forge: Harness, db: None) -> None:
    row = opened(forge)
    forge.server.faults.append(Fault("GET", r"/(pulls|merge_requests)/\d+$", 404, body={"message": "Not Found"}))

    report = refresh_open(lambda url: forge.forge)

    row.refresh_from_db()
    assert (report.errors, row.state) == (1, "open")
    assert "404" in row.last_error


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


def test_the_celery_task_runs_the_tracking(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with running("gitea") as forge:
        row = opened(forge)
        set_checks(forge, forge.model.branches[row.branch], "fail")
        for name, value in forge.environ.items():
            monkeypatch.setenv(name, value)

        result = track_pull_requests.apply().get()

        row.refresh_from_db()
        assert result["refreshed"] == 1 and row.checks == FAIL


# --- secrets -----------------------------------------------------------------------


def test_the_token_never_reaches_logs_errors_or_the_database(
    forge: Harness, db: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = {"message": f"token {TOKEN} is not allowed to do this"}
    forge.server.faults += [
        Fault("GET", BRANCH_PATH[forge.kind], 429, {"Retry-After": "1"}, echo),
        Fault("POST", PR_CREATE[forge.kind], 403, body=echo),
    ]
    errors: list[str] = []
    try:
        forge.forge.read_file("missing.yaml", "main")
    except ForgeError as error:
        errors.append(str(error))
    result = open_pull_request(forge.forge, preview(forge.forge, forge.change(), prefix="portal/"))
    errors.append(result.message)
    forge.server.faults.append(Fault("GET", r"/(pulls|merge_requests)/\d+$", 500, body=echo, times=9))
    assert open_pull_request(forge.forge, preview(forge.forge, forge.change(), prefix="portal/")).status == OPENED
    refresh_open(lambda url: forge.forge)

    assert result.status == "failed" and "***" in result.message
    stored = [str(a.details) for a in AuditLog.objects.all()] + [p.last_error for p in PullRequest.objects.all()]
    assert any("***" in text for text in stored)
    for text in [*errors, caplog.text, *stored]:
        assert TOKEN not in text
