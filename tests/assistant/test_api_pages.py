"""The tools read the REST API's answers directly (portal.api.mcp.api_pages), refused as the API
refuses: every read checks the token again, the viewer role and the token's rate limit, and a bad
value or cursor is the API's 400 with its message."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache

from portal.api.mcp import api_pages, tools
from portal.api.mcp.api_pages import Caller, ReadError
from portal.kernel.accounts import tokens
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db


def test_a_revoked_token_and_a_missing_role_are_refused_at_the_next_read(users, catalog):
    token, plain = tokens.issue(users["viewer"], "assistant")
    caller = Caller(plain, host="testserver")
    assert tools.gitops(caller, {})["apps"] == []
    tokens.revoke(users["viewer"], token.pk)
    with pytest.raises(ReadError, match="Invalid or revoked API token.") as refused:
        tools.gitops(caller, {})
    assert refused.value.status == 401
    _, roleless = tokens.issue(get_user_model().objects.create_user("roleless", password="x"), "assistant")
    with pytest.raises(ReadError, match="viewer role") as refused:
        tools.pull_requests(Caller(roleless), {})
    assert refused.value.status == 403


def test_reads_count_against_the_tokens_rate_limit(users, catalog, settings):
    _, plain = tokens.issue(users["viewer"], "assistant")
    settings.PORTAL_API_RATE = "2/minute"
    cache.clear()
    api_pages.security(Caller(plain))
    api_pages.security(Caller(plain))
    with pytest.raises(ReadError, match="throttled") as refused:
        api_pages.security(Caller(plain))
    assert refused.value.status == 429
    cache.clear()


def test_a_bad_cursor_and_a_blank_filter_are_the_apis_400(users, catalog):
    _, plain = tokens.issue(users["viewer"], "assistant")
    with pytest.raises(ReadError, match="not one this API gave out") as refused:
        tools.gitops(Caller(plain), {}, cursor="nonsense")
    assert refused.value.status == 400
    with pytest.raises(ReadError, match="Invalid value for: q") as refused:
        tools.gitops(Caller(plain), {"q": ""})
    assert refused.value.status == 400


def test_pages_follow_the_apis_cursor_and_links_are_the_callers(users, catalog):
    for name in ("a-prod", "b-prod", "c-prod"):
        seed_app(catalog.prod_eu, name, service=catalog.payments, version="2.4.0")
    _, plain = tokens.issue(users["viewer"], "assistant")
    caller = Caller(plain, scheme="http", host="localhost:8000")
    seen, cursor = [], None
    while True:
        page = tools.gitops(caller, {"environment": "prod"}, cursor=cursor, page_size=2)
        seen += [app["app"] for app in page["apps"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == [f"prod-eu-1/argocd/{n}" for n in ("a-prod", "b-prod", "c-prod")]
    first = tools.gitops(caller, {}, page_size=1)["apps"][0]
    assert first["api_url"].startswith("http://localhost:8000/api/v1/gitops/")


def test_the_pull_requests_tool_gives_the_rendered_diff(users, catalog):
    from django.utils import timezone

    from portal.delivery.models import PullRequest, RenderedDiff
    from portal.delivery.rendered_diff import APP_DIFFS, NO_RENDERER, AppDiff

    rendered, plain_pull = (
        PullRequest.objects.create(kind="upgrade", services=["checkout"], environment="prod",
                                   repository="https://github.com/acme/gitops", forge_kind="github", number=n,
                                   title=f"PR {n}", branch=f"portal/{n}", base_branch="main", state="open")
        for n in (1, 2)
    )
    diff = AppDiff(app="flux-system/checkout", cluster="prod-us-1", renderer="", error=NO_RENDERER)
    RenderedDiff.objects.create(pull_request=rendered, head="9f1c2ab34d5e", computed_at=timezone.now(),
                                apps=APP_DIFFS.dump_python([diff], mode="json"))
    _, plain = tokens.issue(users["viewer"], "assistant")

    pulls = {p["number"]: p for p in tools.pull_requests(Caller(plain), {})["pull_requests"]}

    assert pulls[plain_pull.number]["rendered_diff"] is None
    [app] = pulls[rendered.number]["rendered_diff"]["apps"]
    assert (app["app"], app["renderer"], app["error"]) == ("flux-system/checkout", "", NO_RENDERER)
