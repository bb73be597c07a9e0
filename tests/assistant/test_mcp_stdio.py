"""`manage.py mcp --stdio`: the SDK's client launches the command and talks to it over
stdin/stdout, the token coming from an environment variable; a missing, bad or role-less
token stops the command before it serves anything."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from mcp import Client, StdioServerParameters

from portal.kernel.accounts import tokens
from tests.dburl import database_url
from tests.fixtures.browser import in_own_thread
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db(transaction=True)  # the command's own process reads the committed rows

MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


def test_a_local_assistant_reads_the_fleet_over_stdio(catalog, users):
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, version="2.4.0", sync="OutOfSync")
    _, plain = tokens.issue(users["viewer"], "local assistant")
    env = {**os.environ, "DATABASE_URL": database_url(), "PORTAL_MCP_TOKEN": plain}
    params = StdioServerParameters(command=sys.executable, args=[str(MANAGE), "mcp", "--stdio"], env=env,
                                   cwd=str(MANAGE.parent))

    async def main():
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("gitops", {"sync": "OutOfSync"})
            return names, result

    names, result = in_own_thread(main)
    assert names == {"gitops", "pull_requests", "why_not_deployed", "service", "preview_pull_request", "findings",
                     "security"}
    assert not result.is_error, result.content
    answer = result.structured_content.get("result", result.structured_content)
    assert [app["app"] for app in answer["apps"]] == ["prod-eu-1/argocd/payments-prod"]


def test_the_command_refuses_without_a_good_token(users, monkeypatch):
    monkeypatch.delenv("PORTAL_MCP_TOKEN", raising=False)
    with pytest.raises(CommandError, match="No token: set PORTAL_MCP_TOKEN"):
        call_command("mcp", "--stdio")
    monkeypatch.setenv("PORTAL_MCP_TOKEN", "gpat_not-a-real-one")
    with pytest.raises(CommandError, match="invalid or revoked"):
        call_command("mcp", "--stdio")
    nobody = get_user_model().objects.create_user("nobody", password="x")
    _, theirs = tokens.issue(nobody, "no role")
    monkeypatch.setenv("MY_TOKEN", theirs)
    with pytest.raises(CommandError, match="lacks the viewer role"):
        call_command("mcp", "--stdio", "--token-env", "MY_TOKEN")
    with pytest.raises(CommandError, match="Pass --stdio"):
        call_command("mcp")
