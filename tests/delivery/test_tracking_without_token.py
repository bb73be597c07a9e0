"""Pull requests on a forge no configured token can read: tracking asks nothing, keeps their last
known state and stores the reason once on each row, without a log line per pull request per run."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.delivery.models import PullRequest
from portal.delivery.tracking import refresh_open

pytestmark = pytest.mark.django_db

REASON = "no token for github.com (github): set PORTAL_GITOPS_TOKEN"


def open_pull_request(number: int) -> PullRequest:
    return PullRequest.objects.create(
        kind="upgrade", services=["checkout"], repository="https://github.com/acme/gitops", forge_kind="github",
        number=number, title=f"checkout 1.7.{number}", branch=f"portal/checkout-1.7.{number}-prod",
        base_branch="main", state=PullRequest.State.OPEN,
    )


def test_pull_requests_on_a_forge_without_a_token_say_so_once(monkeypatch, caplog: pytest.LogCaptureFixture):
    monkeypatch.delenv("PORTAL_GITOPS_TOKEN", raising=False)
    monkeypatch.setattr(settings, "PORTAL_GITOPS_TOKEN", "")
    monkeypatch.setattr(settings, "PORTAL_GITOPS_GITHUB_API", "https://api.github.com")
    rows = [open_pull_request(n) for n in range(1, 21)]
    caplog.set_level(logging.DEBUG, logger="portal.delivery")

    report = refresh_open()

    assert (report.unreadable, report.errors, report.refreshed) == (20, 0, 0)
    assert set(PullRequest.objects.values_list("state", "last_error", "tracked_at")) == {("open", REASON, None)}
    assert [r for r in caplog.records if r.name.startswith("portal.delivery")] == []

    # The next run finds the same reason: nothing written, nothing logged.
    caplog.clear()
    with CaptureQueriesContext(connection) as queries:
        assert refresh_open().unreadable == len(rows)
    assert [q["sql"] for q in queries.captured_queries if not q["sql"].lstrip().upper().startswith("SELECT")] == []
    assert [r for r in caplog.records if r.name.startswith("portal.delivery")] == []
