"""forges.pins.retag against the cases taken from Flux, Renovate, kustomize and argocd-image-updater."""

import json
from pathlib import Path

import pytest

from forges.pins import find, retag, retag_with_reason

CASES = json.loads((Path(__file__).parent.parent / "data" / "pin_cases_upstream.json").read_text(encoding="utf-8"))


def test_all_upstream_cases_are_loaded():
    assert len(CASES) == 31


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_case(case):
    args = (case["before"], case["file_name"], case["image"], case["from_tag"], case["to_tag"])
    result = retag_with_reason(*args)
    if case.get("expect_unchanged"):
        assert result.text == case["before"]
        assert not result.changed
        assert result.reason
    else:
        assert result.text == case["expect_after"], result.reason
        changed = [p.line for p in result.locations]
        assert changed == case["changed_lines"]
    assert retag(*args) == result.text


@pytest.mark.parametrize("case", [c for c in CASES if not c.get("expect_unchanged")], ids=lambda c: c["name"])
def test_upstream_case_pins_are_found_at_the_changed_lines(case):
    pins = find({case["file_name"]: case["before"]}, case["image"], case["from_tag"])
    assert sorted(p.line for p in pins if not p.digest_pinned) == case["changed_lines"]
