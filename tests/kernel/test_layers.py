"""The layer contracts of DESIGN.md (pyproject.toml [tool.importlinter]) hold on this tree, and
break when one forbidden import is added: run lint-imports on a copy of the packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("tree")
    shutil.copy(ROOT / "pyproject.toml", copy)
    for package in ("portal", "gitops", "forges"):
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _add_import(module: Path, line: str) -> str:
    before = module.read_text()
    module.write_text(before + f"\n{line}  # noqa\n")
    return before


@pytest.mark.parametrize(
    ("module", "forbidden", "message"),
    [
        ("gitops/kinds.py", "import forges.pins", "gitops is not allowed to import forges"),
        ("portal/kernel/catalog/models.py", "import gitops.models", "portal.kernel is not allowed to import gitops"),
        ("portal/delivery/models.py", "import portal.web.cells", "portal.delivery is not allowed to import portal.web"),
        ("portal/web/cells.py", "import portal.api.base_views", "portal.web is not allowed to import portal.api"),
        ("portal/kernel/links.py", "import forges.repourls", "portal.kernel is not allowed to import forges"),
        ("gitops/tasks.py", "import portal.celery", "gitops is not allowed to import portal.celery"),
    ],
)
def test_a_forbidden_import_breaks_the_contracts(tree: Path, module: str, forbidden: str, message: str) -> None:
    target = tree / module
    before = _add_import(target, forbidden)
    try:
        result = _lint_imports(tree)
    finally:
        target.write_text(before)
    assert result.returncode == 1, result.stdout
    assert "BROKEN" in result.stdout
    assert message in result.stdout


def test_the_tree_keeps_the_contracts(tree: Path) -> None:
    result = _lint_imports(tree)
    assert result.returncode == 0, result.stdout
    assert "0 broken" in result.stdout
