"""Automatic PRs against the GitHub fake: opened within the policy and not beyond it, signed as
automatic; held by a freeze and by a sync window; a failed one is retried the next day."""

from __future__ import annotations

from datetime import timedelta

import pytest

from portal.delivery.automatic import run
from portal.delivery.models import AutoPRAttempt, ChangeFreeze, PullRequest
from portal.kernel.audit.models import AuditLog
from portal.releases.models import Release
from tests.fakes.forges.harness import serving
from tests.fixtures.seed import seed_automatic

pytestmark = pytest.mark.django_db

PROD = "apps/checkout/overlays/prod"


@pytest.fixture
def github(monkeypatch):
    with serving("github", monkeypatch) as harness:
        yield harness


@pytest.fixture
def setup(catalog, github):
    return seed_automatic(catalog, github.repository, ("1.6.0", "1.7.0"), {"dev": "minor"}, PROD)


def test_an_automatic_pr_opens_within_the_policy_signed_as_automatic(setup, github):
    report = run()

    assert len(report.opened) == 1, report
    row = PullRequest.objects.get()
    assert row.automatic and row.opened_by is None and row.environment == "dev" and row.to_version == "1.7.0"
    [pull] = github.model.pulls
    assert pull.title == "Update checkout to 1.7.0 in dev" and "**Automatic**" in pull.body
    audit = AuditLog.objects.get(action="pull_request.opened")
    assert audit.actor_name == "system" and audit.actor is None
    assert AutoPRAttempt.objects.get().outcome == "opened"

    # staging has no automatic level; and a second run opens nothing more.
    run()
    assert len(github.model.pulls) == 1


def test_a_jump_beyond_the_policy_is_left_for_a_person(setup, catalog, github):
    Release.objects.create(service=catalog.checkout, tag="2.0.0", version="2.0.0", seen_at=setup["now"])

    report = run()

    assert github.model.pulls == [] and not PullRequest.objects.exists()
    assert report.beyond_policy == ["checkout 2.0.0 in checkout-dev (dev-eu-1): a major jump, the policy allows minor"]


def test_a_freeze_holds_automatic_prs_until_it_ends(setup, catalog, github):
    now = setup["now"]
    freeze = ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=2),
                                         reason="release train")
    freeze.environments.add(catalog.dev)

    held = run(now=lambda: now)
    assert github.model.pulls == [] and len(held.held) == 1 and "change freeze" in held.held[0]
    # Held is recorded (the pages say why nothing opened), not failed: the next run looks again.
    attempt = AutoPRAttempt.objects.get()
    assert (attempt.outcome, attempt.retry_after, attempt.attempts, attempt.environment) == ("freeze", None, 0, "dev")
    assert attempt.message.startswith("change freeze until ")

    after = run(now=lambda: now + timedelta(hours=3))
    assert len(after.opened) == 1 and len(github.model.pulls) == 1
    attempt.refresh_from_db()
    assert (attempt.outcome, attempt.attempts) == ("opened", 1)


def test_a_freeze_of_another_environment_does_not_hold(setup, catalog, github):
    now = setup["now"]
    freeze = ChangeFreeze.objects.create(starts_at=now - timedelta(hours=1), ends_at=now + timedelta(hours=2),
                                         reason="prod only")
    freeze.environments.add(catalog.prod)
    assert len(run(now=lambda: now).opened) == 1


@pytest.mark.parametrize("until", [timedelta(hours=4), None])
def test_a_sync_window_blocking_the_app_holds_automatic_prs(setup, github, until):
    app = setup["dev"]
    app.sync_blocked = True
    app.sync_blocked_until = setup["now"] + until if until else None
    app.save()

    report = run(now=lambda: setup["now"])

    assert github.model.pulls == [] and "a sync window blocks checkout-dev" in report.held[0]


def test_a_window_that_has_closed_holds_nothing(setup, github):
    app = setup["dev"]
    app.sync_blocked = True
    app.sync_blocked_until = setup["now"] - timedelta(minutes=1)
    app.save()
    assert len(run(now=lambda: setup["now"]).opened) == 1


def test_one_that_cannot_be_opened_is_retried_the_next_day_not_every_30_minutes(setup, github):
    app = setup["dev"]
    app.running = {"checkout": ["1.5.0"]}  # Git pins 1.6.0: no file pins the running tag
    app.save()
    Release.objects.create(service=app.services.get(), tag="1.5.0", version="1.5.0", seen_at=setup["now"])
    start = setup["now"]

    first = run(now=lambda: start)
    attempt = AutoPRAttempt.objects.get()
    assert len(first.failed) == 1 and "not at 1.5.0" in attempt.message
    assert attempt.outcome == "no_pin" and attempt.retry_after == start + timedelta(days=1)

    later = run(now=lambda: start + timedelta(minutes=30))
    assert later.failed == [] and len(later.waiting) == 1
    assert AutoPRAttempt.objects.get().attempts == 1

    # The next day a person has fixed the pin: the retry opens the pull request.
    app.running = {"checkout": ["1.6.0"]}
    app.save()
    next_day = run(now=lambda: start + timedelta(days=1, minutes=1))
    assert len(next_day.opened) == 1
    attempt.refresh_from_db()
    assert attempt.outcome == "opened" and attempt.attempts == 2 and attempt.retry_after is None
    assert len(github.model.pulls) == 1


def test_a_retry_that_fails_again_waits_another_day(setup, github):
    app = setup["dev"]
    app.running = {"checkout": ["1.5.0"]}
    app.save()
    Release.objects.create(service=app.services.get(), tag="1.5.0", version="1.5.0", seen_at=setup["now"])
    start = setup["now"]
    run(now=lambda: start)
    run(now=lambda: start + timedelta(days=1, minutes=1))
    attempt = AutoPRAttempt.objects.get()
    assert attempt.attempts == 2 and attempt.retry_after == start + timedelta(days=2, minutes=1)
