"""Every automatic pull request attempt is recorded per service and place with its result and why
(opened, refused, no pin, held by a sync window or a freeze), and the service page and Updates say
it: the policy table says what the policy allows, never "opened automatically" for a PR that was
not. The scenario of issue 34: `dev=minor, staging=patch` where opening is refused (demo mode), on
the GitHub fake."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from portal.delivery.automatic import run
from portal.delivery.models import AutoPRAttempt, ChangeFreeze, PullRequest, ServicePolicy
from portal.delivery.pull_requests import DEMO_REFUSAL
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
    return seed_automatic(catalog, github.repository, ("1.6.0", "1.6.1"), {"dev": "minor", "staging": "patch"}, PROD)


def page(client, users, name: str) -> str:
    client.force_login(users["viewer"])
    response = client.get(name)
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, marker: str) -> str:
    return html.split(marker, 1)[1].split("</li>", 1)[0]


def test_refused_attempts_are_recorded_and_said_on_the_service_page_and_updates(setup, github, settings, client,
                                                                                 users):
    settings.DEMO_MODE = True  # opening is refused; the fake still answers the reads

    report = run(now=lambda: setup["now"], forge_factory=lambda _repository: github.new_forge())

    assert len(report.failed) == 2 and report.opened == [] and github.model.pulls == []
    rows = {a.environment: a for a in AutoPRAttempt.objects.all()}
    assert set(rows) == {"dev", "staging"}
    for attempt in rows.values():
        assert (attempt.outcome, attempt.to_version, attempt.message) == ("refused", "1.6.1", DEMO_REFUSAL)
        assert attempt.retry_after == setup["now"] + timedelta(days=1)
    assert not PullRequest.objects.exists()

    html = page(client, users, reverse("service", kwargs={"name": "checkout"}))
    assert "opened automatically" not in html, "nothing was"
    assert "automatic by policy" in html  # what the policy allows, said as such
    for environment in ("dev", "staging"):
        said = section(html, f'<li data-environment="{environment}">')
        assert 'data-outcome="refused"' in said and "refused" in said and DEMO_REFUSAL in said
        assert "tried again from" in said

    updates = page(client, users, reverse("updates"))
    for app in ("checkout-dev", "checkout-staging"):
        row = updates.split(f'data-app="{app}"', 1)[1].split("</tr>", 1)[0]
        assert 'data-outcome="refused"' in row and DEMO_REFUSAL in row


def test_no_pin_a_window_and_a_freeze_are_each_said(setup, github, catalog, client, users):
    now = setup["now"]
    dev, staging = setup["dev"], setup["staging"]
    dev.running = {"checkout": ["1.5.0"]}  # Git pins 1.6.0: no file pins the running tag
    dev.save()
    Release.objects.create(service=catalog.checkout, tag="1.5.0", version="1.5.0", seen_at=now)
    staging.sync_blocked, staging.sync_blocked_until = True, now + timedelta(hours=4)
    staging.save()

    run(now=lambda: now)

    rows = {a.environment: a for a in AutoPRAttempt.objects.all()}
    assert rows["dev"].outcome == "no_pin" and "not at 1.5.0" in rows["dev"].message
    assert (rows["staging"].outcome, rows["staging"].attempts) == ("window", 0)
    assert rows["staging"].message == "a sync window blocks checkout-staging"

    html = page(client, users, reverse("service", kwargs={"name": "checkout"}))
    assert "no pin" in section(html, '<li data-environment="dev">')
    staged = section(html, '<li data-environment="staging">')
    assert "held by a sync window" in staged and "tried again at the next run" in staged

    # A freeze of staging, once the window has closed: held by it, said so; the dev failure keeps
    # its retry (it is not overwritten by anything before then).
    staging.sync_blocked = False
    staging.save()
    freeze = ChangeFreeze.objects.create(starts_at=now, ends_at=now + timedelta(days=2), reason="quarter close")
    freeze.environments.add(catalog.staging)
    run(now=lambda: now + timedelta(hours=5))
    assert AutoPRAttempt.objects.get(environment="staging").outcome == "freeze"
    assert AutoPRAttempt.objects.get(environment="dev").outcome == "no_pin"
    assert "held by a change freeze" in section(page(client, users, reverse("service", kwargs={"name": "checkout"})),
                                                 '<li data-environment="staging">')


def test_opened_is_said_only_of_a_pr_that_was_opened_automatically(setup, github, client, users):
    ServicePolicy.objects.filter(service__name="checkout").update(auto_pr={"dev": "minor"})

    report = run(now=lambda: setup["now"])

    assert len(report.opened) == 1
    attempt = AutoPRAttempt.objects.get()
    assert (attempt.outcome, attempt.environment, attempt.retry_after) == ("opened", "dev", None)
    assert PullRequest.objects.get().automatic
    said = section(page(client, users, reverse("service", kwargs={"name": "checkout"})),
                   '<li data-environment="dev">')
    assert 'data-outcome="opened"' in said and "1.6.1" in said


def test_a_service_with_automatic_prs_and_no_attempt_yet_says_so(setup, client, users):
    html = page(client, users, reverse("service", kwargs={"name": "checkout"}))
    assert "The automatic job has tried no pull request for this service yet." in html
