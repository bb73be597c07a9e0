"""Automatic pull requests of chart versions, against each forge fake: a service policy's
`auto_pr` opens the chart upgrade of an application pinning a chart behind the newest version the
policy accepts (only the version line changes), by the same rules as image tags: within the
level, held by a freeze or a sync window, not when an open PR already proposes it, recorded in
AutoPRAttempt so it is never reopened nor retried more than daily."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.delivery.automatic import run
from portal.delivery.models import AutoPRAttempt, ChangeFreeze, PullRequest, ServicePolicy
from tests.delivery.test_chart_upgrades import RELEASE, notifications, release_applied_from  # noqa: F401
from tests.delivery.test_pin_location import demo_files
from tests.fakes.forges.harness import FILES, KINDS, Harness, serving

# Opening through the page queues a job; here it runs in the request (these tests are not about the job).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


@pytest.fixture(params=KINDS)
def forge(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    with serving(request.param, monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        yield harness


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    with serving("github", monkeypatch, {**FILES, **demo_files("apps/notifications")}) as harness:
        yield harness


def automatic(service, level: str = "minor") -> None:
    ServicePolicy.objects.filter(service=service).update(auto_pr={"prod": level})


def test_a_policy_asking_for_automatic_prs_opens_the_chart_upgrade_once(catalog, notifications, forge):  # noqa: F811
    app = release_applied_from(forge, catalog, notifications)
    automatic(notifications)

    report = run()

    assert report.opened and report.failed == [], report
    assert report.opened[0].startswith("the notifications chart 0.4.0 in notifications (prod-us-1): ")
    [pull] = forge.model.pulls
    assert pull.title == "Update the notifications chart to 0.4.0 in prod" and "**Automatic**" in pull.body
    files, before = forge.model.files_at(pull.head), forge.model.files_at(pull.base)
    assert {p for p in files if files[p] != before.get(p)} == {RELEASE}
    assert files[RELEASE] == before[RELEASE].replace('version: "0.3.1"', 'version: "0.4.0"')
    row = PullRequest.objects.get()
    assert row.automatic and row.opened_by is None and (row.from_version, row.to_version) == ("0.3.1", "0.4.0")
    attempt = AutoPRAttempt.objects.get()
    assert (attempt.app, attempt.service, attempt.to_version, attempt.outcome) == (
        app, notifications, "chart=notifications:0.4.0", "opened")

    # The open PR proposes it: a second run opens nothing more.
    again = run()
    assert again.opened == [] and len(forge.model.pulls) == 1


def test_a_chart_jump_beyond_the_level_is_left_for_a_person(catalog, notifications, github):  # noqa: F811
    release_applied_from(github, catalog, notifications)
    automatic(notifications, "patch")

    report = run()

    assert github.model.pulls == [] and not PullRequest.objects.exists()
    assert report.beyond_policy == [
        "the notifications chart 0.4.0 in notifications (prod-us-1): a minor jump, the policy allows patch"]


def test_a_freeze_and_a_sync_window_hold_the_chart_pr_until_they_end(catalog, notifications, github,  # noqa: F811
                                                                      client, users):
    app = release_applied_from(github, catalog, notifications)
    automatic(notifications)
    now = timezone.now()
    freeze = ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=2),
                                         reason="black friday")
    freeze.environments.add(catalog.prod)

    held = run(now=lambda: now)
    assert github.model.pulls == [] and len(held.held) == 1 and "change freeze" in held.held[0]
    # Held is recorded, not failed: the next run looks again; Updates says so on the chart's line.
    assert list(AutoPRAttempt.objects.values_list("outcome", "retry_after")) == [("freeze", None)]
    client.force_login(users["viewer"])
    updates = client.get("/updates").content.decode()
    row = updates.split('data-chart="notifications"', 1)[1].split("</tr>", 1)[0]
    assert 'data-outcome="freeze"' in row and "the notifications chart 0.4.0" in row
    assert "held by a change freeze" in row

    app.sync_blocked, app.sync_blocked_until = True, now + timedelta(hours=5)
    app.save(update_fields=["sync_blocked", "sync_blocked_until"])
    windowed = run(now=lambda: now + timedelta(hours=3))
    assert windowed.held == ["the notifications chart 0.4.0 in notifications (prod-us-1): a sync window blocks "
                             "notifications"]

    after = run(now=lambda: now + timedelta(hours=6))
    assert len(after.opened) == 1 and len(github.model.pulls) == 1


def test_a_chart_pr_opened_by_hand_is_not_opened_again(client, users, catalog, notifications, github):  # noqa: F811
    from django.urls import reverse

    app = release_applied_from(github, catalog, notifications)
    client.force_login(users["member"])
    client.post(reverse("pr-open"), {"kind": "upgrade", "item": f"{app.pk}:chart=notifications:0.4.0"})
    assert len(github.model.pulls) == 1
    automatic(notifications)

    report = run()

    assert report.opened == [] and report.failed == [] and len(github.model.pulls) == 1
    assert not AutoPRAttempt.objects.exists()
