"""Custom-resource health rules (gitops.health.rules): issue 22's DecisionModel table.

For every phase and the stale-generation case: the Argo CD Lua check (configured in
argocd-cm, both key styles) and the Flux CEL expressions give the mapped health; with no
rule, kstatus calls RolledBack, candidate-over-stable and partial Degraded Current, and
the disagreement value says so; Argo CD with no rule gets "No health check for
DecisionModel".
"""

from __future__ import annotations

import pytest

from gitops.health import argocd_cm_rules, health_disagreement, kstatus, kustomization_rules, missing_health_check
from gitops.health.cel import HealthCheckExprs
from gitops.health.rules import ARGO_CD, FLUX, HealthRules, PortalRule
from gitops.rows import DEGRADED, HEALTHY, PROGRESSING, SUSPENDED, UNKNOWN
from tests.gitops.decisionmodel import (
    GROUP,
    HEALTH_CHECK_EXPRS,
    KIND,
    LUA_HEALTH_CHECK,
    argocd_cm,
    decision_model,
    kustomization,
)

STALE = "stale generation"

# case → (Argo CD Lua: status, message), Flux CEL (kstatus word), kstatus with no rule.
TABLE = {
    "Pending": ((PROGRESSING, "Pending"), "InProgress", "InProgress"),
    "Resolving": ((PROGRESSING, "Resolving"), "InProgress", "InProgress"),
    "Caching": ((PROGRESSING, "Caching"), "InProgress", "InProgress"),
    "Starting": ((PROGRESSING, "Starting"), "InProgress", "Current"),
    "Evaluating": ((PROGRESSING, "Evaluating"), "InProgress", "Current"),
    "Promoting": ((PROGRESSING, "Promoting"), "InProgress", "Current"),
    # kstatus has no Suspended: Flux waits, InProgress.
    "AwaitingPromotion": ((SUSPENDED, "awaiting manual promotion"), "InProgress", "Current"),
    "Ready": ((HEALTHY, "stable revision r41 serves 100% of traffic"), "Current", "Current"),
    "Degraded": ((DEGRADED, "2 of 5 shards unavailable"), "Failed", "Current"),
    "RolledBack": ((DEGRADED, "candidate failed the gate"), "Failed", "Current"),
    "Failed": ((DEGRADED, "model artifact digest mismatch"), "Failed", "InProgress"),
    STALE: ((PROGRESSING, "Waiting for generation 5 to be observed"), "InProgress", "InProgress"),
}


def obj_for(case: str) -> dict:
    if case == STALE:
        # The spec changed (generation 5); the controller still reports the old one as Ready.
        return decision_model("Ready", generation=5, observed=4)
    return decision_model(case)


ARGO_RULES_SPLIT_KEY = argocd_cm_rules(argocd_cm()["data"])
ARGO_RULES_BLOCK = argocd_cm_rules(
    {
        "resource.customizations": "decisionmodel.io/DecisionModel:\n  health.lua: |\n"
        + "".join(f"    {line}\n" for line in LUA_HEALTH_CHECK.splitlines())
    }
)
FLUX_RULES = kustomization_rules(kustomization())


@pytest.mark.parametrize("rules", [ARGO_RULES_SPLIT_KEY, ARGO_RULES_BLOCK], ids=["split-key", "yaml-block"])
@pytest.mark.parametrize("case", list(TABLE))
def test_argocd_lua_check_gives_the_mapped_health(case: str, rules: HealthRules) -> None:
    verdict = rules.evaluate(obj_for(case))
    assert verdict is not None
    assert not verdict.failed, verdict.message
    assert (verdict.status, verdict.message) == TABLE[case][0]


@pytest.mark.parametrize("case", list(TABLE))
def test_flux_cel_expressions_give_the_mapped_health(case: str) -> None:
    verdict = FLUX_RULES.evaluate(obj_for(case))
    assert verdict is not None and not verdict.failed, verdict
    kstatus_word = TABLE[case][1]
    assert verdict.status == {"Current": HEALTHY, "InProgress": PROGRESSING, "Failed": DEGRADED}[kstatus_word]
    assert verdict.source == "Kustomization flux-system/support-router healthCheckExprs[0]"


@pytest.mark.parametrize("case", list(TABLE))
def test_kstatus_alone_reads_ready_true_as_current(case: str) -> None:
    status, _ = kstatus(obj_for(case))
    assert status == TABLE[case][2]


# With no rule on the Kustomization, the portal's rule (an admin's Lua check) still knows
# better than kstatus; where they differ, the disagreement says so.
PORTAL_LUA = HealthRules().with_portal_rules([PortalRule(GROUP, KIND, lua=LUA_HEALTH_CHECK)])
FLUX_DISAGREEMENTS = {
    "Starting": "Flux: Current, but DecisionModel support-router is Starting",
    "Evaluating": "Flux: Current, but DecisionModel support-router is Evaluating",
    "Promoting": "Flux: Current, but DecisionModel support-router is Promoting",
    "AwaitingPromotion": "Flux: Current, but DecisionModel support-router is AwaitingPromotion: "
    "awaiting manual promotion",
    "Degraded": "Flux: Current, but DecisionModel support-router is Degraded: 2 of 5 shards unavailable",
    "RolledBack": "Flux: Current, but DecisionModel support-router is RolledBack: candidate failed the gate",
    "Failed": "Flux: InProgress, but DecisionModel support-router is Failed: model artifact digest mismatch",
}


@pytest.mark.parametrize("case", list(TABLE))
def test_disagreement_between_kstatus_and_the_rule(case: str) -> None:
    obj = obj_for(case)
    tool_status, _ = kstatus(obj)
    disagreement = health_disagreement(obj, tool=FLUX, tool_status=tool_status, verdict=PORTAL_LUA.evaluate(obj))
    if case not in FLUX_DISAGREEMENTS:
        assert disagreement is None
        return
    assert disagreement is not None
    assert disagreement.sentence == FLUX_DISAGREEMENTS[case]
    assert disagreement.tool_status == tool_status
    assert disagreement.rule_status == TABLE[case][0][0]
    assert disagreement.attention == DEGRADED


def test_disagreement_from_a_cel_portal_rule_names_the_phase() -> None:
    rules = HealthRules().with_portal_rules(
        [PortalRule(GROUP, KIND, cel=HealthCheckExprs.from_spec(HEALTH_CHECK_EXPRS))]
    )
    obj = decision_model("RolledBack")
    disagreement = health_disagreement(obj, tool=FLUX, tool_status="Current", verdict=rules.evaluate(obj))
    assert disagreement is not None
    assert disagreement.sentence == "Flux: Current, but DecisionModel support-router is RolledBack"


def test_argocd_without_a_check_gives_no_health_and_the_rule_disagrees() -> None:
    obj = decision_model("RolledBack")
    disagreement = health_disagreement(obj, tool=ARGO_CD, tool_status="", verdict=PORTAL_LUA.evaluate(obj))
    assert disagreement is not None
    assert (
        disagreement.sentence
        == "Argo CD: no health, but DecisionModel support-router is RolledBack: candidate failed the gate"
    )


def test_a_stale_generation_reads_as_the_rule_s_verdict_not_as_its_old_phase() -> None:
    rule = 'return {status = "Progressing", message = "Waiting for the operator to observe generation 5"}'
    rules = HealthRules().with_portal_rules([PortalRule(GROUP, KIND, lua=rule)])
    obj = decision_model("Ready", generation=5, observed=4, name="stale-gen")
    disagreement = health_disagreement(obj, tool=ARGO_CD, tool_status="", verdict=rules.evaluate(obj))
    assert disagreement is not None
    assert disagreement.sentence == (
        "Argo CD: no health, but DecisionModel stale-gen: Progressing — "
        "Waiting for the operator to observe generation 5"
    )
    # Once observed, the phase is the object's own word again.
    caught_up = decision_model("RolledBack", generation=5, observed=5, name="stale-gen")
    said = health_disagreement(caught_up, tool=ARGO_CD, tool_status="", verdict=PORTAL_LUA.evaluate(caught_up))
    assert said is not None
    assert said.sentence.endswith("DecisionModel stale-gen is RolledBack: candidate failed the gate")


def test_a_failed_or_unknown_rule_is_no_disagreement() -> None:
    broken = HealthRules().with_portal_rules([PortalRule(GROUP, KIND, lua="while true do end")])
    obj = decision_model("RolledBack")
    verdict = broken.evaluate(obj)
    assert verdict is not None and verdict.failed and verdict.status == UNKNOWN
    assert health_disagreement(obj, tool=FLUX, tool_status="Current", verdict=verdict) is None
    assert health_disagreement(obj, tool=FLUX, tool_status="Unknown", verdict=PORTAL_LUA.evaluate(obj)) is None


# "No health check for <kind>"


def test_argocd_with_no_rule_has_no_health_check_for_decisionmodel() -> None:
    assert missing_health_check(ARGO_CD, GROUP, KIND, argocd_cm_rules({})) == "No health check for DecisionModel"
    assert missing_health_check(ARGO_CD, GROUP, KIND, ARGO_RULES_SPLIT_KEY) is None
    assert missing_health_check(FLUX, GROUP, KIND, kustomization_rules(kustomization(healthCheckExprs=[]))) == (
        "No health check for DecisionModel"
    )
    assert missing_health_check(FLUX, GROUP, KIND, FLUX_RULES) is None
    # A portal rule covers the kind for either tool.
    assert missing_health_check(ARGO_CD, GROUP, KIND, PORTAL_LUA) is None


@pytest.mark.parametrize(
    ("tool", "group", "kind"),
    [
        (ARGO_CD, "", "ConfigMap"),  # not a custom kind
        (ARGO_CD, "apps", "Deployment"),
        (ARGO_CD, "argoproj.io", "Rollout"),  # bundled Lua check
        (ARGO_CD, "cert-manager.io", "Certificate"),
        (ARGO_CD, "ec2.aws.crossplane.io", "Instance"),  # bundled wildcard _.crossplane.io/_
        (ARGO_CD, "argoproj.io", "Workflow"),  # Go check
        (FLUX, "kustomize.toolkit.fluxcd.io", "Kustomization"),
        (FLUX, "policy", "PodDisruptionBudget"),
    ],
)
def test_built_in_checks_are_not_missing(tool: str, group: str, kind: str) -> None:
    assert missing_health_check(tool, group, kind, HealthRules()) is None  # type: ignore[arg-type]


def test_argocd_has_no_check_for_an_unknown_custom_kind_of_a_known_group() -> None:
    assert missing_health_check(ARGO_CD, "cert-manager.io", "Order", HealthRules()) == "No health check for Order"


# Reading argocd-cm the way Argo CD does


def test_split_key_wins_over_the_yaml_block_and_wildcards_come_after_exact_keys() -> None:
    exact = 'return {status = "Healthy", message = "exact"}'
    block = 'return {status = "Degraded", message = "block"}'
    wild = 'return {status = "Suspended", message = "wildcard"}'
    rules = argocd_cm_rules(
        {
            "resource.customizations": (
                f'"*.decisionmodel.io/*":\n  health.lua: |\n    {wild}\n'
                f"decisionmodel.io/DecisionModel:\n  health.lua: |\n    {block}\n"
            ),
            "resource.customizations.health.decisionmodel.io_DecisionModel": exact,
        }
    )
    assert rules.evaluate(decision_model("Ready")).message == "exact"  # type: ignore[union-attr]
    other = decision_model("Ready") | {"apiVersion": "serving.decisionmodel.io/v1", "kind": "Endpoint"}
    verdict = rules.evaluate(other)
    assert verdict is not None and verdict.message == "wildcard"
    assert verdict.source == "argocd-cm resource.customizations *.decisionmodel.io/*"


def test_core_kind_key_and_use_open_libs() -> None:
    script = 'return {status = "Healthy", message = string.upper(obj.kind)}'
    closed = argocd_cm_rules({"resource.customizations.health.PersistentVolumeClaim": script})
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}}
    verdict = closed.evaluate(pvc)
    # Argo CD opens no string library unless asked.
    assert verdict is not None and verdict.failed and "string" in verdict.message
    opened = argocd_cm_rules(
        {
            "resource.customizations.health.PersistentVolumeClaim": script,
            "resource.customizations.useOpenLibs.PersistentVolumeClaim": "true",
        }
    )
    verdict = opened.evaluate(pvc)
    assert verdict is not None and (verdict.status, verdict.message) == (HEALTHY, "PERSISTENTVOLUMECLAIM")


def test_bad_argocd_cm_entries_are_reported_not_raised() -> None:
    rules = argocd_cm_rules(
        {
            "resource.customizations": "decisionmodel.io/DecisionModel: [unclosed",
            "resource.customizations.health.a_b_c": "return {}",
            "resource.customizations.ignoreDifferences.apps_Deployment": "jsonPointers: [/spec/replicas]",
        }
    )
    assert rules.rules == ()
    assert rules.errors == (
        "argocd-cm resource.customizations is not valid YAML",
        "argocd-cm key resource.customizations.health.a_b_c: group kind should be <group>_<kind> or <kind>",
    )


def test_kustomization_entry_without_kind_covers_the_whole_group() -> None:
    rules = kustomization_rules(
        kustomization(healthCheckExprs=[{"apiVersion": "decisionmodel.io/v1", "current": "true"}])
    )
    assert rules.covers(GROUP, "Endpoint") and rules.covers(GROUP, KIND)
    assert not rules.covers("other.io", KIND)
    # The version in apiVersion is not compared: Flux matches group and kind.
    verdict = rules.evaluate(decision_model("Ready") | {"apiVersion": "decisionmodel.io/v2"})
    assert verdict is not None and verdict.status == HEALTHY


def test_an_object_no_rule_covers_has_no_verdict() -> None:
    assert FLUX_RULES.evaluate({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}) is None
