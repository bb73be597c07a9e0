"""The MCP endpoint over real HTTP: the SDK's own client against a live portal. It lists the
tools, calls each with filters and gets what the REST API answers; a viewer token works, a
missing or revoked one is refused, and no tool can change anything."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx2
import pytest
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gitops.models import Finding, GitOpsApp
from portal.delivery.models import PullRequest
from portal.kernel.accounts import tokens
from portal.releases.models import Release
from tests.fixtures.browser import in_own_thread
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {"gitops", "pull_requests", "why_not_deployed", "service", "preview_pull_request", "findings", "security"}


def mcp_session(url: str, token: str | None, work: Any) -> Any:
    """Run `work(client)` in an MCP session with the SDK's client over HTTP."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main() -> Any:
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await work(client)

    return in_own_thread(main)


def structured(result: Any) -> dict:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


@pytest.fixture
def fleet(catalog):
    now = timezone.now()
    blocked = seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.4.0", sync="OutOfSync",
             sync_blocked=True, sync_blocked_until=now + timedelta(hours=5), project="payments",
             sync_window={"kind": "deny", "description": "Change freeze", "schedule": "0 0 * * *",
                          "duration": "24h", "time_zone": "UTC"})
    seed_app(catalog.prod_us, "payments-prod-us", service=catalog.payments, version="2.4.1")
    degraded = seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout, version="1.4.2",
                        health="Degraded", since=timedelta(hours=1))
    for app, rule, message in ((blocked, "self-heal-off", "automated sync without selfHeal"),
                               (blocked, "default-project", "Application in the default AppProject"),
                               (degraded, "self-heal-off", "automated sync without selfHeal")):
        Finding.objects.create(app=app, rule=rule, message=message)
    for tag in ("2.4.0", "2.4.1"):
        Release.objects.create(service=catalog.payments, tag=tag, version=tag, seen_at=now)
    PullRequest.objects.create(kind="upgrade", services=["payments"], environment="prod",
                               repository="https://github.com/acme/gitops", forge_kind="github", number=12,
                               url="https://github.com/acme/gitops/pull/12", title="payments 2.4.1",
                               branch="portal/payments-2.4.1", base_branch="main", state="merged",
                               from_version="2.4.0", to_version="2.4.1", opened_at=now - timedelta(hours=3),
                               merged_at=now - timedelta(hours=2))
    return catalog


@pytest.fixture
def viewer_token(users):
    return tokens.issue(users["viewer"], "assistant")


def test_tools_are_listed_read_only_with_schemas(live_server, fleet, viewer_token):
    _, plain = viewer_token

    async def work(client):
        return (await client.list_tools()).tools

    listed = mcp_session(f"{live_server.url}/mcp", plain, work)
    assert {tool.name for tool in listed} == TOOLS
    for tool in listed:
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
        assert len(tool.description) > 80
    gitops = next(t for t in listed if t.name == "gitops")
    properties = gitops.input_schema["properties"]
    assert {"cluster", "environment", "service", "sync", "health", "status", "attention", "cursor",
            "page_size"} <= set(properties)
    # Every schema says what the server enforces: no argument beyond those listed.
    assert all(tool.input_schema["additionalProperties"] is False for tool in listed)


def test_unknown_arguments_are_refused_naming_the_allowed_ones(live_server, fleet, viewer_token):
    """`gitops({"needs_attention": true})` used to answer the unfiltered list, which read like a real
    answer; now each tool refuses an argument its schema does not declare, as a tool error."""
    _, plain = viewer_token

    async def work(client):
        return {
            "gitops": await client.call_tool("gitops", {"needs_attention": True}),
            "findings": await client.call_tool("findings", {"rule": "self-heal-off", "app": "x", "bogus": 1}),
            "security": await client.call_tool("security", {"service": "payments"}),
            "right": await client.call_tool("gitops", {"attention": True}),
        }

    answers = mcp_session(f"{live_server.url}/mcp", plain, work)
    refused = answers["gitops"]
    assert refused.is_error is True
    assert refused.content[0].text == (
        "gitops takes no argument 'needs_attention'; its arguments are: attention, cluster, cursor, environment, "
        "health, page_size, project, q, service, status, sync, tool")
    assert answers["findings"].is_error is True
    assert "findings takes no argument 'app', 'bogus'; its arguments are: cluster, cursor, environment, " \
           "page_size, rule" in answers["findings"].content[0].text
    assert answers["security"].is_error is True
    assert "its arguments are: cursor, environment, exploited, page_size, severity, team" in \
           answers["security"].content[0].text
    # The argument it meant filters, as the API's `attention` does.
    api = httpx2.get(f"{live_server.url}/api/v1/gitops", params={"attention": "true"},
                     headers={"Authorization": f"Bearer {plain}"}).json()["results"]
    meant = [a["app"] for a in structured(answers["right"])["apps"]]
    assert meant == [f"{a['cluster']}/{a['namespace']}/{a['name']}" for a in api]
    assert "staging-eu-1/argocd/checkout-staging" in meant and len(meant) < 3


def test_findings_and_security_tools_answer_what_the_api_serves(live_server, fleet, viewer_token):
    _, plain = viewer_token

    async def work(client):
        return {
            "all": structured(await client.call_tool("findings", {"page_size": 2})),
            "rule": structured(await client.call_tool("findings", {"rule": "self-heal-off", "environment": "prod"})),
            "bad": await client.call_tool("findings", {"rule": "no-such-rule"}),
            "security": structured(await client.call_tool("security", {"environment": "prod"})),
        }

    answers = mcp_session(f"{live_server.url}/mcp", plain, work)

    def rest(path: str, params: dict) -> dict:
        response = httpx2.get(f"{live_server.url}{path}", params=params, headers={"Authorization": f"Bearer {plain}"})
        assert response.status_code == 200, response.text
        return response.json()

    api = rest("/api/v1/findings", {})
    first = answers["all"]
    assert first["counts"] == api["counts"] == {"default-project": 1, "self-heal-off": 2}
    assert [(f["rule"], f["app"]) for f in first["findings"]] == [
        (r["rule"], f"{r['cluster']}/{r['namespace']}/{r['name']}") for r in api["results"][:2]]
    assert first["findings"][0]["fix"] == api["results"][0]["fix"] and first["findings"][0]["fix"]
    assert first["findings"][0]["severity"] == api["results"][0]["severity"] == "medium"
    assert first["findings"][0]["example"] == api["results"][0]["example"]
    assert "project:" in api["results"][0]["example"]
    assert first["next_cursor"] == "2" and first["summary"].startswith("3 open findings")

    async def rest_of(client):
        return structured(await client.call_tool("findings", {"page_size": 2, "cursor": first["next_cursor"]}))

    rest_page = mcp_session(f"{live_server.url}/mcp", plain, rest_of)
    assert [f["app"] for f in rest_page["findings"]] == [
        f"{r['cluster']}/{r['namespace']}/{r['name']}" for r in api["results"][2:]]
    assert rest_page["next_cursor"] is None

    [prod] = answers["rule"]["findings"]
    assert (prod["rule"], prod["app"]) == ("self-heal-off", "prod-eu-1/argocd/payments-prod")
    assert prod["api_url"] == rest("/api/v1/findings", {"rule": "self-heal-off", "environment": "prod"})[
        "results"][0]["app_url"]
    assert answers["bad"].is_error is True and "no-such-rule" in answers["bad"].content[0].text

    security = answers["security"]
    api_security = rest("/api/v1/security", {"environment": "prod"})
    assert security["exposures"] == api_security["exposures"] == []  # nothing vulnerable in this fleet
    assert security["not_checked"] == api_security["not_checked"]
    assert security["osv"] == api_security["osv"] and security["next_cursor"] is None


def test_each_tool_answers_what_the_api_serves(live_server, fleet, viewer_token):
    _, plain = viewer_token

    async def work(client):
        return {
            "gitops": structured(await client.call_tool("gitops", {"environment": "prod", "page_size": 1})),
            "blocked": structured(await client.call_tool("gitops", {"status": "blocked"})),
            "pulls": structured(await client.call_tool("pull_requests", {"state": "merged"})),
            "service": structured(await client.call_tool("service", {"name": "payments"})),
            "why": structured(await client.call_tool("why_not_deployed", {"service": "payments",
                                                                            "environment": "prod"})),
        }

    answers = mcp_session(f"{live_server.url}/mcp", plain, work)

    def rest(path: str, params: dict) -> dict:  # the REST API, over the same live server
        response = httpx2.get(f"{live_server.url}{path}", params=params, headers={"Authorization": f"Bearer {plain}"})
        assert response.status_code == 200, response.text
        return response.json()

    api = rest("/api/v1/gitops", {"environment": "prod", "page_size": 1})
    [first] = answers["gitops"]["apps"]
    [expected] = api["results"]
    assert first["app"] == f"{expected['cluster']}/{expected['namespace']}/{expected['name']}"
    assert (first["sync"], first["health"], first["sync_since"]) == (
        expected["sync_status"], expected["health_status"], expected["sync_since"])
    assert answers["gitops"]["next_cursor"] is not None  # two prod apps, a page of one

    [blocked] = answers["blocked"]["apps"]
    assert blocked["app"] == "prod-eu-1/argocd/payments-prod" and blocked["sync_blocked"] is True
    assert blocked["blocked_until"] == rest("/api/v1/gitops", {"status": "blocked"})["results"][0][
        "sync_blocked_until"]
    assert blocked["sync_window"]["description"] == "Change freeze"

    [pr] = answers["pulls"]["pull_requests"]
    assert pr["url"] == "https://github.com/acme/gitops/pull/12" and pr["merged_not_deployed"] is True
    assert pr["running_in_production"] is False

    service = answers["service"]
    api_service = rest("/api/v1/services", {"name": "payments"})["results"][0]
    assert service["environments"] == api_service["environments"]
    # The API's offers, each marked for the caller: a viewer may open none.
    refused = {"may_open": False, "refusal": "Opening a pull request needs the member role."}
    assert service["offers"] == [{**offer, **refused} for offer in api_service["offers"][:10]]
    assert service["offers_total"] == 1
    assert service["offers"][0]["preview_url"].startswith(f"{live_server.url}/pr/preview?kind=upgrade")

    why = {a["app"]: a for a in answers["why"]["apps"]}
    held = why["prod-eu-1/argocd/payments-prod"]["reasons"]
    assert [r["reason"] for r in held] == ["sync_window", "not_synced_yet", "merged_not_deployed"]


def test_missing_bad_and_revoked_tokens_and_roles_are_refused(live_server, fleet, users, viewer_token):
    url = f"{live_server.url}/mcp"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert httpx2.post(url, json=init, headers=headers).status_code == 401
    assert httpx2.post(url, json=init, headers={**headers, "Authorization": "Bearer gpat_nope"}).status_code == 401
    token, plain = viewer_token
    ok = httpx2.post(url, json=init, headers={**headers, "Authorization": f"Bearer {plain}"})
    assert ok.status_code == 200 and ok.json()["result"]["serverInfo"]["name"] == "gitops-portal"
    tokens.revoke(users["viewer"], token.pk)
    assert httpx2.post(url, json=init, headers={**headers, "Authorization": f"Bearer {plain}"}).status_code == 401
    # Someone without the viewer role (no group at all).
    from django.contrib.auth import get_user_model

    nobody = get_user_model().objects.create_user("nobody", password="x")
    _, theirs = tokens.issue(nobody, "no role")
    assert httpx2.post(url, json=init, headers={**headers, "Authorization": f"Bearer {theirs}"}).status_code == 403

    async def work(client):
        return await client.list_tools()

    with pytest.raises(Exception):  # the SDK's client gives up on the 401
        mcp_session(url, None, work)


def test_no_tool_writes_anything(live_server, fleet, viewer_token):
    """Every tool, called with every filter it takes, leaves the store as it was."""
    _, plain = viewer_token
    before = list(GitOpsApp.objects.order_by("pk").values())
    pulls_before = list(PullRequest.objects.order_by("pk").values())

    async def work(client):
        calls = [
            ("gitops", {"cluster": "prod-eu-1", "tool": "argo", "sync": "OutOfSync", "health": "Healthy",
                        "q": "pay", "attention": True, "project": "payments"}),
            ("pull_requests", {"state": "merged", "kind": "upgrade", "environment": "prod"}),
            ("why_not_deployed", {"app": "prod-eu-1/argocd/payments-prod"}),
            ("service", {"name": "payments", "offers": 5}),
            ("findings", {"rule": "self-heal-off", "environment": "prod", "cluster": "prod-eu-1"}),
            ("security", {"severity": "high", "exploited": True, "team": "payments", "environment": "prod"}),
        ]
        return [await client.call_tool(name, args) for name, args in calls]

    results = mcp_session(f"{live_server.url}/mcp", plain, work)
    assert all(not r.is_error for r in results), [r.content for r in results if r.is_error]
    assert structured(results[0])["apps"][0]["app"] == "prod-eu-1/argocd/payments-prod"
    assert list(GitOpsApp.objects.order_by("pk").values()) == before
    assert list(PullRequest.objects.order_by("pk").values()) == pulls_before
    # …and the endpoint has no way in but POSTed JSON-RPC reads.
    assert httpx2.get(f"{live_server.url}/mcp", headers={"Authorization": f"Bearer {plain}"}).status_code == 405
