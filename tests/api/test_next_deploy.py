""""Next time <service> can deploy to <env>": the services API's `next_deploy` and the MCP
`why_not_deployed` tool, both over portal.delivery.deploy_holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from gitops.models import AppProject
from portal.api.mcp import tools
from portal.api.mcp.api_pages import Caller
from portal.delivery.models import ChangeFreeze
from portal.kernel.accounts import tokens
from tests.fixtures.seed import seed_app

pytestmark = pytest.mark.django_db

# A 24h deny window that starts every midnight is open at every instant but midnight's own:
# Argo CD never syncs under it, and the badge names no end ("no end in sight").
ALWAYS_DENY = {"kind": "deny", "schedule": "0 0 * * *", "duration": "24h", "applications": ["payments-*"],
               "description": "peak season"}


@pytest.fixture
def fleet(catalog):
    AppProject.objects.create(cluster=catalog.prod_eu, namespace="argocd", name="shop", sync_windows=[ALWAYS_DENY])
    seed_app(catalog.prod_eu, "checkout-prod", service=catalog.checkout, project="shop")
    seed_app(catalog.prod_eu, "payments-prod", service=catalog.payments, project="shop")
    seed_app(catalog.staging_cluster, "checkout-staging", service=catalog.checkout)
    ends = timezone.now().replace(microsecond=0) + timedelta(hours=5)
    freeze = ChangeFreeze.objects.create(starts_at=ends - timedelta(hours=8), ends_at=ends, reason="quarter close")
    freeze.environments.add(catalog.prod)
    return catalog, ends


@pytest.fixture
def token(users):
    return tokens.issue(users["viewer"], "t")[1]


def test_the_services_api_says_when_each_environment_can_next_take_a_deploy(client, token, fleet):
    _, freeze_end = fleet
    body = client.get("/api/v1/services", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    envs = {s["name"]: {e["environment"]: e["next_deploy"] for e in s["environments"]} for s in body["results"]}
    checkout = envs["checkout"]
    assert checkout["staging"] == {"at": None, "now": True, "reason": "nothing holds it", "holds": [], "caveats": []}
    assert checkout["prod"]["at"] == freeze_end.isoformat() and not checkout["prod"]["now"]
    assert checkout["prod"]["holds"] == [f"change freeze 'quarter close' until {freeze_end:%Y-%m-%d %H:%M} UTC "
                                         "(upgrades and promotions wait; rollbacks do not)"]
    payments = envs["payments"]["prod"]
    assert payments["at"] is None
    assert "blocked by deny window 'peak season' with no end in sight" in payments["reason"]


def test_why_not_deployed_answers_the_next_deploy(token, fleet):
    _, freeze_end = fleet
    answer = tools.why_not_deployed(Caller(token=token, host="testserver"), service="checkout", environment="prod")
    [coming] = answer["next_deploy"]
    assert coming["environment"] == "prod" and coming["at"] == freeze_end.isoformat()
    assert f"Next deploy to prod: {freeze_end.isoformat()} (change freeze 'quarter close'" in answer["summary"]
    everywhere = tools.why_not_deployed(Caller(token=token, host="testserver"), service="checkout")
    assert [d["environment"] for d in everywhere["next_deploy"]] == ["staging", "prod"]
    assert "Next deploy to staging: now." in everywhere["summary"]
