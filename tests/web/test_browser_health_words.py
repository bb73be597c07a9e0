"""/gitops in headless Chromium after a real poll (the Kubernetes API emulator) with no rule for
DecisionModel on the Flux side and an agreeing argocd-cm check on the Argo CD side: the blind
spot with the rule that would make Flux agree (opened from its fold), and the agreeing rule's
message with its tooltip. Screenshot: test-artifacts/gitops-health-words.png."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from gitops.models import GitOpsApp
from gitops.polling import poll
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment
from tests.fixtures.browser import screenshot, submit_login
from tests.gitops.decisionmodel import GROUP, KIND, argocd_cm
from tests.gitops.test_health_rules_poll import TOKEN_ENV, application, flux_kustomization, model_for, serve
from tests.web.test_health_rule_words import AGREEING_RULE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "health-words-pass-123"


def test_gitops_shows_the_blind_spot_and_the_agreeing_rule_s_message(page, live_server, kube_emulator, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    serve(kube_emulator, [argocd_cm(**{f"resource.customizations.health.{GROUP}_{KIND}": AGREEING_RULE}),
                          model_for("RolledBack"), flux_kustomization("RolledBack", with_rule=False),
                          application("RolledBack", argo_health="Degraded")])
    prod = Environment.objects.create(name="prod", order=3, production=True)
    cluster = Cluster.objects.create(name="prod-1", environment=prod, connection=Cluster.Connection.API,
                                     api_url=kube_emulator.url, token_env=TOKEN_ENV)
    ArgoCDInstance.objects.create(name="prod-argocd", cluster=cluster, namespace="argocd")
    assert poll(Cluster.objects.select_related("environment").get(pk=cluster.pk)).ok
    assert GitOpsApp.objects.get(name="ks-dm-rolledback").health_disagreement
    user = get_user_model().objects.create_user("noor", password=PASSWORD)
    grant(user, Role.VIEWER)
    submit_login(page, live_server.url, "noor", PASSWORD)
    page.goto(f"{live_server.url}/gitops")

    flux = page.locator("tr.app-row[data-app='ks-dm-rolledback']")
    assert flux.locator(".health-disagreement").inner_text().endswith(
        "Flux says healthy, but DecisionModel dm-rolledback reports RolledBack: candidate failed the gate")
    rule = flux.locator("details.health-suggested pre")
    assert not rule.is_visible()  # folded until asked for
    flux.locator("details.health-suggested summary").click()
    assert rule.is_visible()
    assert 'status.phase in ["RolledBack"]' in rule.inner_text()

    argo = page.locator("tr.app-row[data-app='app-dm-rolledback']")
    message = argo.locator(".health-rule-message")
    assert "DecisionModel dm-rolledback: Degraded — candidate r42 failed gate; rolled back" in message.inner_text()
    assert message.get_attribute("title").endswith("candidate r42 failed gate; rolled back")
    assert argo.locator(".health-disagreement").count() == 0  # Argo CD ran the same check
    screenshot(page, "gitops-health-words")
