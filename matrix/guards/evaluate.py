"""Three-valued evaluation of a guard condition on one runner profile; parses, never executes."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from matrix.guards.model import AlwaysSkips, ExprCondition, Guard, MissingModules, ModuleNames, OpaqueCondition, SkipCondition
from matrix.guards.names import dotted, resolve
from matrix.guards.predicates import ATTRIBUTES, PREDICATES, Predicate, RunnerFacts, Unknown, lookup

_MAX_DEPTH = 20


class Tri(StrEnum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"

    def negated(self) -> Tri:
        return {Tri.TRUE: Tri.FALSE, Tri.FALSE: Tri.TRUE}.get(self, Tri.UNKNOWN)


def tri_of(value: object) -> Tri:
    if isinstance(value, Unknown):
        return Tri.UNKNOWN
    return Tri.TRUE if bool(value) else Tri.FALSE


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """Whether a guard skips on a runner, and the facts that decided it (in evaluation order)."""

    skips: Tri
    steps: tuple[str, ...]

    def explain(self, facts: RunnerFacts) -> str:
        verdict = {Tri.TRUE: "the guard is true, so it skips", Tri.FALSE: "the guard is false, so it runs"}
        shown = "; ".join(self.steps) or "no runner fact involved"
        return f"on {facts.describe()}: {shown} -> {verdict.get(self.skips, 'cannot tell whether it skips')}"


_ORDER: Mapping[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_ARITH: Mapping[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


class _Evaluator:
    """Walks one expression; records leaf facts as steps. Only reads the tree."""

    def __init__(
        self, facts: RunnerFacts, names: ModuleNames, local: Mapping[str, ast.expr | None], table: Mapping[str, Predicate]
    ):
        self.facts = facts
        self.imports = dict(names.imports)
        self.aliases: dict[str, ast.expr | None] = {**dict(names.aliases), **local}
        self.defined = names.defined
        self.table = table
        self.steps: list[str] = []
        self.active: set[str] = set()

    def note(self, text: str, value: object) -> None:
        shown = f"unknown ({value.why})" if isinstance(value, Unknown) else repr(value)
        step = f"{text} is {shown}"
        if step not in self.steps:
            self.steps.append(step)

    def truth(self, node: ast.expr) -> Tri:
        return tri_of(self.value(node))

    def value(self, node: ast.expr) -> object:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            result: object = Unknown(why="not a known guard expression")
            self.note(ast.unparse(node), result)
            return result
        found: object = method(node)
        return found

    def _Constant(self, node: ast.Constant) -> object:
        return node.value

    def _Tuple(self, node: ast.Tuple | ast.List) -> object:
        items = [self.value(e) for e in node.elts]
        unknown = next((i for i in items if isinstance(i, Unknown)), None)
        return unknown if unknown is not None else tuple(items)

    _List = _Tuple

    def _Name(self, node: ast.Name) -> object:
        name = node.id
        if name in self.aliases:
            bound = self.aliases[name]
            if bound is None:
                result: object = Unknown(why=f"`{name}` is assigned more than once")
            elif name in self.active or len(self.active) > _MAX_DEPTH:
                result = Unknown(why=f"`{name}` refers to itself")
            else:
                # The alias line names its expression, so the inner steps would only repeat it.
                mark = len(self.steps)
                self.active.add(name)
                result = self.value(bound)
                self.active.discard(name)
                del self.steps[mark:]
                self.note(f"{name} (= {ast.unparse(bound)})", result)
                return result
        else:
            result = Unknown(why="not a known name")
        self.note(name, result)
        return result

    def _callee(self, func: ast.expr) -> Predicate | None:
        name = dotted(func)
        if name is None:
            return None
        head = name.partition(".")[0]
        if head in self.defined:
            return None  # the module defines its own helper of that name
        if head in self.aliases and "." not in name:
            bound = self.aliases[head]
            # `check = is_sm100_supported` then `check()`
            return self._callee(bound) if isinstance(bound, ast.Name | ast.Attribute) else None
        return lookup(self.table, resolve(name, self.imports))

    def _Call(self, node: ast.Call) -> object:
        if isinstance(node.func, ast.Name) and node.func.id == "bool" and len(node.args) == 1 and not node.keywords:
            t = self.truth(node.args[0])
            return Unknown(why="bool() of unknown") if t is Tri.UNKNOWN else t is Tri.TRUE
        predicate = self._callee(node.func)
        head = (dotted(node.func) or "").partition(".")[0]
        why = "a function this module defines" if head in self.defined else "not a known guard helper"
        result = predicate(self.facts) if predicate else Unknown(why=why)
        self.note(ast.unparse(node), result)
        return result

    def _Attribute(self, node: ast.Attribute) -> object:
        name = dotted(node)
        getter = lookup(ATTRIBUTES, resolve(name, self.imports)) if name else None
        result = getter(self.facts) if getter else Unknown(why="not a known attribute")
        self.note(ast.unparse(node), result)
        return result

    def _Subscript(self, node: ast.Subscript) -> object:
        base, index = self.value(node.value), self.value(node.slice)
        if isinstance(base, Unknown):
            return base
        if (
            isinstance(base, tuple | str)
            and isinstance(index, int)
            and not isinstance(index, bool)
            and -len(base) <= index < len(base)
        ):
            return base[index]
        return Unknown(why=f"cannot index {base!r} by {index!r}")

    def _BoolOp(self, node: ast.BoolOp) -> object:
        # Kleene logic with Python's short-circuit: a decisive operand stops evaluation.
        decisive = Tri.FALSE if isinstance(node.op, ast.And) else Tri.TRUE
        unknown = False
        for operand in node.values:
            t = self.truth(operand)
            if t is decisive:
                return decisive is Tri.TRUE
            unknown = unknown or t is Tri.UNKNOWN
        return Unknown(why="an operand is unknown") if unknown else decisive is not Tri.TRUE

    def _UnaryOp(self, node: ast.UnaryOp) -> object:
        if isinstance(node.op, ast.Not):
            t = self.truth(node.operand).negated()
            return Unknown(why="negation of unknown") if t is Tri.UNKNOWN else t is Tri.TRUE
        operand = self.value(node.operand)
        if isinstance(operand, int | float) and not isinstance(operand, bool) and isinstance(node.op, ast.USub | ast.UAdd):
            return -operand if isinstance(node.op, ast.USub) else operand
        return Unknown(why="unsupported unary operation")

    def _BinOp(self, node: ast.BinOp) -> object:
        left, right = self.value(node.left), self.value(node.right)
        fn = _ARITH.get(type(node.op))
        if fn is None or not all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)):
            return left if isinstance(left, Unknown) else right if isinstance(right, Unknown) else Unknown(why="arithmetic")
        if isinstance(node.op, ast.FloorDiv) and right == 0:
            return Unknown(why="division by zero")
        return fn(left, right)

    def _IfExp(self, node: ast.IfExp) -> object:
        t = self.truth(node.test)
        if t is Tri.TRUE:
            return self.value(node.body)
        if t is Tri.FALSE:
            return self.value(node.orelse)
        body, orelse = self.value(node.body), self.value(node.orelse)
        return body if not isinstance(body, Unknown) and body == orelse else Unknown(why="conditional on unknown")

    def _Compare(self, node: ast.Compare) -> object:
        left = self.value(node.left)
        unknown = False
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.value(comparator)
            result = compare(op, left, right)
            if result is False:
                return False
            unknown = unknown or isinstance(result, Unknown)
            left = right
        return Unknown(why="a comparison is unknown") if unknown else True


def compare(op: ast.cmpop, left: object, right: object) -> bool | Unknown:
    """Python's comparison on plain values; Unknown where Python would raise or a side is unknown."""
    if isinstance(left, Unknown) or isinstance(right, Unknown):
        return Unknown(why="a side is unknown")
    if isinstance(op, ast.Eq | ast.NotEq):
        return (left == right) is isinstance(op, ast.Eq)
    if isinstance(op, ast.Is | ast.IsNot):
        if left is None or right is None or isinstance(left, bool) or isinstance(right, bool):
            return (left is right) is isinstance(op, ast.Is)
        return Unknown(why="identity of values")
    if isinstance(op, ast.In | ast.NotIn):
        if isinstance(right, tuple) or (isinstance(right, str) and isinstance(left, str)):
            return (left in right) is isinstance(op, ast.In)
        return Unknown(why="membership in a non-container")
    fn = _ORDER[type(op)]
    numbers = all(isinstance(v, int | float) for v in (left, right))
    same = numbers or (type(left) is type(right) and isinstance(left, tuple | str))
    if not same:
        return Unknown(why="ordering of unlike values")
    try:
        return bool(fn(left, right))
    except TypeError:
        return Unknown(why="ordering of unlike values")


def evaluate_condition(
    condition: SkipCondition,
    facts: RunnerFacts,
    names: ModuleNames,
    local: Mapping[str, ast.expr | None] | None = None,
    table: Mapping[str, Predicate] = PREDICATES,
) -> Evaluation:
    """Whether one condition holds on a runner."""
    if isinstance(condition, AlwaysSkips):
        return Evaluation(skips=Tri.TRUE, steps=("unconditional skip",))
    if isinstance(condition, OpaqueCondition):
        return Evaluation(skips=Tri.UNKNOWN, steps=(condition.why,))
    if isinstance(condition, MissingModules):
        missing = [m for m in condition.modules if m.split(".")[0] not in facts.installed]
        if not missing:
            return Evaluation(skips=Tri.FALSE, steps=(f"{', '.join(condition.modules)} assumed installed",))
        return Evaluation(
            skips=Tri.UNKNOWN, steps=(f"whether {', '.join(missing)} is installed is unknown (see --assume-installed)",)
        )
    evaluator = _Evaluator(facts, names, local or {}, table)
    t = evaluator.truth(condition.expr)
    return Evaluation(skips=t.negated() if condition.negate else t, steps=tuple(evaluator.steps))


def evaluate_guard(
    guard: Guard, facts: RunnerFacts, names: ModuleNames, table: Mapping[str, Predicate] = PREDICATES
) -> Evaluation:
    """Whether a guard skips on a runner: every condition on its path must hold (Kleene AND)."""
    local = dict(guard.local_names)
    steps: list[str] = []
    unknown = False
    for condition in guard.conditions:
        result = evaluate_condition(condition, facts, names, local, table)
        steps.extend(s for s in result.steps if s not in steps)
        if result.skips is Tri.FALSE:
            return Evaluation(skips=Tri.FALSE, steps=tuple(steps))
        unknown = unknown or result.skips is Tri.UNKNOWN
    return Evaluation(skips=Tri.UNKNOWN if unknown else Tri.TRUE, steps=tuple(steps))


def evaluate_text(
    text: str, facts: RunnerFacts, names: ModuleNames | None = None, table: Mapping[str, Predicate] = PREDICATES
) -> Evaluation:
    """Evaluate a condition written as source text (tests, pytest string conditions)."""
    expr = ast.parse(text, mode="eval").body
    return evaluate_condition(ExprCondition(expr=expr), facts, names or ModuleNames(), None, table)
