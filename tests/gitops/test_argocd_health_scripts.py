"""Argo CD's own health scripts, with their own ``health_test.yaml`` cases, run through the
portal's rules: the status and message must be exactly what Argo CD's ``TestLuaHealthScript``
expects. The scripts and objects are copied from Argo CD (see tests/data/argocd_health/README.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gitops.health.rules import HealthRules, argocd_cm_rules

DATA = Path(__file__).resolve().parent.parent / "data" / "argocd_health"


class _JSONLikeLoader(yaml.SafeLoader):
    """YAML read as sigs.k8s.io/yaml reads it for Argo CD's test: timestamps stay strings."""


_JSONLikeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _load(path: Path) -> Any:
    # Like yaml.Unmarshal in Go: the first document of the file (some of Argo CD's hold more).
    documents = yaml.load_all(path.read_text(encoding="utf-8"), Loader=_JSONLikeLoader)  # noqa: S506 - a SafeLoader
    return next(documents)


def _field(mapping: dict[str, Any], name: str) -> Any:
    # Go's JSON decoding (behind sigs.k8s.io/yaml) matches field names case-insensitively:
    # some of Argo CD's files say "inputpath".
    return next(value for key, value in mapping.items() if key.lower() == name.lower())


def _cases() -> list[Any]:
    cases = []
    for test_file in sorted(DATA.glob("*/*/health_test.yaml")):
        for test in _load(test_file)["tests"]:
            expected = _field(test, "healthStatus")
            input_path = _field(test, "inputPath")
            case_id = f"{test_file.parent.relative_to(DATA)}/{input_path}"
            cases.append(pytest.param(test_file.parent, input_path, expected, id=case_id))
    return cases


CASES = _cases()


def _builtin_rules() -> HealthRules:
    """Every copied script as argocd-cm would hold it, with the standard libraries built-in
    scripts get. The rule is chosen by the object's own kind, as Argo CD's test does: a few
    of its objects are of another kind than the directory they sit in."""
    data = {}
    for script in DATA.glob("*/*/health.lua"):
        group, kind = script.parent.parent.name, script.parent.name
        data[f"resource.customizations.health.{group}_{kind}"] = script.read_text(encoding="utf-8")
        data[f"resource.customizations.useOpenLibs.{group}_{kind}"] = "true"
    return argocd_cm_rules(data)


RULES = _builtin_rules()


@pytest.mark.parametrize(("script_dir", "input_path", "expected"), CASES)
def test_argocd_health_script_gives_argocds_own_expected_status(
    script_dir: Path, input_path: str, expected: dict[str, str]
) -> None:
    obj = _load(script_dir / input_path)
    verdict = RULES.evaluate(obj)
    assert verdict is not None, "the rule does not cover its own object"
    assert (verdict.status, verdict.message) == (expected.get("status", ""), expected.get("message", ""))
    assert not verdict.failed


def test_the_copied_suite_holds_the_scripts_issue_41_names() -> None:
    named = {
        "capabilities.3scale.net/" + kind
        for kind in (
            "ApplicationAuth",
            "Backend",
            "DeveloperAccount",
            "DeveloperUser",
            "OpenAPI",
            "Product",
            "ProxyConfigPromote",
        )
    } | {"gateway.networking.k8s.io/GatewayClass", "gateway.networking.k8s.io/HTTPRoute"}
    named.add("apps.kruise.io/AdvancedCronJob")
    present = {str(case.values[0].relative_to(DATA)) for case in CASES}
    assert named <= present
    assert len(present) > len(named)
