"""Nothing below the pages names one of the portal's URLs: delivery, releases, gitops and forges
(and findings, the layer between delivery and the pages) get the portal's own links from
portal.kernel.links (`preview_url`, `app_page_path`), the one place that reverses URL names for
them. Read from the source with `ast`, so an import under another name is caught too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BELOW_PAGES = ("portal/findings", "portal/delivery", "portal/releases", "gitops", "forges")
URL_CALLS = {"reverse", "reverse_lazy", "redirect", "resolve_url"}
URL_MODULES = {"django.urls", "django.shortcuts"}


def _modules() -> list[Path]:
    found = []
    for package in BELOW_PAGES:
        folder = ROOT / package
        if folder.is_dir():
            found += sorted(p for p in folder.rglob("*.py") if "migrations" not in p.parts)
    return found


def url_uses(source: str) -> list[str]:
    """Each place `source` imports a URL helper or calls one by name, as "line: what"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in URL_MODULES:
            names = [alias.name for alias in node.names if alias.name in URL_CALLS or alias.name == "*"]
            if names:
                found.append(f"{node.lineno}: from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {alias.name}" for alias in node.names if alias.name in URL_MODULES]
        elif isinstance(node, ast.Call):
            func = node.func
            # `reverse(...)`, or `urls.reverse(...)`; a list's own `.reverse()` is no URL.
            if isinstance(func, ast.Name) and func.id in URL_CALLS:
                found.append(f"{node.lineno}: {func.id}(...)")
            elif (isinstance(func, ast.Attribute) and func.attr in URL_CALLS and isinstance(func.value, ast.Name)
                  and func.value.id in {"urls", "shortcuts"}):
                found.append(f"{node.lineno}: {func.value.id}.{func.attr}(...)")
    return found


def test_the_scan_sees_what_it_must_refuse() -> None:
    assert url_uses("from django.urls import reverse\nreverse('pr-preview')\n") == [
        "1: from django.urls import reverse", "2: reverse(...)"]
    assert url_uses("from django import urls\nurls.reverse('gitops')\n") == ["2: urls.reverse(...)"]
    assert url_uses("from django.shortcuts import redirect\n") == ["1: from django.shortcuts import redirect"]
    assert url_uses("rows = [3, 1]\nrows.reverse()\nsorted(rows, reverse=True)\n") == []


def test_no_module_below_the_pages_reverses_a_url() -> None:
    modules = _modules()
    assert len(modules) > 100  # the scan reads the packages, not an empty list
    found = {str(path.relative_to(ROOT)): uses for path in modules if (uses := url_uses(path.read_text()))}
    assert found == {}, "ask portal.kernel.links for the portal's own URLs"
