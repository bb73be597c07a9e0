"""Flux's ``healthCheckExprs``, evaluated the way kustomize-controller does, within bounds.

A Kustomization may carry ``spec.healthCheckExprs: [{apiVersion, kind, current,
inProgress?, failed?}]`` (RFC-0009, fluxcd/pkg ``runtime/cel``). For an object of that
group and kind, Flux's ``StatusEvaluator``:

1. when ``status.observedGeneration`` is present and differs from ``metadata.generation``
   → InProgress (a non-integer there is an error);
2. evaluates ``inProgress``, then ``failed``, then ``current``, each over the object's
   top-level fields as variables (``status``, ``metadata``, ``spec``, …); the first that
   is true gives InProgress, Failed or Current; an expression that errors (a missing
   field, say) or is not a boolean is an error;
3. none true → InProgress.

``current`` is required. The words are kstatus's (Current, InProgress, Failed); Flux gives
no message. cel-python (``celpy``) is a different implementation of the same language,
so an expression using a cel-go extension it lacks fails here as a rule failure rather
than silently differing.

Bounds: an expression longer than `CelLimits.max_expression_chars` is refused before
parsing; evaluation counts AST node visits (macros included, so nested comprehensions
over large lists are stopped) and checks a wall-clock deadline on the way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import Evaluator

from gitops.health.kstatus_rules import CURRENT, FAILED, IN_PROGRESS
from gitops.health.sandbox import NotPlainJSON, RuleOutcome, plain_json, rule_failed
from gitops.rawobjects import dig


@dataclass(frozen=True)
class CelLimits:
    max_expression_chars: int = 4096
    max_steps: int = 20_000  # AST node visits in one evaluation of one expression
    timeout_seconds: float = 1.0


DEFAULT_LIMITS = CelLimits()


@dataclass(frozen=True)
class HealthCheckExprs:
    """One entry of a Kustomization's ``spec.healthCheckExprs``."""

    api_version: str
    kind: str  # "" matches every kind of the group (kind is optional since Flux 2.6)
    current: str
    in_progress: str = ""
    failed: str = ""

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    @classmethod
    def from_spec(cls, entry: Mapping[str, Any]) -> HealthCheckExprs:
        def text(key: str) -> str:
            value = entry.get(key)
            return value if isinstance(value, str) else ""

        return cls(text("apiVersion"), text("kind"), text("current"), text("inProgress"), text("failed"))

    def covers(self, group: str, kind: str) -> bool:
        # Flux matches on GroupKind: the version in apiVersion is not compared.
        return self.group == group and (not self.kind or self.kind == kind)


class _LimitExceeded(BaseException):
    # A BaseException on purpose: celpy turns Exceptions raised inside ``||``, ``&&`` and
    # macros into values it may short-circuit past; a limit must end the evaluation.
    pass


class _Budget:
    """One rule's allowance, shared by its expressions (inProgress, failed, current) and the
    object's conversion: the rule's time limit is the rule's, not each expression's. The clock is
    read every 64 node visits: a visit can be slow (a string or list built anew), and reading it
    costs far less than one."""

    def __init__(self, limits: CelLimits) -> None:
        self.steps_left = limits.max_steps
        self.deadline = time.monotonic() + limits.timeout_seconds
        self.max_steps = limits.max_steps

    def spend(self) -> None:
        self.steps_left -= 1
        if self.steps_left < 0:
            raise _LimitExceeded(f"evaluation step limit exceeded ({self.max_steps})")
        if self.steps_left % 64 == 0:
            self.check_clock()

    def check_clock(self) -> None:
        if time.monotonic() > self.deadline:
            raise _LimitExceeded("time limit exceeded")


class _BoundedEvaluator(Evaluator):
    """celpy's tree-walking evaluator, charging every node visit to a shared budget."""

    def __init__(self, ast: lark.Tree, activation: Any, budget: _Budget) -> None:
        super().__init__(ast, activation=activation)
        self.budget = budget

    def visit(self, tree: lark.Tree) -> Any:
        self.budget.spend()
        return super().visit(tree)

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        return _BoundedEvaluator(ast, self.activation, self.budget)


_environment_lock = threading.Lock()


@lru_cache(maxsize=1)
def _environment() -> celpy.Environment:
    return celpy.Environment()


@lru_cache(maxsize=512)
def _compile(expression: str) -> tuple[lark.Tree, Any]:
    """The parsed expression and a runner (for its base activation); raises on bad syntax."""
    with _environment_lock:  # the lark parser keeps per-parse state
        environment = _environment()
        ast = environment.compile(expression)
        return ast, environment.program(ast)


class CelRuleError(ValueError):
    """An expression that cannot be used: too long, not CEL, erroring, or not a boolean."""


def _evaluate_boolean(name: str, expression: str, variables: dict[str, Any], limits: CelLimits,
                      budget: _Budget) -> bool:
    if len(expression) > limits.max_expression_chars:
        raise CelRuleError(f"expression {name} is longer than {limits.max_expression_chars} characters")
    try:
        ast, runner = _compile(expression)
    except (celpy.CELParseError, lark.exceptions.LarkError, RecursionError) as exc:
        column = getattr(exc, "column", None)
        where = f" at column {column}" if isinstance(column, int) and column > 0 else ""
        detail = "nested too deeply" if isinstance(exc, RecursionError) else f"syntax error{where}"
        raise CelRuleError(f"failed to parse the expression {name}: {detail}") from None
    evaluator = _BoundedEvaluator(ast, runner.new_activation(), budget)
    try:
        budget.check_clock()  # what the expressions before this one spent counts
        value = evaluator.evaluate(variables)
    except _LimitExceeded as exc:
        raise CelRuleError(f"expression {name}: {exc}") from None
    except Exception as exc:  # celpy raises CELEvalError, TypeError, RecursionError, …
        raise CelRuleError(f"failed to evaluate the expression {name}: {_first_line(exc)}") from None
    if not isinstance(value, celtypes.BoolType):
        raise CelRuleError(f"expression {name} is not a boolean")
    return bool(value)


def _first_line(exc: BaseException) -> str:
    text = str(exc.args[0]) if exc.args else type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


def _int64_field(document: Mapping[str, Any], *path: str) -> int | None:
    # unstructured.NestedInt64: absent is fine, anything but an integer is an error.
    value = dig(document, *path)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise CelRuleError(f"{'.'.join(path)} accessor error: {value!r} is not an integer")


def _parse_ahead(rule: HealthCheckExprs, limits: CelLimits) -> None:
    """Parse the rule's expressions before its clock starts: Flux compiles them once, when it
    builds the evaluator, and the time limit is the evaluation's. The first parse in a process
    also builds celpy's grammar, which alone can take longer than the limit on a busy machine.
    A parse error is left for `_evaluate_boolean` to report where it does today."""
    for expression in (rule.in_progress, rule.failed, rule.current):
        if expression and len(expression) <= limits.max_expression_chars:
            try:
                _compile(expression)
            except (celpy.CELParseError, lark.exceptions.LarkError, RecursionError):
                pass


def evaluate_cel(rule: HealthCheckExprs, obj: Mapping[str, Any], *, limits: CelLimits = DEFAULT_LIMITS) -> RuleOutcome:
    """kstatus's word for ``obj`` under ``rule``, in Flux's order; "rule failed: …" on any error."""
    if not rule.current:
        return rule_failed("expression current not specified")
    _parse_ahead(rule, limits)
    budget = _Budget(limits)
    try:
        document = plain_json(obj)
    except NotPlainJSON as exc:
        return rule_failed(f"the object cannot be given to CEL: {exc}")
    try:
        observed = _int64_field(document, "status", "observedGeneration")
        generation = _int64_field(document, "metadata", "generation") if observed is not None else None
    except CelRuleError as exc:
        return rule_failed(str(exc))
    if observed is not None and generation is not None and observed != generation:
        return RuleOutcome(IN_PROGRESS, "", False)

    variables = {key: celpy.json_to_cel(value) for key, value in document.items()}
    for name, expression, status in (
        ("inProgress", rule.in_progress, IN_PROGRESS),
        ("failed", rule.failed, FAILED),
        ("current", rule.current, CURRENT),
    ):
        if not expression:
            continue
        try:
            if _evaluate_boolean(name, expression, variables, limits, budget):
                return RuleOutcome(status, "", False)
        except CelRuleError as exc:
            return rule_failed(str(exc))
    return RuleOutcome(IN_PROGRESS, "", False)
