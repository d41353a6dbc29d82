"""conftest hooks that turn a marker into a skip, read when they are simple.

Read: in `pytest_collection_modifyitems` / `pytest_runtest_setup`, an `if` whose test contains
`"NAME" in item.keywords` (or `item.get_closest_marker("NAME")`) and whose body calls `item.add_marker(<a skip
mark>)` or `pytest.skip(...)`; the other operands of the `and` are the condition, the hook's local assignments
(`cc = torch.cuda.get_device_capability(0) if ... else (0, 0)`) are its bindings. A marker named by a loop
variable or behind any other shape is not read: declare it (`[markers] NAME = "condition"`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from matrix.guards.model import Bindings, ModuleNames, dotted
from matrix.guards.source import collect_bindings, collect_module_names

HOOKS = frozenset({"pytest_collection_modifyitems", "pytest_runtest_setup"})
MAX_NODES = 20_000


@dataclass(frozen=True, kw_only=True)
class MarkerRule:
    """Tests carrying `marker` skip when `condition` holds."""

    marker: str
    condition: ast.expr
    source: str
    origin: str
    bindings: Bindings = ()
    names: ModuleNames | None = None


def read_marker_hooks(tree: ast.Module, path: str) -> tuple[MarkerRule, ...]:
    names = collect_module_names(tree)
    rules: list[MarkerRule] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in HOOKS:
            bindings = collect_bindings(stmt.body)
            marks = {n: e for n, e in bindings if e is not None}
            for node, before in _ifs(stmt.body, 0, ()):
                found = _rule(node, marks)
                if found is None:
                    continue
                marker, condition = found
                if before:
                    # `if config.getoption("--runslow"): return` above the loop: the skip is added only past it.
                    condition = ast.BoolOp(op=ast.And(), values=[*before, condition])
                try:
                    text = ast.unparse(condition)
                except RecursionError:
                    text = "(a condition nested too deeply to show)"
                rules.append(
                    MarkerRule(
                        marker=marker,
                        condition=condition,
                        source=f"{path}:{node.lineno} {stmt.name}: {marker} skips when {text}",
                        origin=f"{path}:{node.lineno}",
                        bindings=bindings,
                        names=names,
                    )
                )
    return tuple(rules)


def _ifs(body: Sequence[ast.stmt], depth: int, before: tuple[ast.expr, ...]) -> Iterator[tuple[ast.If, tuple[ast.expr, ...]]]:
    """Each `if` of a hook, with the negated tests of the early exits (`return`, `continue`) above it."""
    if depth > 8:
        return
    for stmt in body[:MAX_NODES]:
        if isinstance(stmt, ast.If):
            yield stmt, before
            if stmt.body and isinstance(stmt.body[-1], ast.Return | ast.Continue) and not stmt.orelse:
                before = (*before, ast.UnaryOp(op=ast.Not(), operand=stmt.test))
                continue
            yield from _ifs(stmt.body, depth + 1, before)
            yield from _ifs(stmt.orelse, depth + 1, before)
        elif isinstance(stmt, ast.For | ast.With | ast.Try):
            yield from _ifs(stmt.body, depth + 1, before)


def _marker_test(node: ast.expr) -> str | None:
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
        and (dotted(node.comparators[0]) or "").endswith(".keywords")
    ):
        return node.left.value
    if (
        isinstance(node, ast.Call)
        and (dotted(node.func) or "").endswith(("get_closest_marker", "iter_markers"))
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None


def _skips(body: Sequence[ast.stmt], marks: Mapping[str, ast.expr]) -> bool:
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            name = dotted(stmt.value.func) or ""
            if name.endswith("add_marker") and stmt.value.args:
                mark = stmt.value.args[0]
                if isinstance(mark, ast.Name) and mark.id in marks:
                    mark = marks[mark.id]  # `skip_slow = pytest.mark.skip(...)` then `item.add_marker(skip_slow)`
                target = mark.func if isinstance(mark, ast.Call) else mark
                if (dotted(target) or "").endswith(("mark.skip", "mark.skipif")):
                    return True
            if name.endswith("pytest.skip") or name == "skip":
                return True
    return False


def _rule(node: ast.If, marks: Mapping[str, ast.expr]) -> tuple[str, ast.expr] | None:
    if not _skips(node.body, marks):
        return None
    operands = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) else [node.test]
    markers = [m for m in (_marker_test(o) for o in operands) if m is not None]
    if len(markers) != 1:
        return None
    rest = [o for o in operands if _marker_test(o) is None]
    condition: ast.expr = (
        ast.Constant(value=True) if not rest else rest[0] if len(rest) == 1 else ast.BoolOp(op=ast.And(), values=rest)
    )
    return markers[0], condition
