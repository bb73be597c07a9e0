"""What the custom-resource health rules say, everywhere the tool's health is shown: the /gitops
row (and its tooltip), the service page's GitOps panel, the API item and the MCP `gitops` tool.

The stored fields come from the poll's own pure steps (the collectors, then
gitops.collectors.custom_health.judge_apps) over real-shaped objects:

- Argo CD and an argocd-cm Lua check that agree (both Degraded): the rule's message, "candidate
  r42 failed gate; rolled back", is shown although nothing disagrees;
- Flux with no rule and a rolled-back DecisionModel: the blind spot, with the healthCheckExprs
  that would make Flux agree;
- a kind RBAC hides: said on the app;
- a hostile message is escaped.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from gitops.collectors import collect
from gitops.collectors.custom_health import HealthInputs, judge_apps
from gitops.rows import AppRow
from portal.api.mcp import tools
from portal.api.mcp.api_pages import Caller
from portal.kernel.accounts import tokens
from tests.fixtures.seed import seed_app
from tests.gitops.decisionmodel import GROUP, KIND, decision_model
from tests.gitops.test_health_rules_poll import application, flux_kustomization

pytestmark = pytest.mark.django_db

AGREEING_RULE = """\
hs = {}
if obj.status.phase == "RolledBack" then
  hs.status = "Degraded"
  hs.message = "candidate " .. obj.spec.model.revision .. " failed gate; rolled back"
else
  hs.status = "Healthy"
  hs.message = "serving " .. obj.status.stableRevision
end
return hs
"""
RULE_MESSAGE = "DecisionModel dm-rolledback: Degraded — candidate r42 failed gate; rolled back"
BLIND_SPOT = "Flux says healthy, but DecisionModel dm-rolledback reports RolledBack: candidate failed the gate"
HIDDEN = "RBAC hides DecisionModel: no permission to list decisionmodels.decisionmodel.io"


def judged(app_object: dict, kind: str, inputs: HealthInputs) -> AppRow:
    [row] = collect({kind: [app_object]}).apps
    judge_apps([row], inputs)
    return row


def stored_from(row: AppRow, cluster, name: str, service) -> None:
    seed_app(cluster, name, service=service, tool=row.tool, kind=row.kind, health="Degraded" if row.tool == "argo"
             else "Healthy", rule_health=row.rule_health, health_disagreement=row.health_disagreement,
             health_unchecked=row.health_unchecked, health_rules=row.health_rules)


@pytest.fixture
def judged_apps(catalog):
    model = decision_model("RolledBack", name="dm-rolledback")
    argo = judged(application("RolledBack", argo_health="Degraded"), "Application", HealthInputs(
        argocd_cm={f"resource.customizations.health.{GROUP}_{KIND}": AGREEING_RULE},
        objects={(GROUP, KIND): [model]}))
    assert argo.health_disagreement == ""  # Argo CD ran the same check: they agree
    stored_from(argo, catalog.prod_eu, "agreeing-argo", catalog.checkout)
    flux = judged(flux_kustomization("RolledBack", with_rule=False), "Kustomization",
                  HealthInputs(objects={(GROUP, KIND): [model]}))
    assert flux.health_disagreement == BLIND_SPOT
    stored_from(flux, catalog.prod_eu, "blind-flux", catalog.checkout)
    hidden = judged(flux_kustomization("RolledBack", with_rule=False), "Kustomization",
                    HealthInputs(not_read={(GROUP, KIND): HIDDEN}))
    stored_from(hidden, catalog.prod_us, "hidden-flux", catalog.checkout)
    return catalog


@pytest.fixture
def viewer_client(client, users):
    client.force_login(users["viewer"])
    return client


def _row(html: str, name: str) -> str:
    start = html.index(f'data-app="{name}"')
    return html[start:html.index("</tr>", start)]


def test_gitops_rows_show_the_rule_s_message_the_blind_spot_and_what_is_hidden(viewer_client, judged_apps):
    html = viewer_client.get(reverse("gitops")).content.decode()
    agreeing = _row(html, "agreeing-argo")
    assert 'class="health-rule-message"' in agreeing
    assert RULE_MESSAGE in agreeing
    # The tooltip says what it is and carries the whole message.
    tooltip = ("Health rule (argocd-cm, healthCheckExprs or a portal rule) on this app's custom resources: "
               + RULE_MESSAGE)
    assert f'title="{tooltip}"' in agreeing
    assert "health-disagreement" not in agreeing
    blind = _row(html, "blind-flux")
    assert BLIND_SPOT in blind and "No health check for DecisionModel" in blind
    assert "The rule that would make Flux agree on DecisionModel" in blind
    assert "Kustomization flux-system/ks-dm-rolledback spec.healthCheckExprs" in blind
    assert "status.phase in [&quot;RolledBack&quot;]" in blind
    assert HIDDEN in _row(html, "hidden-flux")


def test_the_service_panel_shows_them_too(viewer_client, judged_apps):
    html = viewer_client.get(reverse("service", args=["checkout"])).content.decode()
    assert RULE_MESSAGE in html
    assert BLIND_SPOT in html
    assert 'class="health-suggested" data-kind="DecisionModel"' in html
    assert HIDDEN in html


def test_a_hostile_rule_message_is_escaped(viewer_client, catalog):
    model = decision_model("RolledBack", name="dm-rolledback")
    model["spec"]["model"]["revision"] = "<img src=x onerror=alert(1)>"
    row = judged(application("RolledBack", argo_health="Degraded"), "Application", HealthInputs(
        argocd_cm={f"resource.customizations.health.{GROUP}_{KIND}": AGREEING_RULE},
        objects={(GROUP, KIND): [model]}))
    stored_from(row, catalog.prod_eu, "hostile", catalog.checkout)
    html = viewer_client.get(reverse("gitops")).content.decode()
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in _row(html, "hostile")


def test_the_api_and_mcp_give_the_rule_s_verdict_and_what_nothing_checks(client, users, judged_apps):
    _, plain = tokens.issue(users["viewer"], "tests")
    response = client.get("/api/v1/gitops", HTTP_AUTHORIZATION=f"Bearer {plain}")
    assert response.status_code == 200, response.content
    items = {item["name"]: item for item in response.json()["results"]}
    agreeing = items["agreeing-argo"]
    assert (agreeing["rule_health"], agreeing["rule_message"]) == ("Degraded", RULE_MESSAGE)
    assert agreeing["health_unchecked"] == "" and agreeing["health_disagreement"] == ""
    assert agreeing["suggested_health_rules"] == [] and agreeing["health_not_read"] == ""
    blind = items["blind-flux"]
    assert (blind["rule_health"], blind["rule_message"]) == ("", "")
    assert blind["health_unchecked"] == "No health check for DecisionModel"
    [suggested] = blind["suggested_health_rules"]
    assert (suggested["tool"], suggested["group"], suggested["kind"]) == ("Flux", GROUP, KIND)
    assert suggested["where"] == "Kustomization flux-system/ks-dm-rolledback spec.healthCheckExprs"
    assert "RolledBack" in suggested["rule"]
    assert items["hidden-flux"]["health_not_read"] == HIDDEN

    apps = {app["app"].rsplit("/", 1)[1]: app for app in tools.gitops(Caller(plain, host="testserver"), {})["apps"]}
    assert apps["agreeing-argo"]["rule_health"] == "Degraded"
    assert apps["agreeing-argo"]["rule_message"] == RULE_MESSAGE
    assert apps["blind-flux"]["health_unchecked"] == "No health check for DecisionModel"
    assert apps["blind-flux"]["health_disagreement"] == BLIND_SPOT
    assert apps["blind-flux"]["suggested_health_rules"][0]["kind"] == KIND
    assert apps["hidden-flux"]["health_not_read"] == HIDDEN
    assert apps["hidden-flux"]["rule_message"] is None

