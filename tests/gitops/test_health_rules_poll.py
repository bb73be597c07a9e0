"""Issue 22's DecisionModel table through the real poll path: the official client over HTTP
against the Kubernetes API emulator, argocd-cm and the DecisionModels served there, the
collectors, the store.

- Argo CD with the documented Lua check in argocd-cm, and Flux with healthCheckExprs: every
  phase and the stale generation give the mapped health;
- with no rule in the tool, Flux (judged by a portal rule) shows the disagreement for
  RolledBack, candidate-over-stable and partial Degraded;
- with no rule at all, both tools say "No health check for DecisionModel", the poll still
  lists DecisionModels (within its budget, an unchanged list making an unchanged poll) and
  the tool's blind spot lands on the app, or "RBAC hides DecisionModel" when it cannot;
- a hostile rule in argocd-cm: the poll completes in bounded time, other apps are stored;
- a custom kind RBAC hides: degraded with its message, the poll completes.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from gitops import kinds
from gitops import listing as listing_module
from gitops.health.rules import ARGO_CD, FLUX
from gitops.models import GitOpsApp, HealthRule
from gitops.polling import poll
from portal.kernel.catalog.models import ArgoCDInstance, Cluster, Environment
from tests.fakes.kube_emulator import Fault, KubeEmulator
from tests.gitops.decisionmodel import GROUP, KIND, LUA_HEALTH_CHECK, argocd_cm, decision_model, kustomization
from tests.gitops.test_blind_spot import BLIND_SPOT
from tests.gitops.test_health_rules import FLUX_DISAGREEMENTS, STALE, TABLE

pytestmark = pytest.mark.django_db
TOKEN_ENV = "PORTAL_TEST_H22_TOKEN"
CASES = list(TABLE)
KSTATUS_TO_ARGO = {"Current": "Healthy", "InProgress": "Progressing", "Failed": "Degraded"}


def slug(case: str) -> str:
    return "dm-" + case.lower().replace(" ", "-")


def model_for(case: str) -> dict:
    obj = decision_model("Ready", generation=5, observed=4, name=slug(case)) if case == STALE else decision_model(
        case, name=slug(case))
    obj["metadata"]["uid"] = f"uid-{slug(case)}"
    return obj


def application(case: str, *, argo_health: str | None) -> dict:
    """An Application deploying one DecisionModel; Argo CD's own health for it as its controller wrote it."""
    resource = {"group": GROUP, "version": "v1", "kind": KIND, "namespace": "support", "name": slug(case),
                "status": "Synced"}
    if argo_health is not None:
        resource["health"] = {"status": argo_health}
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": f"app-{slug(case)}", "namespace": "argocd", "uid": f"uid-app-{slug(case)}"},
        "spec": {"project": "support",
                 "source": {"repoURL": "https://github.com/acme/deploy.git", "path": "support-router",
                            "targetRevision": "main"},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": "support"}},
        "status": {"sync": {"status": "Synced", "revision": "a" * 40}, "health": {"status": "Healthy"},
                   "resources": [resource], "reconciledAt": "2026-11-30T10:00:00Z"},
    }


def flux_kustomization(case: str, *, with_rule: bool) -> dict:
    obj = kustomization()
    obj["metadata"]["name"] = f"ks-{slug(case)}"
    obj["metadata"]["uid"] = f"uid-ks-{slug(case)}"
    if not with_rule:
        del obj["spec"]["healthCheckExprs"]
    obj["status"] = {
        "observedGeneration": 3,
        "lastAppliedRevision": "main@sha1:" + "b" * 40,
        "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                        "message": "Applied revision: main@sha1:" + "b" * 40,
                        "lastTransitionTime": "2026-11-30T08:00:00Z", "observedGeneration": 3}],
        "inventory": {"entries": [{"id": f"support_{slug(case)}_{GROUP}_{KIND}", "v": "v1"}]},
    }
    return obj


PLAIN_APP = {
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
    "metadata": {"name": "billing", "namespace": "argocd", "uid": "uid-billing"},
    "spec": {"project": "default", "source": {"repoURL": "https://github.com/acme/deploy.git", "path": "billing",
                                              "targetRevision": "main"},
             "destination": {"server": "https://kubernetes.default.svc", "namespace": "billing"}},
    "status": {"sync": {"status": "Synced", "revision": "c" * 40}, "health": {"status": "Healthy"},
               "resources": [{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "billing",
                              "name": "billing", "status": "Synced", "health": {"status": "Healthy"}}]},
}


def serve(emulator: KubeEmulator, objects: list[dict]) -> None:
    emulator.add_all(objects)
    for spec in kinds.KINDS:
        emulator.install(spec.api_version(spec.versions[0]), spec.plural, spec.kind)
    emulator.install("v1", "configmaps", "ConfigMap")
    emulator.install(f"{GROUP}/v1", "decisionmodels", KIND)


@pytest.fixture
def cluster(kube_emulator, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, kube_emulator.token)
    prod = Environment.objects.create(name="prod", order=3, production=True)
    row = Cluster.objects.create(name="prod-1", environment=prod, connection=Cluster.Connection.API,
                                 api_url=kube_emulator.url, token_env=TOKEN_ENV)
    ArgoCDInstance.objects.create(name="prod-argocd", cluster=row, namespace="argocd")
    return row


def polled(cluster: Cluster):
    report = poll(Cluster.objects.select_related("environment").get(pk=cluster.pk))
    assert report.ok, report.error
    return report


def stored(name: str) -> GitOpsApp:
    return GitOpsApp.objects.get(name=name)


def test_argocd_lua_check_in_argocd_cm_gives_the_mapped_health(cluster, kube_emulator):
    serve(kube_emulator, [argocd_cm(), PLAIN_APP, *(model_for(c) for c in CASES),
                          *(application(c, argo_health=TABLE[c][0][0]) for c in CASES)])
    polled(cluster)
    for case in CASES:
        app = stored(f"app-{slug(case)}")
        status, message = TABLE[case][0]
        assert app.rule_health == status, case
        [judged] = app.health_rules["objects"]
        assert (judged["status"], judged["message"]) == (status, message), case
        assert judged["source"] == f"argocd-cm resource.customizations.health.{GROUP}_{KIND}"
        # Argo CD ran the same check: no disagreement, nothing unchecked.
        assert app.health_disagreement == "" and app.health_unchecked == "", case
    assert stored("billing").health_rules == {}


def test_flux_health_check_exprs_give_the_mapped_health(cluster, kube_emulator):
    serve(kube_emulator, [*(model_for(c) for c in CASES), *(flux_kustomization(c, with_rule=True) for c in CASES)])
    polled(cluster)
    for case in CASES:
        app = stored(f"ks-{slug(case)}")
        assert app.rule_health == KSTATUS_TO_ARGO[TABLE[case][1]], case
        assert app.health_rules["objects"][0]["source"].endswith("healthCheckExprs[0]")
        # Flux judges by the same expressions: its verdict is the rule's.
        assert app.health_disagreement == "" and app.health_unchecked == "", case


def test_with_no_rule_the_kind_is_read_and_the_blind_spot_lands_on_the_app(cluster, kube_emulator):
    serve(kube_emulator, [argocd_cm(**{f"resource.customizations.health.{GROUP}_{KIND}": ""}),
                          *(model_for(c) for c in CASES), *(flux_kustomization(c, with_rule=False) for c in CASES),
                          *(application(c, argo_health=None) for c in CASES)])
    polled(cluster)
    # No rule covers the kind, yet the poll listed it: the blind spot needs the objects.
    assert kube_emulator.requests_for("decisionmodels.decisionmodel.io")
    for case in CASES:
        for tool, name in ((FLUX, f"ks-{slug(case)}"), (ARGO_CD, f"app-{slug(case)}")):
            app = stored(name)
            assert app.health_unchecked == "No health check for DecisionModel", name
            assert app.rule_health == ""
            expected = BLIND_SPOT[tool].get(case, "").replace("support-router", slug(case))
            assert app.health_disagreement == expected, name
            suggested = app.health_rules["suggested"]
            assert bool(suggested) == bool(expected), name
    [flux_rule] = stored("ks-dm-rolledback").health_rules["suggested"]
    assert flux_rule["where"] == "Kustomization flux-system/ks-dm-rolledback spec.healthCheckExprs"
    [argo_rule] = stored("app-dm-rolledback").health_rules["suggested"]
    assert argo_rule["where"] == f"argocd-cm data key resource.customizations.health.{GROUP}_{KIND}"
    # It needs attention like any disagreement, after the grace period.
    app = stored("ks-dm-rolledback")
    assert app.needs_attention(at=app.health_disagreement_since + timedelta(minutes=30))
    assert not stored("ks-dm-ready").needs_attention(at=app.health_disagreement_since + timedelta(minutes=30))


def test_with_no_rule_a_kind_rbac_hides_is_said_on_the_app(cluster, kube_emulator):
    serve(kube_emulator, [model_for("RolledBack"), flux_kustomization("RolledBack", with_rule=False), PLAIN_APP])
    kube_emulator.fail("decisionmodels.decisionmodel.io", Fault.forbidden())
    report = polled(cluster)  # a hidden kind is no poll failure
    message = "RBAC hides DecisionModel: no permission to list decisionmodels.decisionmodel.io"
    assert report.unavailable[f"health-rules:{GROUP}/{KIND}"] == message
    app = stored("ks-dm-rolledback")
    assert app.health_rules["hidden"] == message
    assert app.health_disagreement == ""  # nothing read, nothing claimed
    assert stored("billing").health_status == "Healthy"


def test_an_unchanged_custom_kind_list_makes_an_unchanged_poll(cluster, kube_emulator):
    serve(kube_emulator, [model_for("Ready"), flux_kustomization("Ready", with_rule=False)])
    polled(cluster)
    assert stored("ks-dm-ready").health_disagreement == ""
    again = polled(cluster)
    assert again.unchanged  # the same lists, the DecisionModel's among them: nothing collected
    assert len(kube_emulator.requests_for("decisionmodels.decisionmodel.io")) == 2
    rolled_back = model_for("Ready")
    rolled_back["status"] = decision_model("RolledBack")["status"]
    kube_emulator.add(rolled_back)  # a new resourceVersion
    moved = polled(cluster)
    assert not moved.unchanged
    assert stored("ks-dm-ready").health_disagreement == (
        "Flux says healthy, but DecisionModel dm-ready reports RolledBack: candidate failed the gate")


def test_a_portal_rule_added_or_disabled_is_seen_by_the_next_poll_and_a_disabled_ones_edit_is_not(
        cluster, kube_emulator):
    """The rules a poll applied are part of its digest (gitops.pollplan.CatalogKey): the enabled
    ones, as the listing read them."""
    serve(kube_emulator, [model_for("RolledBack"), flux_kustomization("RolledBack", with_rule=False)])
    polled(cluster)
    assert polled(cluster).unchanged
    rule = HealthRule.objects.create(group=GROUP, kind=KIND, language=HealthRule.Language.LUA, lua=LUA_HEALTH_CHECK)

    assert not polled(cluster).unchanged
    judged = stored("ks-dm-rolledback").health_disagreement
    assert "RolledBack" in judged
    assert polled(cluster).unchanged

    rule.enabled = False
    rule.save()
    assert not polled(cluster).unchanged
    assert stored("ks-dm-rolledback").health_disagreement != judged
    assert polled(cluster).unchanged

    rule.lua += "\n-- not in effect\n"
    rule.save()
    assert polled(cluster).unchanged


def test_the_blind_spot_reads_only_as_many_kinds_as_its_budget(cluster, kube_emulator, monkeypatch):
    monkeypatch.setattr(listing_module, "MAX_BLIND_SPOT_KINDS", 1)
    widget = {"apiVersion": "example.io/v1", "kind": "Widget",
              "metadata": {"name": "w", "namespace": "support", "uid": "uid-w", "resourceVersion": "7"},
              "status": {"phase": "Failed"}}
    ks = flux_kustomization("RolledBack", with_rule=False)
    ks["status"]["inventory"]["entries"].append({"id": "support_w_example.io_Widget", "v": "v1"})
    other = flux_kustomization("Ready", with_rule=False)
    serve(kube_emulator, [model_for("RolledBack"), model_for("Ready"), ks, other, widget])
    kube_emulator.install("example.io/v1", "widgets", "Widget")
    report = polled(cluster)
    # DecisionModel is deployed by two apps, Widget by one: DecisionModel is read first.
    assert kube_emulator.requests_for("decisionmodels.decisionmodel.io")
    assert not kube_emulator.requests_for("widgets.example.io")
    app = stored("ks-dm-rolledback")
    assert app.health_rules["hidden"] == (
        "Widget not read: a poll reads at most 1 custom kinds (and 5000 of their objects) that no health check "
        "covers")
    assert app.health_disagreement.startswith("Flux says healthy, but DecisionModel dm-rolledback reports RolledBack")
    assert any("custom kinds with no health check: 2 deployed" in w for w in report.warnings)


def test_flux_without_rule_shows_the_disagreement_a_portal_rule_finds(cluster, kube_emulator):
    HealthRule.objects.create(group=GROUP, kind=KIND, language=HealthRule.Language.LUA, lua=LUA_HEALTH_CHECK)
    serve(kube_emulator, [*(model_for(c) for c in CASES), *(flux_kustomization(c, with_rule=False) for c in CASES)])
    polled(cluster)
    for case in CASES:
        app = stored(f"ks-{slug(case)}")
        assert app.health_unchecked == ""
        expected = FLUX_DISAGREEMENTS.get(case, "").replace("support-router", slug(case))
        assert app.health_disagreement == expected, case
    # RolledBack, candidate over stable, partial Degraded: all among them.
    for case in ("RolledBack", "Starting", "Evaluating", "AwaitingPromotion", "Degraded"):
        assert stored(f"ks-{slug(case)}").health_disagreement
    later = GitOpsApp.objects.needing_attention(at=stored("ks-dm-rolledback").health_disagreement_since
                                                + timedelta(minutes=30))
    assert set(later.values_list("name", flat=True)) == {f"ks-{slug(c)}" for c in FLUX_DISAGREEMENTS}
    app = stored("ks-dm-rolledback")
    assert app.needs_attention(at=app.health_disagreement_since + timedelta(minutes=30))
    assert not app.needs_attention(at=app.health_disagreement_since)  # within the grace period


def test_argocd_without_rule_and_a_portal_cel_rule_disagrees_with_no_health(cluster, kube_emulator):
    HealthRule.objects.create(group=GROUP, kind=KIND, language=HealthRule.Language.CEL,
                              cel_current="status.phase == 'Ready'",
                              cel_failed="status.phase in ['Degraded', 'RolledBack', 'Failed']")
    serve(kube_emulator, [model_for("RolledBack"), application("RolledBack", argo_health=None)])
    polled(cluster)
    app = stored("app-dm-rolledback")
    assert app.rule_health == "Degraded"
    # CEL gives no message: the sentence names the object's own phase.
    assert app.health_disagreement == "Argo CD: no health, but DecisionModel dm-rolledback is RolledBack"
    assert app.health_unchecked == ""
    assert app.problem_rank == 0  # ranks with Degraded on /gitops


HOSTILE = {
    f"resource.customizations.health.{GROUP}_{KIND}": "while true do end",
    "resource.customizations.health.example.io_Widget": 'os.execute("touch /tmp/pwned-h22")\nreturn {status="Healthy"}',
}


def test_a_hostile_rule_in_argocd_cm_never_stops_the_poll(cluster, kube_emulator, tmp_path):
    widget = {"apiVersion": "example.io/v1", "kind": "Widget",
              "metadata": {"name": "w", "namespace": "support", "uid": "uid-w"}, "status": {"phase": "Ok"}}
    widget_app = application("Ready", argo_health=None)
    widget_app["metadata"].update(name="widgets", uid="uid-widgets")
    widget_app["status"]["resources"] = [{"group": "example.io", "version": "v1", "kind": "Widget",
                                          "namespace": "support", "name": "w"}]
    serve(kube_emulator, [argocd_cm(**HOSTILE), PLAIN_APP, widget, widget_app, *(model_for(c) for c in CASES),
                          *(application(c, argo_health=None) for c in CASES)])
    kube_emulator.install("example.io/v1", "widgets", "Widget")
    started = time.monotonic()
    polled(cluster)
    assert time.monotonic() - started < 15  # one run hits the 1 s limit; the rule is not run again
    assert GitOpsApp.objects.count() == len(CASES) + 2
    for case in CASES:
        app = stored(f"app-{slug(case)}")
        assert app.rule_health == "Unknown"
        assert app.health_rules["objects"][0]["message"].startswith("rule failed: ")
        assert app.health_disagreement == ""
    widgets = stored("widgets")
    assert widgets.health_rules["objects"][0]["message"].startswith("rule failed: ")
    assert "'execute' (a nil value)" in widgets.health_rules["objects"][0]["message"]
    assert stored("billing").health_status == "Healthy"


def test_a_custom_kind_rbac_hides_is_degraded_with_its_message(cluster, kube_emulator):
    serve(kube_emulator, [argocd_cm(), PLAIN_APP, model_for("RolledBack"),
                          application("RolledBack", argo_health="Degraded")])
    kube_emulator.fail("decisionmodels.decisionmodel.io", Fault.forbidden())
    report = polled(cluster)
    message = "RBAC hides DecisionModel: no permission to list decisionmodels.decisionmodel.io"
    assert report.unavailable[f"health-rules:{GROUP}/{KIND}"] == message
    app = stored("app-dm-rolledback")
    assert app.health_rules["errors"] == [message]
    assert app.rule_health == "" and app.health_status == "Healthy"
    assert Cluster.objects.get(pk=cluster.pk).poll.unavailable[f"health-rules:{GROUP}/{KIND}"] == message


def test_a_phase_change_is_seen_at_the_next_poll(cluster, kube_emulator):
    serve(kube_emulator, [argocd_cm(), model_for("Evaluating"), application("Evaluating", argo_health="Progressing")])
    polled(cluster)
    assert stored("app-dm-evaluating").rule_health == "Progressing"
    changed = model_for("Evaluating")
    changed["status"]["phase"] = "RolledBack"
    kube_emulator.add(changed)
    polled(cluster)
    assert stored("app-dm-evaluating").rule_health == "Degraded"


def test_a_broken_cel_expression_fails_its_rule_not_the_poll(cluster, kube_emulator):
    broken = flux_kustomization("RolledBack", with_rule=True)
    broken["spec"]["healthCheckExprs"] = [{"apiVersion": f"{GROUP}/v1", "kind": KIND,
                                           "current": "status.phase == ", "failed": "(" * 5000}]
    serve(kube_emulator, [model_for("RolledBack"), broken, flux_kustomization("Ready", with_rule=True),
                          model_for("Ready")])
    polled(cluster)
    app = stored("ks-dm-rolledback")
    assert app.rule_health == "Unknown"
    assert app.health_rules["objects"][0]["message"].startswith("rule failed: ")
    assert stored("ks-dm-ready").rule_health == "Healthy"


ALERT = {
    "apiVersion": "notification.toolkit.fluxcd.io/v1beta3", "kind": "Alert",
    "metadata": {"name": "on-call", "namespace": "flux-system", "uid": "uid-alert"},
    "spec": {"providerRef": {"name": "slack"}, "eventSeverity": "error",
             "eventSources": [{"kind": "Kustomization", "name": "ks-dm-ready"}]},
}


def test_flux_alerts_are_read_and_a_forbidden_list_degrades_with_its_message(cluster, kube_emulator):
    serve(kube_emulator, [ALERT, flux_kustomization("Ready", with_rule=True),
                          flux_kustomization("Failed", with_rule=True)])
    polled(cluster)
    assert stored("ks-dm-ready").flux_alerts == ["flux-system/on-call"]
    assert stored("ks-dm-failed").flux_alerts == []
    kube_emulator.fail("alerts.notification.toolkit.fluxcd.io", Fault.forbidden())
    report = polled(cluster)
    assert report.unavailable["flux-notifications"] == (
        "Flux Alerts unavailable: no permission to list alerts.notification.toolkit.fluxcd.io")
    assert stored("ks-dm-ready").flux_alerts is None  # not known: no finding is made of it
