"""A GitHub fine-grained token with only Contents + Pull requests permissions: check runs and
commit statuses answer 403 on the GitHub fake. The merge is still recorded (state and merge time
are saved before checks are read), lead times count it, "merged, not deployed" fires once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from forges.forge import NONE
from gitops.models import RunningVersion, VersionChange
from portal.delivery import leadtimes
from portal.delivery.change_builders import change_for_upgrade
from portal.delivery.change_previews import open_change
from portal.delivery.deployments import track
from portal.delivery.models import PullRequest
from portal.delivery.tracking import refresh_open
from portal.notifications.delivery_events import emit_delivery_events
from portal.notifications.events import EventKind
from portal.notifications.models import Episode
from tests.fakes.forges.base import Fault
from tests.fakes.forges.harness import PROD, serving
from tests.fixtures.seed import seed_app
from tests.forges.test_default_branch import NOT_ACCESSIBLE

pytestmark = pytest.mark.django_db


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch) as harness:
        # The token may read and write contents and pull requests, nothing else.
        for pattern in (r"/check-runs$", r"/status$"):
            harness.server.faults.append(Fault("GET", pattern, 403, body=NOT_ACCESSIBLE, times=1000))
        yield harness


def test_a_merge_is_recorded_when_the_token_may_not_read_checks(catalog, users, github):
    app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                   repo_url=github.repository, path=PROD)
    result = open_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), users["member"], forge=github.forge)
    assert result.ok, result.message
    row = PullRequest.objects.get()
    [pull] = github.model.open_pulls()

    # While open: checks unknown, said why; the pull request is tracked, not an error.
    opened_at = timezone.now()
    report = refresh_open(lambda repository: github.new_forge(), now=opened_at)
    row.refresh_from_db()
    assert (report.refreshed, report.errors, row.state, row.checks) == (1, 0, "open", NONE)
    assert "Checks: read" in row.last_error

    merged_at = (opened_at + timedelta(minutes=5)).replace(microsecond=0)
    pull.state, pull.merged_at, pull.closed_at = "closed", merged_at, merged_at
    report = refresh_open(lambda repository: github.new_forge(), now=merged_at + timedelta(minutes=1))
    row.refresh_from_db()
    assert (report.merged, report.errors) == (1, 0)
    assert (row.state, row.merged_at) == (PullRequest.State.MERGED, merged_at)

    # Not running an hour after the merge: one "merged, not deployed", however often tracking runs.
    for minutes in (61, 75):
        track(merged_at + timedelta(minutes=minutes))
        emit_delivery_events(merged_at + timedelta(minutes=minutes))
    assert Episode.objects.filter(kind=EventKind.MERGED_NOT_DEPLOYED).count() == 1

    # Then it runs: the lead time from the merge counts it.
    RunningVersion.objects.filter(app=app).update(version="1.7.0", image="ghcr.io/acme/checkout:1.7.0")
    deployed_at = merged_at + timedelta(minutes=80)
    VersionChange.objects.create(service=catalog.checkout, environment=catalog.prod_eu.environment,
                                 cluster=catalog.prod_eu, app=app, from_version="1.6.0", to_version="1.7.0",
                                 at=deployed_at)
    track(merged_at + timedelta(minutes=90))
    row.refresh_from_db()
    assert row.running_at == deployed_at
    times = leadtimes.lead_time(row.opened_at, row.merged_at, row.running_at)
    assert times.from_merge == timedelta(minutes=80)
    assert leadtimes.medians([times]).count == 1


def test_a_forge_failing_on_checks_never_hides_the_merge(catalog, users, monkeypatch):
    with serving("github", monkeypatch) as github:
        app = seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, version="1.6.0",
                       repo_url=github.repository, path=PROD)
        assert open_change(change_for_upgrade(app, catalog.checkout, "1.7.0"), users["member"], forge=github.forge).ok
        [pull] = github.model.open_pulls()
        merged_at = timezone.now().replace(microsecond=0)
        pull.state, pull.merged_at, pull.closed_at = "closed", merged_at, merged_at
        github.server.faults.append(Fault("GET", r"/check-runs$", 502, body={"message": "Bad gateway"}, times=1000))

        refresh_open(lambda repository: github.new_forge(), now=merged_at + timedelta(minutes=1))

    row = PullRequest.objects.get()
    assert (row.state, row.merged_at) == (PullRequest.State.MERGED, merged_at)
    assert "502" in row.last_error
