"""The portal's pull requests kept in step with their forges (state, merge time, checks once failing),
by the tracking run and its Celery task, against each forge's fake over real HTTP."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from forges.forge import FAIL, NONE, PASS, RUNNING, ForgeError
from portal.delivery.models import PullRequest
from portal.delivery.planner import Preview, plan
from portal.delivery.pull_requests import OPENED, open_planned
from portal.delivery.tasks import track_pull_requests
from portal.delivery.tracking import refresh_open
from portal.kernel.audit.models import AuditLog
from tests.fakes.forges.base import Fault
from tests.fakes.forges.harness import BRANCH_PATH, KINDS, PR_CREATE, TOKEN, Harness, running, serving, set_checks


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with running(request.param) as harness:
        yield harness


def preview(forge: Harness) -> Preview:
    change = forge.change()
    return plan(change, *forge.forge.pin_files(change.path, change.base_branch), prefix="portal/")


def opened(forge: Harness) -> PullRequest:
    result = open_planned(forge.forge, preview(forge))
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
    # The failing check itself, as each forge names it: a check run, a pipeline, a status's details.
    assert row.checks_url == {
        "github": f"https://github.example/acme/gitops/runs/{head[:8]}",
        "gitlab": "https://gitlab.example/acme/gitops/-/pipelines/77",
        "gitea": f"https://ci.example/{head}/0",
    }[forge.kind]

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
    assert row.checks_url == ""  # passing now: no failing check to link


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


def test_the_celery_task_runs_the_tracking(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with serving("gitea", monkeypatch) as forge:  # the task builds its forges from the configuration
        row = opened(forge)
        set_checks(forge, forge.model.branches[row.branch], "fail")

        result = track_pull_requests.apply().get()

        row.refresh_from_db()
        assert result["refreshed"] == 1 and row.checks == FAIL


# --- secrets ---------------------------------------------------------------------------


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
    result = open_planned(forge.forge, preview(forge))
    errors.append(result.message)
    forge.server.faults.append(Fault("GET", r"/(pulls|merge_requests)/\d+$", 500, body=echo, times=9))
    assert open_planned(forge.forge, preview(forge)).status == OPENED
    refresh_open(lambda url: forge.forge)

    assert result.status == "failed" and "***" in result.message
    stored = [str(a.details) for a in AuditLog.objects.all()] + [p.last_error for p in PullRequest.objects.all()]
    assert any("***" in text for text in stored)
    for text in [*errors, caplog.text, *stored]:
        assert TOKEN not in text
