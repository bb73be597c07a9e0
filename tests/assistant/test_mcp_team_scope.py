"""MCP stays read-only and says who may act: `preview_pull_request` answers the diff a change
would make with `may_open` and the refusal naming the owning team for the token's user, and the
`service` tool marks each offer so. Over real HTTP with the SDK's client for the refusal; the
tool functions directly (as portal.api.mcp.server runs them) for the rest."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.utils import timezone

from portal.api.mcp import tools
from portal.api.mcp.api_pages import Caller
from portal.delivery.models import PullRequest
from portal.kernel.accounts import tokens
from portal.releases.models import Release
from tests.assistant.test_mcp_http import mcp_session, structured

REFUSAL = "payments is owned by team payments; you act for shop. Ask a payments member or an admin."
scoped = override_settings(PORTAL_TEAM_SCOPED_ACTIONS=True)


def caller(user) -> Caller:
    return Caller(tokens.issue(user, "assistant")[1], host="testserver")


@pytest.mark.django_db(transaction=True)
@scoped
def test_over_http_another_teams_change_may_not_be_opened_and_says_whose_it_is(live_server, users, team_fleet):
    _, plain = tokens.issue(users["member"], "assistant")
    item = team_fleet.item(team_fleet.payments_app, "3.1.0")

    async def work(client):
        return structured(await client.call_tool("preview_pull_request", {"items": [item]}))

    answer = mcp_session(f"{live_server.url}/mcp", plain, work)
    assert answer["may_open"] is False and answer["refusal"] == REFUSAL
    [pull] = answer["pull_requests"]
    assert pull["can_open"] and '-    newTag: "3.0.0"' in pull["diff"] and '+    newTag: "3.1.0"' in pull["diff"]
    assert not PullRequest.objects.exists() and team_fleet.github.model.pulls == []


@pytest.mark.django_db
@scoped
def test_the_members_own_team_may_open_and_an_admin_any(users, team_fleet):
    own = tools.preview_pull_request(caller(users["member"]), "upgrade", [team_fleet.item(team_fleet.checkout_app,
                                                                                          "1.7.0")])
    assert own["may_open"] is True and own["refusal"] is None
    assert own["pull_requests"][0]["branch"] == "portal/checkout-1.7.0-prod"
    admin = tools.preview_pull_request(caller(users["admin"]), "upgrade", [team_fleet.item(team_fleet.payments_app,
                                                                                           "3.1.0")])
    assert admin["may_open"] is True
    assert not PullRequest.objects.exists()
    assert {method for method, _path, _status in team_fleet.github.server.log} == {"GET"}  # nothing written


@pytest.mark.django_db
def test_with_scope_off_the_member_may_open_payments_and_a_viewer_never(users, team_fleet):
    item = [team_fleet.item(team_fleet.payments_app, "3.1.0")]
    assert tools.preview_pull_request(caller(users["member"]), "upgrade", item)["may_open"] is True
    viewer = tools.preview_pull_request(caller(users["viewer"]), "upgrade", item)
    assert viewer["may_open"] is False and viewer["refusal"] == "Opening a pull request needs the member role."


@pytest.mark.django_db
@scoped
def test_the_service_tool_marks_each_offer_for_the_caller(users, team_fleet, catalog):
    Release.objects.create(service=catalog.payments, tag="3.1.0", version="3.1.0", seen_at=timezone.now())
    Release.objects.create(service=catalog.checkout, tag="1.7.0", version="1.7.0", seen_at=timezone.now())
    member = caller(users["member"])
    payments = tools.service(member, "payments")["offers"]
    checkout = tools.service(member, "checkout")["offers"]
    assert payments and all(o["may_open"] is False and o["refusal"] == REFUSAL for o in payments)
    assert checkout and all(o["may_open"] is True and o["refusal"] is None for o in checkout)
