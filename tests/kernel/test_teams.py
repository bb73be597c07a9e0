"""Teams a user acts for (`team:` groups), their refresh from the identity provider's groups at
sign-in, the one refusal rule and its words, the audit row's team, and the mapping setting."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import override_settings

from portal.kernel.accounts.teams import refusal, refused, sync_teams, team_of, teams_of
from portal.kernel.audit.models import record
from portal.settingvalues import team_groups
from tests.fixtures.teams import join

pytestmark = pytest.mark.django_db

MAPPING = {"payments-devs": "payments", "sre": "platform", "shop-devs": "shop"}


@override_settings(PORTAL_OIDC_TEAM_GROUPS=MAPPING)
def test_sign_in_adds_and_removes_teams_from_the_providers_groups(users):
    member = users["member"]
    join(member, "old-team")  # put there before, e.g. by the last sign-in
    sync_teams(member, ["payments-devs", "sre", "everyone"])
    assert teams_of(member) == {"payments", "platform"}
    sync_teams(member, ["sre"])
    assert teams_of(member) == {"platform"}
    assert set(member.groups.values_list("name", flat=True)) == {"member", "team:platform"}  # roles kept
    sync_teams(member, [])
    assert teams_of(member) == frozenset()


@override_settings(PORTAL_OIDC_TEAM_GROUPS=MAPPING)
def test_a_group_named_like_a_team_is_that_team_only_when_listed(users, catalog):
    # checkout's team is "shop": the provider group "shop" is not listed, "shop-devs" is.
    sync_teams(users["member"], ["shop"])
    assert teams_of(users["member"]) == frozenset()
    sync_teams(users["member"], ["shop-devs"])
    assert teams_of(users["member"]) == {"shop"}
    assert Group.objects.filter(name="team:shop").count() == 1


@override_settings(PORTAL_TEAM_SCOPED_ACTIONS=True)
def test_the_refusal_names_the_owning_team_and_the_users_teams(users, catalog):
    catalog.payments.team = "payments"
    catalog.payments.save()
    member = users["member"]
    join(member, "web")
    join(member, "platform")
    assert refusal(member, ["checkout"]) == ("checkout is owned by team shop; you act for platform, web. "
                                             "Ask a shop member or an admin.")
    found = refused(member, [catalog.checkout, "payments"])
    assert (found.service, found.team) == ("checkout", "shop")
    assert found.message.endswith(" Also outside your teams: payments.")
    join(member, "shop")
    assert refusal(member, ["checkout"]) is None
    assert refusal(users["admin"], ["checkout", "payments", "unknown"]) is None
    catalog.checkout.team = ""
    catalog.checkout.save()
    assert refusal(member, ["checkout"]) == ("No team owns checkout; you act for platform, shop, web. An admin can "
                                             "set its owning team on the service.")


def test_scope_off_refuses_nobody(users, catalog):
    assert refusal(users["member"], ["checkout", "payments"]) is None


def test_an_audit_row_names_the_services_team_else_the_actors(users, catalog):
    join(users["member"], "web")
    assert record(users["member"], "policy.put_off", "checkout", team=team_of(["checkout"])).team == "shop"
    assert record(users["member"], "cluster.poll", "prod-eu-1").team == "web"
    row = record(None, "pull_request.opened", "x")
    assert (row.actor_name, row.team) == ("system", "")


def test_the_mapping_setting_reads_pairs_and_refuses_a_typo():
    assert team_groups("payments-devs=payments, sre=platform,") == {"payments-devs": "payments", "sre": "platform"}
    assert team_groups("") == {}
    with pytest.raises(ValueError, match="'sre' is not idp-group=team"):
        team_groups("payments-devs=payments,sre")
