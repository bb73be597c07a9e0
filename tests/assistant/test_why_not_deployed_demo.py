"""`why_not_deployed` on the demo fleet (examples/, `load_demo`), one story each: the payments
change freeze (a deny window, and until when), the manual-sync search app, the suspended
notifications HelmRelease, and a merged pull request whose version is not running yet.

The demo is loaded once for the module (it polls eight clusters) and removed after; the tool
is called as the MCP server calls it (portal.api.mcp.tools, over the API's own serializers)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from portal.api.mcp import tools
from portal.api.mcp.api_pages import Caller
from portal.delivery.models import PullRequest
from portal.kernel.accounts import tokens
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment, Service

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        call_command("load_demo", stdout=StringIO())
        user = get_user_model().objects.create_user("demo-viewer", password="x")
        grant(user, Role.VIEWER)
        _, plain = tokens.issue(user, "assistant")
    yield Caller(token=plain, host="testserver")
    with django_db_blocker.unblock():
        get_user_model().objects.filter(username="demo-viewer").delete()
        Cluster.objects.all().delete()
        ArgoCDInstance.objects.all().delete()
        Service.objects.all().delete()
        Environment.objects.all().delete()


def explain(caller: Caller, **query: str) -> dict[str, dict]:
    answer = tools.why_not_deployed(caller, **query)
    assert answer["summary"]
    return {app["app"]: app for app in answer["apps"]}


def test_the_payments_change_freeze_is_the_first_reason_with_its_end(demo):
    apps = explain(demo, service="payments", environment="prod")
    held = apps["prod-eu-1/argocd/payments-prod"]
    assert [r["reason"] for r in held["reasons"]][:2] == ["sync_window", "not_synced_yet"]
    window = held["reasons"][0]["detail"]
    # examples/clusters/prod-eu-1: project payments, deny '0 0 * * *' for 24h, "Change freeze: …"; always active,
    # so Argo CD will not sync it until the window is changed: there is no end to name.
    assert window.startswith("A deny sync window 'Change freeze: Black Friday / Cyber Monday peak")
    assert "(0 0 * * * for 24h" in window and "no end in sight" in window
    assert held["verdict"] == window
    # prod-us-1 (Flux, no windows) already runs 2.4.1: nothing holds it.
    assert apps["prod-us-1/flux-system/payments"]["reasons"] == []


def test_the_search_app_waits_for_a_manual_sync(demo):
    apps = explain(demo, service="search", environment="prod")
    held = apps["prod-eu-1/argocd/search-prod"]
    assert [r["reason"] for r in held["reasons"]] == ["manual_sync", "not_synced_yet"]
    assert held["running"] == {"search": ["1.6.0"]}
    assert "deploys only when someone syncs it" in held["verdict"]


def test_the_suspended_helmrelease_is_named(demo):
    apps = explain(demo, app="prod-us-1/notifications/notifications")
    [held] = apps.values()
    assert held["kind"] == "HelmRelease"
    assert [r["reason"] for r in held["reasons"]] == ["suspended"]
    assert "spec.suspend: true" in held["verdict"]


def test_a_merged_pull_request_not_running_yet(demo):
    # checkout runs 3.3.1 in prod (Synced, Healthy); a merged upgrade to 3.4.0 has not arrived.
    now = timezone.now()
    PullRequest.objects.create(kind="upgrade", services=["checkout"], environment="prod",
                               repository="https://github.com/acme/gitops", forge_kind="github", number=41,
                               url="https://github.com/acme/gitops/pull/41", title="checkout 3.4.0 in prod",
                               branch="portal/checkout-3.4.0", base_branch="main", state="merged",
                               from_version="3.3.1", to_version="3.4.0", opened_at=now, merged_at=now)
    apps = explain(demo, service="checkout", environment="prod")
    assert apps, "the demo deploys checkout to prod"
    for app in apps.values():
        assert app["running"]["checkout"] != ["3.4.0"]
        merged = [r for r in app["reasons"] if r["reason"] == "merged_not_deployed"]
        assert len(merged) == 1, app
        assert "https://github.com/acme/gitops/pull/41" in merged[0]["detail"] and "3.4.0" in merged[0]["detail"]
    # Where nothing else holds it (synced, healthy, no window), the merge is the whole answer.
    plain = apps["prod-eu-1/team-checkout/checkout-prod"]
    assert [r["reason"] for r in plain["reasons"]] == ["merged_not_deployed"]
    assert plain["verdict"].startswith("checkout 3.4.0 in prod (https://github.com/acme/gitops/pull/41) merged")


def test_the_degraded_payments_staging_names_its_rollback_from_argo_cds_history(demo, settings, tmp_path):
    """payments-staging turned Degraded ten minutes after its Argo CD history shows 2.5.0's commit
    deployed, a week before the portal's first poll: the tool names the change and the rollback
    offer the service page shows, once the worker has read what Git pinned at the commit before."""
    from forges.demo import build_demo_repo
    from portal.delivery.deployments import announce_rollbacks

    settings.DEMO_MODE = True
    settings.VAR_DIR = tmp_path
    build_demo_repo(tmp_path / "demo-gitops.git")
    announce_rollbacks(timezone.now())
    apps = explain(demo, service="payments", environment="staging")
    [degraded] = [r["detail"] for r in apps["staging-eu-1/argocd/payments-staging"]["reasons"]
                  if r["reason"] == "degraded"]
    assert "(after payments 2.4.0 -> 2.5.0 at 2026-11-29T13:12:36+00:00)" in degraded
    assert "rollback PR offered -> 2.4.0: http://testserver/pr/preview?kind=rollback&mode=grouped&item=" in degraded


def test_the_next_deploy_of_payments_to_prod_waits_for_the_change_freeze_window(demo):
    answer = tools.why_not_deployed(demo, service="payments", environment="prod")
    [coming] = answer["next_deploy"]
    # The deny window reopens as it closes (0 0 * * * for 24h): no end to name, as the badge says.
    assert coming["environment"] == "prod" and coming["at"] is None and not coming["now"]
    assert coming["reason"].startswith(
        "payments-prod on prod-eu-1: blocked by deny window 'Change freeze: Black Friday")
    assert "Next deploy to prod: no end in sight" in answer["summary"]
    assert ": sync_window. Next deploy to prod:" in answer["summary"]  # two sentences, not one run-on
