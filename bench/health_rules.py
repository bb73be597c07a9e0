"""Health-rule benchmark: what judging custom resources by a rule costs per object.

1,000 DecisionModels (issue 22's operator, every phase and some stale generations) judged
by the Argo CD Lua check from argocd-cm and by the Flux healthCheckExprs (CEL), each
through `HealthRules.evaluate` as a poll would call it, against kstatus alone (no rule).
Every Lua evaluation gets a fresh sandboxed Lua runtime; CEL expressions are parsed once
and cached, as in a poll that sees the same Kustomization again.

    .venv/bin/python bench/health_rules.py [--objects 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitops.health import argocd_cm_rules, kstatus, kustomization_rules  # noqa: E402
from tests.gitops.decisionmodel import ALL_PHASES, argocd_cm, decision_model, kustomization  # noqa: E402


def fleet(count: int) -> list[dict[str, Any]]:
    objects = []
    for i in range(count):
        phase = ALL_PHASES[i % len(ALL_PHASES)]
        stale = i % 13 == 0
        objects.append(decision_model(phase, generation=5 if stale else 4, name=f"model-{i:04d}"))
    return objects


def timed(label: str, objects: list[dict[str, Any]], judge: Callable[[dict[str, Any]], Any], repeat: int) -> None:
    best = float("inf")
    verdicts: Counter[str] = Counter()
    for _ in range(repeat):
        verdicts.clear()
        started = time.perf_counter()
        for obj in objects:
            verdicts[judge(obj)] += 1
        best = min(best, time.perf_counter() - started)
    per_object = best * 1000 / len(objects)
    summary = ", ".join(f"{word} {n}" for word, n in sorted(verdicts.items()))
    print(f"{label:<28} {per_object:8.3f} ms/object  {best * 1000:8.1f} ms total  ({summary})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    objects = fleet(args.objects)
    lua_rules = argocd_cm_rules(argocd_cm()["data"])
    cel_rules = kustomization_rules(kustomization())

    def by_lua(obj: dict[str, Any]) -> str:
        verdict = lua_rules.evaluate(obj)
        assert verdict is not None and not verdict.failed, verdict
        return verdict.status

    def by_cel(obj: dict[str, Any]) -> str:
        verdict = cel_rules.evaluate(obj)
        assert verdict is not None and not verdict.failed, verdict
        return verdict.status

    print(f"{len(objects)} DecisionModels, best of {args.repeat}")
    timed("kstatus (no rule)", objects, lambda obj: kstatus(obj)[0], args.repeat)
    timed("Argo CD Lua (argocd-cm)", objects, by_lua, args.repeat)
    timed("Flux CEL (healthCheckExprs)", objects, by_cel, args.repeat)


if __name__ == "__main__":
    main()
