"""Events travel down as rows, never as a signal whose receivers answer back (issue 35).

Read from the source (ast), not run: no gitops module uses what a signal's `send` returns (the
receivers' answers), and portal.delivery defines no Django signal (its announcements are
DeliveryEvent rows)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SENDS = {"send", "send_robust"}


def modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts)


def answered_sends(tree: ast.AST) -> list[int]:
    """Lines of `<x>.send(...)` / `<x>.send_robust(...)` calls whose result is used: anything but
    a call standing alone as a statement (assigned, iterated, returned, passed on, compared)."""
    alone = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SENDS
        and id(node) not in alone
    ]


def defined_signals(tree: ast.AST) -> list[int]:
    """Lines that make a Django signal: `Signal(...)` or `ModelSignal(...)`, however imported."""
    names = {"Signal", "ModelSignal"}
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ((isinstance(node.func, ast.Name) and node.func.id in names)
             or (isinstance(node.func, ast.Attribute) and node.func.attr in names))
    ]


@pytest.mark.parametrize("path", modules("gitops"), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_gitops_module_uses_what_a_signal_send_returns(path: Path):
    lines = answered_sends(ast.parse(path.read_text(), str(path)))
    assert not lines, f"{path.relative_to(ROOT)}:{lines}: a signal's receivers may not answer back"


def test_portal_delivery_defines_no_signal():
    found = {str(p.relative_to(ROOT)): lines for p in modules("portal/delivery")
             if (lines := defined_signals(ast.parse(p.read_text(), str(p))))}
    assert not found, f"delivery announces through rows (DeliveryEvent), not signals: {found}"


@pytest.mark.parametrize(
    ("source", "answered"),
    [
        ("cluster_stored.send(sender=None, cluster=c)", []),
        ("for _, answer in finding_context.send(sender=None):\n    pass", [1]),
        ("answers = finding_context.send_robust(sender=None)", [1]),
        ("def f():\n    return finding_context.send(sender=None)", [2]),
        ("merge(finding_context.send(sender=None))", [1]),
    ],
)
def test_the_scan_tells_an_answered_send(source: str, answered: list[int]):
    assert answered_sends(ast.parse(source)) == answered


def test_the_scan_tells_a_defined_signal():
    assert defined_signals(ast.parse("from django.dispatch import Signal\nrollback_offered = Signal()\n")) == [2]
    assert defined_signals(ast.parse("import django.dispatch\nx = django.dispatch.Signal()\n")) == [2]
    assert defined_signals(ast.parse("x = make()\n")) == []
