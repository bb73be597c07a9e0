"""POST /api/v1/pull-requests: a member's token opens what the preview page's button opens,
through the same delivery function, against the GitHub fake over real HTTP; with team scope on,
another team's service is a 403 naming the owning team, and nothing is written."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

from portal.delivery.models import PullRequest
from portal.kernel.accounts import tokens
from portal.kernel.audit.models import AuditLog

pytestmark = pytest.mark.django_db

URL = "/api/v1/pull-requests"
scoped = override_settings(PORTAL_TEAM_SCOPED_ACTIONS=True)


@pytest.fixture
def post(client, users, eager_celery):
    """Opening queues a job on the forge queue; here it runs at once, in the test's thread."""
    plain = {role: tokens.issue(user, "tests")[1] for role, user in users.items()}
    return lambda role, body: client.post(URL, body, content_type="application/json",
                                          HTTP_AUTHORIZATION=f"Bearer {plain[role]}")


@scoped
def test_another_teams_service_is_403_with_the_owning_team_and_nothing_is_opened(post, team_fleet):
    response = post("member", {"kind": "upgrade", "items": [team_fleet.item(team_fleet.payments_app, "3.1.0")]})
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "team_scope" and error["details"] == {"team": "payments", "service": "payments"}
    assert error["message"] == ("payments is owned by team payments; you act for shop. "
                                "Ask a payments member or an admin.")
    assert not PullRequest.objects.exists() and team_fleet.github.model.pulls == []


@scoped
def test_a_member_opens_their_teams_change_202_with_the_rows(post, team_fleet, users):
    response = post("member", {"items": [team_fleet.item(team_fleet.checkout_app, "1.7.0")], "mode": "each"})
    assert response.status_code == 202, response.content
    [row] = response.json()
    assert row["services"] == ["checkout"] and row["to_version"] == "1.7.0" and row["opened_by"] == "member"
    assert row["state"] == "open" and row["url"].endswith(f"/pull/{team_fleet.github.model.pulls[0].number}")
    assert AuditLog.objects.get(action="pull_request.opened").team == "shop"
    # Again: the open pull request is linked, not opened twice.
    assert post("member", {"items": [team_fleet.item(team_fleet.checkout_app, "1.7.0")]}).status_code == 202
    assert len(team_fleet.github.model.pulls) == 1


@scoped
def test_an_admin_is_not_team_scoped(post, team_fleet):
    response = post("admin", {"items": [team_fleet.item(team_fleet.checkout_app, "1.7.0")]})
    assert response.status_code == 202 and response.json()[0]["opened_by"] == "admin"


def test_with_scope_off_a_member_opens_any_service(post, team_fleet, catalog):
    catalog.checkout.team = "another"
    catalog.checkout.save()
    assert post("member", {"items": [team_fleet.item(team_fleet.checkout_app, "1.7.0")]}).status_code == 202


def test_viewers_bad_changes_and_sessions_without_csrf_are_refused(post, team_fleet, users):
    item = team_fleet.item(team_fleet.checkout_app, "1.7.0")
    assert post("viewer", {"items": [item]}).status_code == 403
    bad = post("member", {"items": ["not-an-item"]})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_parameters"
    missing = post("member", {"items": [f"{team_fleet.checkout_app.pk}:nosuch:1.0.0"]})
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "invalid_change"
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(users["member"])
    assert browser.post(URL, {"items": [item]}, content_type="application/json").status_code == 403
    assert not PullRequest.objects.exists() and team_fleet.github.model.pulls == []


@scoped
def test_the_answer_never_waits_on_the_forge_it_queues_the_job(client, users, team_fleet, memory_broker):
    plain = tokens.issue(users["member"], "tests")[1]
    response = client.post(URL, {"items": [team_fleet.item(team_fleet.checkout_app, "1.7.0")]},
                           content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {plain}")
    assert response.status_code == 202, response.content
    [row] = response.json()
    assert row["state"] == "opening" and row["number"] is None
    assert team_fleet.github.model.pulls == []  # nothing asked of the forge yet
    [job] = memory_broker.take("forge")
    assert job.task == "delivery.open_pull_request"
