"""Team scope on the pages: with PORTAL_TEAM_SCOPED_ACTIONS on, a member of team shop sees the
preview of payments' change with the refusal in place of the button, and opening it writes
nothing (no row, no forge call); shop's own change opens against the GitHub fake; admins act
everywhere; with the setting off nothing changes. Put off and mute are refused the same way."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.contrib.messages import get_messages
from django.test import override_settings
from django.urls import reverse

from gitops.models import FindingMute
from portal.delivery.models import PullRequest, ServicePolicy
from portal.kernel.audit.models import AuditLog

pytestmark = pytest.mark.django_db

REFUSAL = "payments is owned by team payments; you act for shop. Ask a payments member or an admin."
scoped = override_settings(PORTAL_TEAM_SCOPED_ACTIONS=True)


def preview(client, fleet, app, to):
    return client.get(reverse("pr-preview") + "?" + urlencode({"kind": "upgrade", "item": fleet.item(app, to)}))


def forge_writes(fleet) -> list:
    return [entry for entry in fleet.github.server.log if entry[0] != "GET"]


@scoped
def test_a_member_sees_the_refusal_instead_of_the_button_on_another_teams_service(eager_celery, client, users,
                                                                                  team_fleet):
    client.force_login(users["member"])
    html = preview(client, team_fleet, team_fleet.payments_app, "3.1.0").content.decode()
    assert REFUSAL in html and "Open pull request" not in html
    assert "apps/payments/overlays/prod/kustomization.yaml" in html  # the diff is still shown


@scoped
def test_opening_another_teams_change_is_refused_with_the_message_and_writes_nothing(client, users, team_fleet):
    client.force_login(users["member"])
    response = client.post(reverse("pr-open"), {"kind": "upgrade",
                                                "item": team_fleet.item(team_fleet.payments_app, "3.1.0")})
    assert response.status_code == 302 and response["Location"].startswith(reverse("pr-preview"))
    assert [str(m) for m in get_messages(response.wsgi_request)] == [f"Not opened: {REFUSAL}"]
    assert not PullRequest.objects.exists() and team_fleet.github.model.pulls == []
    assert forge_writes(team_fleet) == []


@scoped
def test_a_grouped_change_is_refused_when_any_service_in_it_is_another_teams(client, users, team_fleet):
    client.force_login(users["member"])
    items = [team_fleet.item(team_fleet.checkout_app, "1.7.0"), team_fleet.item(team_fleet.payments_app, "3.1.0")]
    client.post(reverse("pr-open"), {"kind": "upgrade", "mode": "grouped", "item": items})
    assert not PullRequest.objects.exists() and team_fleet.github.model.pulls == []


@scoped
def test_a_member_opens_their_teams_change_and_the_audit_row_names_user_and_team(eager_celery, client, users,
                                                                                 team_fleet):
    client.force_login(users["member"])
    assert "Open pull request" in preview(client, team_fleet, team_fleet.checkout_app, "1.7.0").content.decode()
    client.post(reverse("pr-open"), {"kind": "upgrade", "item": team_fleet.item(team_fleet.checkout_app, "1.7.0")})
    row = PullRequest.objects.get()
    assert row.services == ["checkout"] and row.opened_by == users["member"]
    assert len(team_fleet.github.model.pulls) == 1
    audit = AuditLog.objects.get(action="pull_request.opened")
    assert (audit.actor_name, audit.team) == ("member", "shop")


@scoped
def test_a_service_no_team_owns_is_refused_to_members_and_says_an_admin_can_set_one(eager_celery, client, users,
                                                                                  team_fleet, catalog):
    catalog.checkout.team = ""
    catalog.checkout.save()
    client.force_login(users["member"])
    html = preview(client, team_fleet, team_fleet.checkout_app, "1.7.0").content.decode()
    assert "No team owns checkout; you act for shop. An admin can set its owning team on the service." in html
    assert "Open pull request" not in html


@scoped
def test_an_admin_acts_on_every_teams_service(eager_celery, client, users, team_fleet):
    client.force_login(users["admin"])  # on no team at all
    assert "Open pull request" in preview(client, team_fleet, team_fleet.checkout_app, "1.7.0").content.decode()
    client.post(reverse("pr-open"), {"kind": "upgrade", "item": team_fleet.item(team_fleet.checkout_app, "1.7.0")})
    assert PullRequest.objects.get().opened_by == users["admin"]


def test_with_the_setting_off_a_member_acts_on_any_service_as_before(client, users, team_fleet, catalog):
    catalog.checkout.team = "someone-else"
    catalog.checkout.save()
    client.force_login(users["member"])
    client.post(reverse("pr-open"), {"kind": "upgrade", "item": team_fleet.item(team_fleet.checkout_app, "1.7.0")})
    assert PullRequest.objects.get().opened_by == users["member"]


@scoped
def test_undoing_a_hold_is_refused_on_another_teams_service(client, users, team_fleet, catalog):
    hold = {"version": "3.1.0", "environment": "prod", "by": "ana", "why": "rolled back to 3.0.0",
            "source": "rollback PR #4"}
    ServicePolicy.objects.create(service=catalog.payments, put_off=[hold])
    client.force_login(users["member"])
    response = client.post(reverse("updates-release-hold"),
                           {"service": "payments", "version": "3.1.0", "environment": "prod"})
    assert [str(m) for m in get_messages(response.wsgi_request)] == [f"Not undone: {REFUSAL}"]
    assert ServicePolicy.objects.get(service=catalog.payments).put_off == [hold]
    assert not AuditLog.objects.exists()


@scoped
def test_put_off_and_mute_are_refused_on_another_teams_service(client, users, team_fleet, catalog):
    client.force_login(users["member"])
    response = client.post(reverse("updates-put-off"),
                           {"service": "payments", "version": "3.1.0", "until": "2099-01-01"})
    assert [str(m) for m in get_messages(response.wsgi_request)] == [f"Not put off: {REFUSAL}"]
    assert not ServicePolicy.objects.filter(service=catalog.payments).exclude(put_off=[]).exists()
    response = client.post(reverse("finding-mute"), {"app": team_fleet.payments_app.pk, "rule": "self-heal-off",
                                                     "reason": "known"})
    assert [str(m) for m in get_messages(response.wsgi_request)][-1] == f"Not changed: {REFUSAL}"
    assert not FindingMute.objects.exists()
    assert not AuditLog.objects.exists()


@scoped
def test_the_profile_page_shows_the_teams_and_that_scope_is_on(client, users, team_fleet):
    client.force_login(users["member"])
    html = client.get(reverse("profile")).content.decode()
    assert "Teams you act for: shop." in html and "Team scope is on" in html
