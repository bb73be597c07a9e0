"""Flux's own healthCheckExprs test cases (tests/data/flux_cel: fluxcd/pkg runtime/cel, with
their licence and source commits) through the portal's CEL rules: the same status for every
case, and an expression error is a failed rule (Unknown), never a verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops.health.cel import HealthCheckExprs, evaluate_cel

DATA = yaml.safe_load((Path(__file__).parents[1] / "data" / "flux_cel" / "fluxcd-pkg-runtime-cel.yaml").read_text())
CASES = DATA["cases"]


def test_the_cases_are_flux_s_whole_tables() -> None:
    assert len(CASES) == 30
    assert {case["source"] for case in CASES} == set(DATA["sources"])


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_flux_case(case: dict[str, Any]) -> None:
    exprs = {"apiVersion": case["object"].get("apiVersion", "v1"), "kind": case["object"].get("kind", ""),
             **case["exprs"]}
    outcome = evaluate_cel(HealthCheckExprs.from_spec(exprs), case["object"])
    assert outcome.status == case["expect"], outcome.message
    assert outcome.failed is ("flux_error" in case or case["expect"] == "Unknown")
