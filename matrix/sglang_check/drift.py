"""Drift checks for the stand-ins the GPU and CPU checks keep for sglang code they cannot call.

Each stand-in names the upstream function it stands for and the shape it was written against: the attributes that
function reads (from `self` or from a parameter), the keywords it accepts, or the arguments of one call in it.
`drift(stand_in)` reads the installed sglang's function with `inspect` and `ast` and returns one line per
difference, so the day sglang changes the shape, `nox -s sglang` fails naming the stand-in to update.
sglang is imported only by `resolve`, inside the call.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Shape(StrEnum):
    """What of the upstream function the stand-in depends on."""

    READS = "reads"  # attributes read from `self` (or from `parameter`), less those the function itself assigns
    PARAMETERS = "parameters"  # the keyword parameters it accepts (a signature, or a dataclass's fields)
    CALL = "call"  # the argument expressions of its one call of `call`


@dataclass(frozen=True, kw_only=True)
class StandIn:
    """Ours (`name`, a file and object), the upstream function it stands for, and the shape it was written against."""

    name: str
    upstream: str  # "module:Qualified.name"
    shape: Shape
    expected: tuple[str, ...]  # READS/PARAMETERS: the names (a set); CALL: the argument expressions, in order
    why: str
    parameter: str | None = None  # READS: read from this parameter instead of the first one (self)
    call: str | None = None  # CALL: the attribute or function name called
    # READS: reads on paths the stand-in never takes (their reason in `why`); they must still be read upstream.
    untaken: tuple[str, ...] = field(default=())
    exact: bool = False  # PARAMETERS: the stand-in replaces the function, so the keywords must match exactly


def resolve(ref: str) -> Any:
    """`module:Qualified.name` imported and looked up."""
    module, _, qualname = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


Upstream = Callable[..., Any] | str  # a function, or its source text (a planted change of it, in tests)


def upstream_source(func: Callable[..., Any]) -> str:
    return textwrap.dedent(inspect.getsource(func))


def _function_node(func: Upstream) -> ast.FunctionDef | ast.AsyncFunctionDef:
    tree = ast.parse(func if isinstance(func, str) else upstream_source(func))
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        raise TypeError(f"{func!r} is not a function")
    return node


def attribute_reads(func: Upstream, parameter: str | None = None) -> frozenset[str]:
    """Attributes `func` reads from its first parameter (or `parameter`), less those it assigns itself."""
    node = _function_node(func)
    args = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    name = parameter or (args[0] if args else "")
    reads: set[str] = set()
    stores: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == name:
            (stores if isinstance(sub.ctx, ast.Store | ast.Del) else reads).add(sub.attr)
    return frozenset(reads - stores)


def accepted_keywords(obj: Any) -> frozenset[str]:
    """The keyword parameters a callable (or a dataclass's generated __init__) accepts."""
    params = inspect.signature(obj).parameters.values()
    return frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def call_arguments(func: Upstream, call: str) -> list[tuple[str, ...]]:
    """The argument expressions (ast.unparse) of every call of `call` (a name or attribute) in `func`."""
    found = []
    for sub in ast.walk(_function_node(func)):
        if isinstance(sub, ast.Call):
            callee = sub.func
            name = callee.attr if isinstance(callee, ast.Attribute) else callee.id if isinstance(callee, ast.Name) else None
            if name == call:
                found.append(tuple(ast.unparse(a) for a in (*sub.args, *sub.keywords)))
    return found


def shape_drift(stand_in: StandIn, upstream: Any) -> list[str]:
    """One line per difference between the stand-in's expected shape and `upstream` (the function or class)."""
    head = f"{stand_in.name} stands for {stand_in.upstream}"
    if stand_in.shape is Shape.READS:
        actual = attribute_reads(upstream, stand_in.parameter)
        known = set(stand_in.expected) | set(stand_in.untaken)
        problems = [f"{head}, which now reads .{a}: the stand-in does not carry it" for a in sorted(actual - known)]
        problems += [f"{head}, which no longer reads .{a}: drop it from the stand-in" for a in sorted(known - actual)]
        return problems
    if stand_in.shape is Shape.PARAMETERS:
        actual = accepted_keywords(upstream)
        problems = [f"{head}, which no longer accepts {k!r}" for k in sorted(set(stand_in.expected) - actual)]
        if stand_in.exact:
            problems += [
                f"{head}, which now accepts {k!r}: the replacement does not" for k in sorted(actual - set(stand_in.expected))
            ]
        return problems
    calls = call_arguments(upstream, stand_in.call or "")
    if calls != [stand_in.expected]:
        shown = "; ".join("(" + ", ".join(c) + ")" for c in calls) or "no such call"
        return [f"{head}, whose {stand_in.call} call is now {shown}, not ({', '.join(stand_in.expected)})"]
    return []


def drift(stand_in: StandIn) -> list[str]:
    """`shape_drift` against the installed sglang."""
    return shape_drift(stand_in, resolve(stand_in.upstream))
