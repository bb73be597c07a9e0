"""Flux healthCheckExprs in the CEL sandbox (gitops.health.cel): Flux's evaluation order,
and invalid, very large or runaway expressions yielding "rule failed" in bounded time."""

from __future__ import annotations

import time

import pytest

from gitops.health.cel import CelLimits, HealthCheckExprs, evaluate_cel
from tests.gitops.decisionmodel import API_VERSION, KIND, decision_model

OBJ = decision_model("Ready")
BOUND_SECONDS = 5.0


def exprs(current: str, *, failed: str = "", in_progress: str = "") -> HealthCheckExprs:
    return HealthCheckExprs(API_VERSION, KIND, current, in_progress, failed)


def test_order_is_in_progress_then_failed_then_current_else_in_progress() -> None:
    assert evaluate_cel(exprs("true", failed="true", in_progress="true"), OBJ).status == "InProgress"
    assert evaluate_cel(exprs("true", failed="true"), OBJ).status == "Failed"
    assert evaluate_cel(exprs("true", failed="false"), OBJ).status == "Current"
    assert evaluate_cel(exprs("false", failed="false", in_progress="false"), OBJ).status == "InProgress"


def test_generation_not_observed_is_in_progress_before_any_expression() -> None:
    stale = decision_model("Ready", generation=5, observed=4)
    assert evaluate_cel(exprs("true"), stale).status == "InProgress"
    odd = decision_model("Ready")
    odd["status"]["observedGeneration"] = "4"
    outcome = evaluate_cel(exprs("true"), odd)
    assert outcome.failed and "status.observedGeneration" in outcome.message


def _nested(depth: int) -> str:
    """``depth`` comprehensions over ten items, nested: 10 ** depth evaluations of ``true``."""
    names = "abcdefghij"
    return "".join(f"[1,2,3,4,5,6,7,8,9,10].all({names[i]}, " for i in range(depth)) + "true" + ")" * depth


HOSTILE = {
    "invalid syntax": (
        exprs("status.phase == 'Ready' &&"),
        "rule failed: failed to parse the expression current: syntax error",
    ),
    "very large": (exprs("true && " * 1000 + "true"), "rule failed: expression current is longer than 4096 characters"),
    "nested too deeply": (exprs("(" * 1500 + "true" + ")" * 1500), "rule failed: failed to"),
    "missing field": (
        exprs("status.nothing == 'x'"),
        "rule failed: failed to evaluate the expression current: no such member",
    ),
    "not a boolean": (exprs("status.phase"), "rule failed: expression current is not a boolean"),
    "current missing": (exprs(""), "rule failed: expression current not specified"),
    # 10 ** 8 evaluations of the innermost body: no limit, no end.
    "runaway comprehension": (exprs(_nested(8) + " || true"), "rule failed: expression current: "),
    "error in failed after a false inProgress": (
        exprs("true", in_progress="false", failed="1 / 0 == 1"),
        "rule failed: failed to evaluate the expression failed",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_bad_expressions_fail_the_rule_in_bounded_time(case: str) -> None:
    rule, expected = HOSTILE[case]
    started = time.monotonic()
    outcome = evaluate_cel(rule, OBJ)
    assert outcome.failed and outcome.status == "Unknown"
    assert outcome.message.startswith(expected), outcome.message
    assert time.monotonic() - started < BOUND_SECONDS


def test_step_limit_counts_macro_bodies() -> None:
    rule = exprs(_nested(4))
    outcome = evaluate_cel(rule, OBJ, limits=CelLimits(max_steps=1000, timeout_seconds=600))
    assert (
        outcome.failed and outcome.message == "rule failed: expression current: evaluation step limit exceeded (1000)"
    )


def test_wall_clock_limit_backs_the_step_limit() -> None:
    rule = exprs(_nested(6))
    outcome = evaluate_cel(rule, OBJ, limits=CelLimits(max_steps=10**9, timeout_seconds=0.05))
    assert outcome.failed and outcome.message == "rule failed: expression current: time limit exceeded"


def test_from_spec_reads_the_kustomization_fields() -> None:
    rule = HealthCheckExprs.from_spec(
        {"apiVersion": API_VERSION, "kind": KIND, "current": "a", "inProgress": "b", "failed": "c"}
    )
    assert (rule.group, rule.kind, rule.current, rule.in_progress, rule.failed) == (
        "decisionmodel.io",
        KIND,
        "a",
        "b",
        "c",
    )


def test_the_time_limit_is_the_rules_not_each_expressions() -> None:
    """inProgress, failed and current share one allowance: three expressions that each take
    about 60 % of the limit stop the rule at the limit, not at 180 % of it (Flux's timeout covers
    the health check, not each of its expressions)."""
    slow = _nested(4) + " && false"  # 10,000 evaluations, then false: the next expression runs
    # Parsed once before timing: parsing is outside the rule's clock (Flux compiles first), so
    # timing it here would make the limit below too generous for three evaluations.
    evaluate_cel(exprs(slow), OBJ, limits=CelLimits(max_steps=10**9, timeout_seconds=600))
    started = time.monotonic()
    alone = evaluate_cel(exprs(slow), OBJ, limits=CelLimits(max_steps=10**9, timeout_seconds=600))
    one = time.monotonic() - started
    assert not alone.failed
    limit = one / 0.6
    started = time.monotonic()
    outcome = evaluate_cel(exprs(slow, failed=slow, in_progress=slow), OBJ,
                           limits=CelLimits(max_steps=10**9, timeout_seconds=limit))
    elapsed = time.monotonic() - started
    assert outcome.failed and outcome.message.endswith("time limit exceeded"), outcome.message
    assert elapsed < limit + 0.25 * one + 0.2, (elapsed, limit)


def test_parsing_is_not_charged_to_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Flux compiles a rule's expressions when it builds the evaluator; the limit is the
    evaluation's. The first parse in a process also builds celpy's grammar (a few hundred ms,
    more on a busy machine), which would otherwise fail a first rule. Here building the grammar
    takes twice the default 1 s limit."""
    import celpy

    from gitops.health import cel

    def slow_environment() -> celpy.Environment:
        time.sleep(2.0)
        return celpy.Environment()

    monkeypatch.setattr(cel, "_environment", slow_environment)
    cel._compile.cache_clear()
    try:
        outcome = evaluate_cel(exprs("status.phase == 'Ready'", failed="status.phase == 'Failed'"), OBJ)
    finally:
        cel._compile.cache_clear()  # nothing parsed by the slow environment outlives the test
    assert (outcome.status, outcome.failed) == ("Current", False), outcome.message
