"""The shape rules of docs/architecture.md, checked on the tree: no module over 550 lines, no
function over 80, no environment read outside portal/settings.py, no two modules with one name.

Each rule is a function over a folder, so each is also shown to fail on a small tree that
breaks it.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("portal", "gitops", "forges")
MAX_MODULE_LINES = 550
MAX_FUNCTION_LINES = 80

# Names Django and Celery look for by convention, one per app; a management command's file name
# is the command's name; a page module in portal/web/views/ is named after its page.
CONVENTIONAL = frozenset({"__init__", "apps", "models", "admin", "urls", "views", "tasks", "forms"})
SETTINGS = Path("portal/settings.py")
# Entry points of the shell may name the settings module before Django starts (a write).
SHELL_ENTRY_POINTS = frozenset({Path("portal/wsgi.py"), Path("portal/celery.py"), Path("portal/embedded.py")})


def modules(root: Path) -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path.relative_to(root)


def long_modules(root: Path) -> list[str]:
    return [f"{path}: {lines} lines" for path in modules(root)
            if (lines := (root / path).read_text().count("\n")) > MAX_MODULE_LINES]


def long_functions(root: Path) -> list[str]:
    found = []
    for path in modules(root):
        for node in ast.walk(ast.parse((root / path).read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path}:{node.lineno} {node.name}: {length} lines")
    return found


def environment_reads(root: Path) -> list[str]:
    found = []
    for path in modules(root):
        if path == SETTINGS:
            continue
        tree = ast.parse((root / path).read_text())
        allowed = set()
        if path in SHELL_ENTRY_POINTS:
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "setdefault"):
                    allowed.add(id(node.func.value))
        for node in ast.walk(tree):
            if id(node) in allowed:
                continue
            reads = (
                (isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "environb"}
                 and isinstance(node.value, ast.Name) and node.value.id == "os")
                or (isinstance(node, ast.ImportFrom) and node.module == "os"
                    and any(alias.name in {"environ", "getenv"} for alias in node.names))
            )
            if reads:
                found.append(f"{path}:{node.lineno}")
    return found


def repeated_names(root: Path) -> list[str]:
    places: dict[str, list[str]] = defaultdict(list)
    for path in modules(root):
        parts = path.parts
        if "management" in parts:  # management/commands/<command>.py: the command's name
            continue
        if parts[:3] == ("portal", "web", "views"):
            continue
        name = path.stem if path.stem != "__init__" else path.parent.name
        if path.stem in CONVENTIONAL and path.stem != "__init__":
            continue
        places[name].append(str(path))
    return [f"{name}: {', '.join(paths)}" for name, paths in sorted(places.items()) if len(paths) > 1]


RULES = {
    "modules over 550 lines": long_modules,
    "functions over 80 lines": long_functions,
    "environment reads outside portal/settings.py": environment_reads,
    "modules sharing a name": repeated_names,
}


@pytest.mark.parametrize("rule", list(RULES))
def test_the_tree_keeps_the_rule(rule: str) -> None:
    assert RULES[rule](ROOT) == [], rule


def _write(root: Path, path: str, text: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_each_rule_fails_on_a_tree_that_breaks_it(tmp_path: Path) -> None:
    _write(tmp_path, "portal/settings.py", "import os\nDEBUG = os.environ.get('DEBUG')\n")
    _write(tmp_path, "portal/wsgi.py", "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'x')\n")
    _write(tmp_path, "gitops/big.py", "x = 1\n" * 551)
    body = "".join(f"    y = {i}\n" for i in range(80))
    _write(tmp_path, "forges/long.py", f"def f():\n{body}")
    _write(tmp_path, "gitops/reads_env.py", "from os import getenv\n")
    _write(tmp_path, "forges/sneaky.py", "import os\nTOKEN = os.environ['TOKEN']\n")
    _write(tmp_path, "gitops/findings.py", "")
    _write(tmp_path, "portal/api/findings.py", "")
    _write(tmp_path, "portal/web/views/findings.py", "")
    _write(tmp_path, "gitops/models.py", "")
    _write(tmp_path, "forges/models.py", "")

    assert long_modules(tmp_path) == ["gitops/big.py: 551 lines"]
    assert long_functions(tmp_path) == ["forges/long.py:1 f: 81 lines"]
    assert environment_reads(tmp_path) == ["gitops/reads_env.py:1", "forges/sneaky.py:2"]
    assert repeated_names(tmp_path) == ["findings: portal/api/findings.py, gitops/findings.py"]


def bench_imports(root: Path) -> list[str]:
    """Tests that import a benchmark's module (bench/ may use tests/fakes, never the other way)."""
    bench = {path.stem for path in (root / "bench").glob("*.py")} | {"bench"}
    found = []
    for path in sorted((root / "tests").rglob("*.py")):
        if path.name == Path(__file__).name:  # this module spells the patterns it looks for
            continue
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            if any(name.split(".")[0] in bench for name in names):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
        if re.search(r"sys\.path\.insert\([^)]*bench|spec_from_file_location\([^)]*bench", text):
            found.append(f"{path.relative_to(root)}: loads a file of bench/")
    return found


def test_no_test_imports_bench() -> None:
    assert bench_imports(ROOT) == []


def test_importing_bench_from_a_test_is_found(tmp_path: Path) -> None:
    _write(tmp_path, "bench/fleet.py", "")
    _write(tmp_path, "tests/test_x.py", "from fleet import build_fleet\n")
    _write(tmp_path, "tests/test_y.py", "sys.path.insert(0, str(ROOT / 'bench'))\n")
    assert bench_imports(tmp_path) == ["tests/test_x.py:1", "tests/test_y.py: loads a file of bench/"]
