"""conftest hooks that turn a marker into a skip, read with the control flow that leads to each skip.

In `pytest_collection_modifyitems` / `pytest_runtest_setup`, every `item.add_marker(<a skip mark>)` (written
in place or bound to a name first, `skip_slow = pytest.mark.skip(...)`, as in pytest's own docs "Control
skipping of tests according to command line option") and every `pytest.skip(...)` is a skip; the conditions
on the way to it are collected: enclosing `if` tests (`not` of them on the `else` side and after an `elif`),
and the `not` of every earlier `if C: return` / `continue`. A loop over a literal tuple (`for mk, req in
(("gpu_2", 2), ...)`) is unrolled. A skip whose conditions test exactly one marker (`"NAME" in
item.keywords`, `item.get_closest_marker("NAME")`) becomes a rule for that marker; one that tests none
applies to every test under the conftest. The other conditions, with the hook's local assignments as
bindings, are evaluated on each runner; an option a conftest declares (`config.getoption("--run-perf")`) is
read from each CI command (optins.py); anything else they read that is not a runner fact is unknown, never a
skip. A skip this reading cannot place is one rule for every test, with a condition no runner answers: those
tests are undetermined, never certain. Declared conditions (`[markers] NAME = "..."`) replace what is read for
that marker.

`pytest_collection_modifyitems` may also deselect: `items.remove(item)`, `LIST.append(item)` where LIST is handed
to `config.hook.pytest_deselected(...)`, `items[:] = [i for i in items if C]` (deselects when C is false) and
`LIST = [i for i in items if C]` are read as deselections under the same conditions (the test is then not run at
all, pytest reports nothing for it); a reorder (`items.sort(...)`, `items[:] = sorted(items, ...)`) is none; any
other change to `items` or to such a list is a deselection whose condition is not read.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from matrix.guards.model import Bindings, ModuleNames, dotted
from matrix.guards.source import collect_bindings, collect_module_names
from matrix.pytest_suites.optins import with_option_reads

HOOKS = frozenset({"pytest_collection_modifyitems", "pytest_runtest_setup"})
ALL_TESTS = "*"  # the rule's marker when the skip tests no marker: it applies to every test under the conftest
MAX_NODES = 20_000
MAX_DEPTH = 8
MAX_UNROLL = 16
# Stands for a condition this reading cannot state: no runner fact answers it, so it is unknown everywhere.
UNREAD = ast.Name(id="__hook_condition_not_read__", ctx=ast.Load())


@dataclass(frozen=True, kw_only=True)
class MarkerRule:
    """Tests carrying `marker` (every test, for `ALL_TESTS`) skip when `condition` holds."""

    marker: str
    condition: ast.expr
    source: str
    origin: str
    bindings: Bindings = ()
    names: ModuleNames | None = None
    # The hook leaves the test out (`pytest_deselected`, `items[:] = ...`) instead of skipping it.
    deselects: bool = False
    # The condition reads a pytest option (rewritten as the fact `config.getoption('NAME')`, see optins.py).
    options: bool = False


@dataclass(frozen=True)
class _Skip:
    line: int
    conditions: tuple[ast.expr, ...]
    readable: bool = True
    deselects: bool = False


@dataclass(frozen=True)
class _Hook:
    """What one hook's statements are read against: its single assignments, the name of its `items` parameter
    (`pytest_collection_modifyitems` only) and the lists it hands to `pytest_deselected`."""

    local: dict[str, ast.expr]
    items: str = ""
    dropped: frozenset[str] = frozenset()


def _hook_of(fn: ast.FunctionDef) -> _Hook:
    local = _assignments(fn)
    if fn.name != "pytest_collection_modifyitems":
        return _Hook(local=local)
    # pytest calls hooks with keyword arguments: the parameter is `items` whatever its position.
    items = "items" if any(a.arg == "items" for a in fn.args.args) else ""
    dropped = {
        v.id
        for node in ast.walk(fn)
        if isinstance(node, ast.Call) and (dotted(node.func) or "").endswith("pytest_deselected")
        for v in (*node.args, *(k.value for k in node.keywords))
        if isinstance(v, ast.Name)
    }
    return _Hook(local=local, items=items, dropped=frozenset(dropped))


def read_marker_hooks(tree: ast.Module, path: str) -> tuple[MarkerRule, ...]:
    names = collect_module_names(tree)
    rules: list[MarkerRule] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in HOOKS:
            bindings = collect_bindings(stmt.body)
            skips: list[_Skip] = []
            _walk(stmt.body, (), _hook_of(stmt), skips, 0)
            for skip in skips:
                rules.append(_rule(skip, stmt.name, path, bindings, names))
    return tuple(rules)


def _rule(skip: _Skip, hook: str, path: str, bindings: Bindings, names: ModuleNames) -> MarkerRule:
    origin = f"{path}:{skip.line}"
    markers = [(m, positive) for m, positive in (_marker_test(c) for c in skip.conditions) if m is not None]
    rest = [c for c in skip.conditions if _marker_test(c)[0] is None]
    does = "deselects" if skip.deselects else "skips"
    if not skip.readable or len(markers) > 1 or (markers and not markers[0][1]):
        what = "a deselection" if skip.deselects else "a skip"
        return MarkerRule(
            marker=ALL_TESTS,
            condition=UNREAD,
            source=f"{origin} {hook}: {what} whose condition is not read (applies to any test under this conftest)",
            origin=origin,
            deselects=skip.deselects,
        )
    marker = markers[0][0] if markers else ALL_TESTS
    # Inside the rule for a marker, a test for that marker is true (`not ("m" in kw and c)` after an `elif`);
    # a hook's `items` holds the tests it is called with, so it is not empty.
    rest = [_Known(marker, hook).visit(copy.deepcopy(c)) for c in rest]
    condition: ast.expr = (
        ast.Constant(value=True) if not rest else rest[0] if len(rest) == 1 else ast.BoolOp(op=ast.And(), values=rest)
    )
    try:
        text = ast.unparse(condition)
    except (RecursionError, ValueError):
        text = "(a condition nested too deeply to show)"
    who = marker if marker != ALL_TESTS else "every test"
    condition, bindings, options = with_option_reads(condition, bindings)
    return MarkerRule(
        marker=marker,
        condition=condition,
        source=f"{origin} {hook}: {who} {does} when {text}",
        origin=origin,
        bindings=bindings,
        names=names,
        deselects=skip.deselects,
        options=options,
    )


def _not(node: ast.expr) -> ast.expr:
    return (
        node.operand
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
        else ast.UnaryOp(op=ast.Not(), operand=node)
    )


def _split(test: ast.expr) -> tuple[ast.expr, ...]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return tuple(test.values)
    return (test,)


def _exits(body: Sequence[ast.stmt], hook: _Hook) -> bool:
    """The block ends the hook or the loop iteration (`return`, `continue`) without a skip of its own."""
    return bool(body) and isinstance(body[-1], ast.Return | ast.Continue) and not _has_skip(body, hook)


def _has_skip(body: Sequence[ast.stmt], hook: _Hook) -> bool:
    """The block holds a skip or a deselection somewhere."""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and _skip_call(node, {}) is not None:
                return True
            if isinstance(node, ast.stmt) and _removal(node, hook) is not None:
                return True
    return False


def _walk(body: Sequence[ast.stmt], context: tuple[ast.expr, ...], hook: _Hook, out: list[_Skip], depth: int) -> None:
    if depth > MAX_DEPTH or len(out) > 256:
        if _has_skip(body, hook):
            out.append(_Skip(line=body[0].lineno if body else 0, conditions=context, readable=False))
        return
    for stmt in body[:MAX_NODES]:
        removed = _removal(stmt, hook)
        if removed is not None:
            out.append(_Skip(line=stmt.lineno, conditions=(*context, *removed), deselects=True))
        elif isinstance(stmt, ast.If):
            if _exits(stmt.body, hook) and not stmt.orelse:
                context = (*context, _not(stmt.test))
                continue
            _walk(stmt.body, (*context, *_split(stmt.test)), hook, out, depth + 1)
            _walk(stmt.orelse, (*context, _not(stmt.test)), hook, out, depth + 1)
        elif isinstance(stmt, ast.For):
            unrolled = _unroll(stmt)
            if unrolled is None:
                _walk(stmt.body, context, hook, out, depth + 1)
            else:
                for copy_body in unrolled:
                    _walk(copy_body, context, hook, out, depth + 1)
        elif isinstance(stmt, ast.With | ast.Try | ast.While):
            _walk(stmt.body, context, hook, out, depth + 1)
            for handler in getattr(stmt, "handlers", []):
                if _has_skip(handler.body, hook):
                    out.append(_Skip(line=handler.lineno, conditions=context, readable=False))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            found = _skip_call(stmt.value, hook.local)
            if found is not None:
                out.append(_Skip(line=stmt.lineno, conditions=(*context, *found)))
        elif _has_skip([stmt], hook):
            removes = any(isinstance(n, ast.stmt) and _removal(n, hook) is not None for n in ast.walk(stmt))
            out.append(_Skip(line=stmt.lineno, conditions=context, readable=False, deselects=removes))


# Calls that only reorder the tests a hook is given (`items[:] = sorted(items, key=...)`).
_REORDER = frozenset({"sorted", "reversed", "list"})


def _removal(stmt: ast.stmt, hook: _Hook) -> tuple[ast.expr, ...] | None:
    """The extra conditions under which a statement deselects the test being looked at (`(UNREAD,)` when it
    changes the hook's tests in a way not read), else None."""
    if not hook.items:
        return None
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        owner = dotted(stmt.value.func.value) or ""
        method = stmt.value.func.attr
        if owner == hook.items:
            return () if method == "remove" else (UNREAD,) if method in ("pop", "clear") else None
        if owner in hook.dropped:
            return () if method == "append" else (UNREAD,) if method in ("extend", "insert") else None
        return None
    if isinstance(stmt, ast.Assign):
        if any(isinstance(t, ast.Subscript) and (dotted(t.value) or "") == hook.items for t in stmt.targets):
            return _kept(stmt.value, hook, keep=True)
        if any(isinstance(t, ast.Name) and t.id in hook.dropped for t in stmt.targets):
            if isinstance(stmt.value, ast.List) and not stmt.value.elts:
                return None  # the list starts empty
            return _kept(stmt.value, hook, keep=False)
        return None
    if isinstance(stmt, ast.Delete) and any(
        isinstance(t, ast.Subscript) and (dotted(t.value) or "") == hook.items for t in stmt.targets
    ):
        return (UNREAD,)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in hook.dropped:
        return (UNREAD,)
    return None


def _kept(value: ast.expr, hook: _Hook, *, keep: bool) -> tuple[ast.expr, ...] | None:
    """`[i for i in items if C]` assigned to `items[:]` (`keep`: the tests C admits stay) or to a deselected list
    (the tests C admits go): the condition under which the test goes."""
    if isinstance(value, ast.Call) and (dotted(value.func) or "") in _REORDER:
        inner = value.args[0] if len(value.args) >= 1 else None
        if keep and inner is not None and (dotted(inner) or "") == hook.items:
            return None
        if keep and isinstance(inner, ast.Call) and (dotted(inner.func) or "") in _REORDER and inner.args:
            return None if (dotted(inner.args[0]) or "") == hook.items else (UNREAD,)
        return (UNREAD,)
    if not isinstance(value, ast.ListComp | ast.GeneratorExp) or len(value.generators) != 1:
        return (UNREAD,)
    loop = value.generators[0]
    if (
        loop.is_async
        or (dotted(loop.iter) or "") != hook.items
        or not isinstance(loop.target, ast.Name)
        or not isinstance(value.elt, ast.Name)
        or value.elt.id != loop.target.id
    ):
        return (UNREAD,)
    if not loop.ifs:
        return None if keep else ()
    admitted = loop.ifs[0] if len(loop.ifs) == 1 else ast.BoolOp(op=ast.And(), values=list(loop.ifs))
    return (_not(admitted),) if keep else tuple(_split(admitted))


def _assignments(hook: ast.FunctionDef) -> dict[str, ast.expr]:
    """Names the hook binds anywhere in its body to one value (`skip_x = pytest.mark.skip(...)` inside an `if`)."""
    found: dict[str, ast.expr] = {}
    twice: set[str] = set()
    for node in ast.walk(hook):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in found:
                twice.add(name)
            found[name] = node.value
    return {n: e for n, e in found.items() if n not in twice}


def _skip_call(call: ast.Call, local: dict[str, ast.expr]) -> tuple[ast.expr, ...] | None:
    """The extra conditions of a skip call (`()` for an unconditional one; a skipif's condition), else None."""
    name = dotted(call.func) or ""
    if name.endswith("pytest.skip") or name == "skip":
        return ()
    if not name.endswith("add_marker") or not call.args:
        return None
    mark = call.args[0]
    for _ in range(4):  # `skip_slow = pytest.mark.skip(...)` then `item.add_marker(skip_slow)`
        if isinstance(mark, ast.Name) and mark.id in local:
            mark = local[mark.id]
    target = mark.func if isinstance(mark, ast.Call) else mark
    written = dotted(target) or ""
    kind = written.rpartition(".")[2]
    if ".mark." not in f".{written}" or isinstance(mark, ast.Name):
        return (UNREAD,)  # a mark made by a call or bound where this reading does not look: it may be a skip
    if kind not in ("skip", "skipif"):
        return None
    if kind == "skipif":
        if not isinstance(mark, ast.Call) or not mark.args:
            return (UNREAD,)
        condition = mark.args[0]
        return (UNREAD,) if isinstance(condition, ast.Constant) and isinstance(condition.value, str) else (condition,)
    return ()


def _marker_test(node: ast.expr) -> tuple[str | None, bool]:
    """The marker a condition tests (`"NAME" in item.keywords`, `item.get_closest_marker("NAME")`), and whether
    it asks for the marker (True) or its absence (False); (None, True) when it tests no marker."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        found, positive = _marker_test(node.operand)
        return found, not positive
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In | ast.NotIn)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
        and (dotted(node.comparators[0]) or "").endswith(".keywords")
    ):
        return node.left.value, isinstance(node.ops[0], ast.In)
    if (
        isinstance(node, ast.Call)
        and (dotted(node.func) or "").endswith(("get_closest_marker", "iter_markers"))
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value, True
    return None, True


def _unroll(loop: ast.For) -> Iterator[list[ast.stmt]] | None:
    """`for a, b in ((x, y), ...)` over literals: the body once per element with the names replaced."""
    if not isinstance(loop.iter, ast.Tuple | ast.List) or len(loop.iter.elts) > MAX_UNROLL:
        return None
    targets = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
    if not all(isinstance(t, ast.Name) for t in targets):
        return None
    rows: list[dict[str, ast.expr]] = []
    for element in loop.iter.elts:
        values = element.elts if isinstance(element, ast.Tuple) and len(targets) > 1 else [element]
        if len(values) != len(targets) or not all(isinstance(v, ast.Constant) for v in values):
            return None
        rows.append({t.id: v for t, v in zip(targets, values, strict=True)})  # type: ignore[attr-defined]
    return (_substituted(loop.body, row) for row in rows)


class _Known(ast.NodeTransformer):
    def __init__(self, marker: str, hook: str):
        self.marker = marker
        self.hook = hook

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        found, positive = _marker_test(node)
        if found == self.marker:
            return ast.Constant(value=positive)
        return self.generic_visit(node)  # type: ignore[return-value]

    def visit_Call(self, node: ast.Call) -> ast.expr:
        found, _ = _marker_test(node)
        if found == self.marker:
            return ast.Constant(value=True)
        return self.generic_visit(node)  # type: ignore[return-value]

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id == "items" and self.hook == "pytest_collection_modifyitems":
            return ast.Constant(value=True)
        return node


class _Replace(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.copy(self.values[node.id]) if node.id in self.values else node


def _substituted(body: Sequence[ast.stmt], values: dict[str, ast.expr]) -> list[ast.stmt]:
    return [_Replace(values).visit(copy.deepcopy(s)) for s in body]
