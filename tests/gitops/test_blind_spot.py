"""The tools' blind spot with no rule (gitops.health.blindspot) and the rule it suggests
(gitops.health.suggested_rules).

- Seed 000's DecisionModel in every phase: Flux (kstatus) is told exactly where the seed says
  kstatus misreads (a candidate in flight over a healthy stable revision, RolledBack, partial
  Degraded); Argo CD, which gives the kind no health at all, wherever the object is not Ready.
- Every object of the real-objects corpus (shared and tests/data): no disagreement.
- The suggested healthCheckExprs and Lua, run through the portal's own CEL and Lua, judge
  every phase as the object reports itself: the tool would agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gitops.health import kstatus
from gitops.health.blindspot import blind_spot, own_report
from gitops.health.cel import HealthCheckExprs, evaluate_cel
from gitops.health.rules import ARGO_CD, FLUX, HealthRules, LuaRule, kustomization_rules
from gitops.health.suggested_rules import suggested_rule
from gitops.rows import DEGRADED, HEALTHY, PROGRESSING
from tests.fixtures.real_objects import REAL_OBJECTS, load_real
from tests.gitops.decisionmodel import ALL_PHASES, API_VERSION, KIND, decision_model

_FLUX_SAYS = "Flux says healthy, but DecisionModel support-router reports "
_ARGO_SAYS = "Argo CD says healthy, but DecisionModel support-router reports "
_IN_FLIGHT = " (still in progress)"
BLIND_SPOT = {
    # Pending, Resolving, Caching and Failed have Ready=False: kstatus says InProgress itself.
    FLUX: {
        "Starting": _FLUX_SAYS + "Starting" + _IN_FLIGHT,
        "Evaluating": _FLUX_SAYS + "Evaluating" + _IN_FLIGHT,
        "Promoting": _FLUX_SAYS + "Promoting" + _IN_FLIGHT,
        "AwaitingPromotion": _FLUX_SAYS + "AwaitingPromotion" + _IN_FLIGHT,
        "Degraded": _FLUX_SAYS + "Degraded: 2 of 5 shards unavailable",
        "RolledBack": _FLUX_SAYS + "RolledBack: candidate failed the gate",
    },
    # No check, no health: the app is Healthy whatever the DecisionModel says.
    ARGO_CD: {
        **{phase: _ARGO_SAYS + phase + _IN_FLIGHT for phase in
           ("Pending", "Resolving", "Caching", "Starting", "Evaluating", "Promoting", "AwaitingPromotion")},
        "Degraded": _ARGO_SAYS + "Degraded: 2 of 5 shards unavailable",
        "RolledBack": _ARGO_SAYS + "RolledBack: candidate failed the gate",
        "Failed": _ARGO_SAYS + "Failed: model artifact digest mismatch",
    },
}


def tool_word(tool: str, obj: dict) -> str:
    """What the tool says with no rule: kstatus for Flux, no health at all for Argo CD."""
    return kstatus(obj)[0] if tool == FLUX else ""


@pytest.mark.parametrize("tool", [FLUX, ARGO_CD])
@pytest.mark.parametrize("phase", ALL_PHASES)
def test_every_phase_with_no_rule(tool: str, phase: str) -> None:
    obj = decision_model(phase)
    found = blind_spot(obj, tool=tool, tool_status=tool_word(tool, obj))  # type: ignore[arg-type]
    expected = BLIND_SPOT[tool].get(phase)
    if expected is None:
        assert found is None
        return
    assert found is not None
    disagreement, report = found
    assert disagreement.sentence == expected
    assert disagreement.rule_status == (DEGRADED if phase in ("Degraded", "RolledBack", "Failed") else PROGRESSING)
    assert report.health == disagreement.rule_status


@pytest.mark.parametrize("tool", [FLUX, ARGO_CD])
def test_a_report_of_an_older_generation_or_a_deleted_object_is_no_news(tool: str) -> None:
    stale = decision_model("RolledBack", generation=5, observed=4)
    assert blind_spot(stale, tool=tool, tool_status="Current" if tool == FLUX else "") is None  # type: ignore[arg-type]
    going = decision_model("RolledBack")
    going["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    assert own_report(going) is None


def test_the_tool_s_own_verdict_other_than_healthy_is_no_blind_spot() -> None:
    obj = decision_model("RolledBack")
    assert blind_spot(obj, tool=FLUX, tool_status="InProgress") is None
    assert blind_spot(obj, tool=ARGO_CD, tool_status="Degraded") is None  # Argo CD has a check after all


def test_failure_type_conditions_and_phases() -> None:
    obj = {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"},
           "status": {"phase": "Running", "conditions": [
               {"type": "Ready", "status": "True"},
               {"type": "ReplicaFailure", "status": "True", "message": "quota exceeded"}]}}
    found = blind_spot(obj, tool=FLUX, tool_status="Current")
    assert found is not None
    assert found[0].sentence == "Flux says healthy, but Widget w reports ReplicaFailure: quota exceeded"
    obj["status"]["conditions"][1]["status"] = "False"
    assert blind_spot(obj, tool=FLUX, tool_status="Current") is None  # Running is no news
    obj["status"]["phase"] = "InstallFailed"
    assert blind_spot(obj, tool=FLUX, tool_status="Current")[0].sentence == (  # type: ignore[index]
        "Flux says healthy, but Widget w reports InstallFailed")


def _corpus() -> list[tuple[str, dict]]:
    out = []
    for root in (Path("/work/shared/testdata/real-objects"), REAL_OBJECTS):
        for path in sorted(root.rglob("*")):
            if path.suffix in (".yaml", ".json"):
                out.extend((f"{root.parent.name}/{path.name}", obj) for obj in load_real(path))
    return out


CORPUS = _corpus()


def test_the_corpus_is_all_there() -> None:
    assert len(CORPUS) >= 2 * 54


@pytest.mark.parametrize("tool", [FLUX, ARGO_CD])
def test_no_blind_spot_anywhere_in_the_real_objects(tool: str) -> None:
    flagged = []
    for where, obj in CORPUS:
        status = tool_word(tool, obj)
        if blind_spot(obj, tool=tool, tool_status=status) is not None:  # type: ignore[arg-type]
            flagged.append((where, obj.get("kind"), obj.get("metadata", {}).get("name")))
    assert flagged == []


# The suggested rule


def _reports(tool: str) -> list:
    out = []
    for phase in ALL_PHASES:
        obj = decision_model(phase)
        found = blind_spot(obj, tool=tool, tool_status=tool_word(tool, obj))  # type: ignore[arg-type]
        if found is not None:
            out.append(found[1])
    return out


def _as_rules(tool: str, text: str) -> HealthRules:
    if tool == FLUX:
        return kustomization_rules({"metadata": {"namespace": "flux-system", "name": "support-router"},
                                    "spec": {"healthCheckExprs": yaml.safe_load(text)}})
    return HealthRules((LuaRule(f"decisionmodel.io/{KIND}", text, source="suggested"),))


@pytest.mark.parametrize("tool", [FLUX, ARGO_CD])
def test_the_suggested_rule_makes_the_tool_agree(tool: str) -> None:
    rule = suggested_rule(tool, API_VERSION, KIND, _reports(tool), owner="Kustomization flux-system/support-router")  # type: ignore[arg-type]
    assert rule is not None
    rules = _as_rules(tool, rule.text)
    # The CEL library builds its parser on first use, which on a busy test machine can take longer
    # than a rule's 1 s; a server has long done so before any rule of ours runs.
    evaluate_cel(HealthCheckExprs(API_VERSION, KIND, "true"), decision_model("Ready"))
    for phase in ALL_PHASES:
        obj = decision_model(phase)
        verdict = rules.evaluate(obj)
        assert verdict is not None and not verdict.failed, (phase, verdict)
        report = own_report(obj)
        if phase == "Ready":
            assert verdict.status == HEALTHY
        elif phase in BLIND_SPOT[tool]:
            assert report is not None and verdict.status == report.health, phase
        else:  # not misread by this tool; the rule still does not call it healthy
            assert verdict.status in (PROGRESSING, DEGRADED), phase
    stale = rules.evaluate(decision_model("Ready", generation=5, observed=4))
    assert stale is not None and stale.status == PROGRESSING


def test_the_suggestion_names_where_it_goes() -> None:
    argo = suggested_rule(ARGO_CD, API_VERSION, KIND, _reports(ARGO_CD))
    assert argo is not None
    assert argo.where == "argocd-cm data key resource.customizations.health.decisionmodel.io_DecisionModel"
    flux = suggested_rule(FLUX, API_VERSION, KIND, _reports(FLUX), owner="HelmRelease apps/router")
    assert flux is not None and flux.where == "HelmRelease apps/router spec.healthCheckExprs"
    [entry] = yaml.safe_load(flux.text)
    assert entry["apiVersion"] == API_VERSION and entry["kind"] == KIND
    assert '"RolledBack"' in entry["failed"] and '"Degraded"' in entry["failed"]


def test_no_suggestion_from_words_that_are_not_plain_identifiers() -> None:
    hostile = decision_model("RolledBack")
    hostile["status"]["conditions"][1]["type"] = "Degraded') || true || ('"
    hostile["status"]["phase"] = "Evaluating"
    # The condition type is not a word the detector trusts: only the phase in flight is read.
    report = own_report(hostile)
    assert report is not None and report.word == "Evaluating" and not report.failing
    assert suggested_rule(FLUX, API_VERSION, 'Decision"Model', [report]) is None
    assert suggested_rule(FLUX, "decision model/v1", KIND, [report]) is None
    assert suggested_rule(FLUX, API_VERSION, KIND, []) is None


def test_argo_cd_s_app_tree_health_hides_resource_health_unless_argocd_cm_was_read() -> None:
    """With resourceHealthSource: appTree no resource's health is in the Application: "no
    health" proves nothing about a check, unless argocd-cm was read and holds none."""
    from gitops.collectors import collect
    from gitops.collectors.custom_health import HealthInputs, judge_apps
    from tests.gitops.test_health_rules_poll import application

    def judged(argocd_cm: dict | None) -> str:
        app = application("RolledBack", argo_health=None)
        app["status"]["resourceHealthSource"] = "appTree"
        [row] = collect({"Application": [app]}).apps
        judge_apps([row], HealthInputs(argocd_cm=argocd_cm, objects={
            ("decisionmodel.io", KIND): [decision_model("RolledBack", name="dm-rolledback")]}))
        return row.health_disagreement

    assert judged(None) == ""  # argocd-cm not read: Argo CD may well have a check
    assert judged({"url": "https://argocd.example.com"}) == (
        "Argo CD says healthy, but DecisionModel dm-rolledback reports RolledBack: candidate failed the gate")


def test_a_helm_release_s_own_health_check_exprs_cover_the_kind() -> None:
    """helm-controller (Flux 2.8) judges by a HelmRelease's healthCheckExprs: no blind spot
    there, the expressions judge."""
    from gitops.collectors import collect
    from gitops.collectors.custom_health import HealthInputs, judge_apps
    from tests.gitops.decisionmodel import HEALTH_CHECK_EXPRS

    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "router", "namespace": "support", "uid": "uid-hr", "generation": 2},
        "spec": {"interval": "10m", "chart": {"spec": {"chart": "router", "version": "1.2.0",
                                                        "sourceRef": {"kind": "HelmRepository", "name": "acme"}}},
                 "healthCheckExprs": [HEALTH_CHECK_EXPRS]},
        "status": {"observedGeneration": 2,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "UpgradeSucceeded",
                                   "message": "Helm upgrade succeeded", "lastTransitionTime": "2026-11-30T08:00:00Z"}],
                   "inventory": {"entries": [{"id": f"support_dm-rolledback_decisionmodel.io_{KIND}", "v": "v1"}]}},
    }
    collected = collect({"HelmRelease": [release]}).apps
    assert len(collected) == 1
    evaluate_cel(HealthCheckExprs(API_VERSION, KIND, "true"), decision_model("Ready"))  # see above: warm the parser
    judge_apps(collected, HealthInputs(objects={
        ("decisionmodel.io", KIND): [decision_model("RolledBack", name="dm-rolledback")]}))
    [row] = collected
    assert row.health_disagreement == "" and row.health_unchecked == ""
    assert row.rule_health == DEGRADED
    assert row.health_rules["objects"][0]["source"] == "HelmRelease support/router healthCheckExprs[0]"
