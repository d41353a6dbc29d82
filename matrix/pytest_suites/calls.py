"""Skips a test reaches through the functions its body calls, read statically and bounded.

A test body that calls a function at its top level (`need_sm100()`, `utils.need_sm100()`, `ok = probe()`,
`_run_case(1, 512)`, and the calls such a call makes first: `_operator().apply(x)`, `_run(_backend(), x)`; in a
`with` block or a loop whose first pass is certain too) skips where that function skips: a helper of the same
file, one imported from another file of the tree (`from .utils import f`, `from tests.helpers import f`,
`from . import utils`), or another test function called directly (its body's skips only: marks are not applied
on a direct call). Calls are followed `MAX_CALL_DEPTH` levels down (`test -> _run_case -> skip_if_unsupported`).
The literal arguments of each call are bound to the callee's parameters (`skip_if_large_head(512)`,
`_run_multi_rank("x", 2)`), so a guard reading a parameter is decided for that call; a parameter given anything
else stays unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from matrix.guards.model import Guard, GuardKind, ModuleNames

MAX_CALL_DEPTH = 3

# Skips a body raises itself; a mark on a test called directly is not applied, an early return in the callee
# does not end its caller.
_BODY_KINDS = frozenset({GuardKind.PYTEST_SKIP, GuardKind.SKIP_TEST, GuardKind.RAISE_SKIPTEST, GuardKind.IMPORTORSKIP})

_Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True, kw_only=True)
class Callee:
    """A function a call reaches: the file it is in, its definition, the guards its body raises, the file's names."""

    path: str
    function: _Function
    guards: tuple[Guard, ...]
    names: ModuleNames


# What a file's function (by name) or a name imported into it resolves to; the collector answers.
Resolve = Callable[[str, ast.expr], Callee | None]


# Calls of a body, by the body's id, with the body itself: a body made for one file (an imported test read as
# `pass`) dies with it, and a body made later could get its id and these calls, were it not kept alive here.
CallMemo = dict[int, tuple[list[ast.stmt], tuple[ast.Call, ...]]]


def called_guards(
    path: str, body: list[ast.stmt], resolve: Resolve, memo: CallMemo | None = None
) -> Iterator[tuple[Guard, ModuleNames, str]]:
    """(guard, names of its file, how it is reached) for each skip a body reaches through its top-level calls."""
    yield from _walk(path, body, resolve, (), frozenset(), memo={} if memo is None else memo)


def _walk(
    path: str, body: list[ast.stmt], resolve: Resolve, chain: tuple[str, ...], seen: frozenset[str], *, memo: CallMemo
) -> Iterator[tuple[Guard, ModuleNames, str]]:
    if len(chain) >= MAX_CALL_DEPTH:
        return
    found = memo.get(id(body))
    if found is None:
        found = memo[id(body)] = (body, tuple(top_level_calls(body)))
    calls = found[1]
    for call in calls:
        callee = resolve(path, call.func)
        if callee is None:
            continue
        key = f"{callee.path}::{callee.function.name}"
        if key in seen:
            continue
        raised = [g for g in callee.guards if g.kind in _BODY_KINDS]
        if raised:
            # The arguments are read only for a callee that raises a skip itself (most called functions do not).
            values = literal_arguments(callee.function, call)
            via = " -> ".join((*chain, callee.function.name))
            for guard in raised:
                yield bind_arguments(guard, values), callee.names, via
        yield from _walk(callee.path, callee.function.body, resolve, (*chain, callee.function.name), seen | {key}, memo=memo)


def top_level_calls(body: list[ast.stmt], *, loop: bool = False) -> Iterator[ast.Call]:
    """Calls a body makes as whole statements or assigned values, before anything that may end it early, with
    the calls those make first (`_operator().apply(x)`, `_run(_backend(), x)`: `calls_first`); inside a `with`
    block, and inside a loop whose first pass is certain (`for _ in range(3)`, a literal non-empty sequence), up
    to a `break` or `continue` there (`loop`)."""
    for stmt in body:
        if isinstance(stmt, ast.Return | ast.Raise) or (loop and isinstance(stmt, ast.Break | ast.Continue)):
            return
        value = stmt.value if isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Call):
            yield from calls_first(value)
        if isinstance(stmt, ast.With | ast.AsyncWith):
            yield from top_level_calls(stmt.body, loop=loop)
        elif isinstance(stmt, ast.For) and _runs_once(stmt.iter):
            yield from top_level_calls(stmt.body, loop=True)
        # What follows a branch may be skipped by it (`if x: return`): calls after it are not followed.
        if isinstance(stmt, _COMPOUND) and _ends_early(stmt, loop=loop):
            return


MAX_NESTED_CALLS = 8  # levels of calls in receivers and arguments followed


def calls_first(call: ast.Call, depth: int = 0) -> Iterator[ast.Call]:
    """A call, after the calls Python makes before it whatever happens: the one its receiver is
    (`_operator().apply(...)`) and those its arguments are (`_run(_backend(), x)`), innermost first. A call under
    a lambda, a condition, a boolean operator or a comprehension may not be made: it is not followed."""
    if depth > MAX_NESTED_CALLS:
        return
    receiver = call.func
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    if isinstance(receiver, ast.Call):
        yield from calls_first(receiver, depth + 1)
    for argument in (*call.args, *(k.value for k in call.keywords)):
        value = argument.value if isinstance(argument, ast.Starred) else argument
        if isinstance(value, ast.Call):
            yield from calls_first(value, depth + 1)
    if isinstance(call.func, ast.Name | ast.Attribute):
        yield call


def _runs_once(iterable: ast.expr) -> bool:
    """A loop's iterable that certainly gives a first item: `range` of literal bounds, a literal non-empty sequence."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range":
        if iterable.keywords or not 1 <= len(iterable.args) <= 3:
            return False
        try:
            bounds = [ast.literal_eval(a) for a in iterable.args]
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        return all(type(b) is int for b in bounds) and len(range(*bounds)) > 0
    return (
        isinstance(iterable, ast.List | ast.Tuple)
        and bool(iterable.elts)
        and not any(isinstance(e, ast.Starred) for e in iterable.elts)
    )


_COMPOUND = ast.If | ast.For | ast.AsyncFor | ast.While | ast.Try | ast.TryStar | ast.With | ast.AsyncWith | ast.Match


def _ends_early(stmt: ast.stmt, *, loop: bool = False) -> bool:
    """A `return` or `raise` anywhere in a compound statement's blocks (statements only: expressions cannot
    hold one, and walking them is most of the cost); in a loop's body, a `break` or `continue` too."""
    stack: list[ast.stmt] = [stmt]
    ends = (ast.Return, ast.Raise, ast.Break, ast.Continue) if loop else (ast.Return, ast.Raise)
    while stack:
        node = stack.pop()
        if isinstance(node, ends):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            stack.extend(getattr(node, name, ()))
        for handler in getattr(node, "handlers", ()):
            stack.extend(handler.body)
        for case in getattr(node, "cases", ()):
            stack.extend(case.body)
    return False


def literal_arguments(fn: _Function, call: ast.Call) -> dict[str, ast.expr]:
    """Each parameter of `fn` a call gives a literal value (an argument, else a literal default)."""
    args = fn.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return {}
    given: dict[str, ast.expr] = {}
    defaults = dict(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None})
    given.update(defaults)
    given.update(zip(positional, call.args, strict=False))
    given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    return {name: node for name, node in given.items() if _is_literal(node)}


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def bind_arguments(guard: Guard, values: Mapping[str, ast.expr]) -> Guard:
    """The guard with the callee's parameters bound to the call's literal arguments (a name the callee also
    rebinds stays unknown)."""
    if not values:
        return guard
    counts: dict[str, int] = {}
    for name, _ in guard.local_names:
        counts[name] = counts.get(name, 0) + 1
    bound = tuple((n, values[n] if n in values and counts[n] == 1 else e) for n, e in guard.local_names)
    return guard.with_local_names(bound) if bound != guard.local_names else guard
