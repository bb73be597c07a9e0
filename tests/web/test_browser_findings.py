"""/findings on the demo fleet as `make run` loads it (load_demo on examples/), in headless
Chromium: at least five kinds of finding, counted by rule, environment and team, each linking
its app and saying what to change; muting one with a reason hides it, audited, and it stays
muted after the next poll. Screenshot: test-artifacts/findings.png."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from gitops.models import FindingMute
from gitops.polling import poll
from portal.findings.mutes import open_findings
from portal.kernel.accounts.roles import Role, grant
from portal.kernel.audit.models import AuditLog
from portal.kernel.catalog.models import Cluster
from tests.fixtures.browser import screenshot, submit_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "findings-admin-pass-123"


@pytest.fixture
def demo(live_server, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.CELERY_TASK_ALWAYS_EAGER = True
    call_command("load_demo", stdout=StringIO())
    user = get_user_model().objects.create_user("noor", password=PASSWORD)
    grant(user, Role.ADMIN)
    return live_server


def login(page, server) -> None:
    submit_login(page, server.url, "noor", PASSWORD)


def test_findings_page_on_the_demo_fleet(page, demo):
    rules = set(open_findings().values_list("rule", flat=True))
    assert len(rules) >= 5, rules
    login(page, demo)
    # The overview counts them and links the page.
    overview_count = page.locator("a.count[href='/findings'] strong").inner_text()
    assert int(overview_count) == open_findings().count()
    page.goto(f"{demo.url}/findings")
    by_rule = page.locator("table.by-rule tbody tr")
    assert by_rule.count() == len(rules)
    assert page.locator("table.by-environment tbody tr").count() >= 1
    assert page.locator("table.by-team tbody tr").count() >= 1
    first = page.locator("tr.finding").first
    assert first.locator("a").first.get_attribute("href").startswith("/gitops?q=")
    assert first.locator("td").nth(2).inner_text().strip()  # what to change
    path = screenshot(page, "findings")
    page.screenshot(path=str(path.with_name("findings-top.png")))  # what is in sight first

    # Mute one with a reason: gone from the list, listed as muted, audited, and still muted after a poll.
    rule, app = first.get_attribute("data-rule"), first.get_attribute("data-app")
    first.locator("input[name=reason]").fill("accepted until the Q1 migration")
    first.locator("button").click()
    page.wait_for_url(f"{demo.url}/findings")
    assert page.locator(f"table.muted-findings tr[data-rule='{rule}'][data-app='{app}']").count() == 1
    assert AuditLog.objects.filter(action="finding.mute").count() == 1
    muted = FindingMute.objects.get(rule=rule, app__name=app)
    poll(Cluster.objects.select_related("environment").get(pk=muted.app.read_from_id))
    assert FindingMute.objects.filter(pk=muted.pk).exists()
    page.goto(f"{demo.url}/findings")
    assert page.locator(f"tr.finding[data-rule='{rule}'][data-app='{app}']").count() == 0
    screenshot(page, "findings-muted")


def test_gitops_shows_a_health_disagreement(page, live_server, kube_emulator, monkeypatch):
    """Flux calls a rolled-back DecisionModel Current; an admin's Lua rule says Degraded: /gitops shows why."""
    from gitops.models import GitOpsApp, HealthRule
    from portal.kernel.catalog.models import Environment
    from tests.gitops.decisionmodel import GROUP, KIND, LUA_HEALTH_CHECK
    from tests.gitops.test_health_rules_poll import TOKEN_ENV, flux_kustomization, model_for, serve

    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    HealthRule.objects.create(group=GROUP, kind=KIND, lua=LUA_HEALTH_CHECK)
    serve(kube_emulator, [model_for("RolledBack"), flux_kustomization("RolledBack", with_rule=False)])
    prod = Environment.objects.create(name="prod", order=3, production=True)
    cluster = Cluster.objects.create(name="prod-1", environment=prod, connection=Cluster.Connection.API,
                                     api_url=kube_emulator.url, token_env=TOKEN_ENV)
    assert poll(cluster).ok
    assert GitOpsApp.objects.get(name="ks-dm-rolledback").health_disagreement
    user = get_user_model().objects.create_user("noor", password=PASSWORD)
    grant(user, Role.VIEWER)
    login(page, live_server)
    page.goto(f"{live_server.url}/gitops")
    row = page.locator("tr.app-row[data-app='ks-dm-rolledback']")
    text = row.locator(".health-disagreement").inner_text()
    assert "Flux: Current, but DecisionModel dm-rolledback is RolledBack: candidate failed the gate" in text
    screenshot(page, "gitops-health-disagreement")
