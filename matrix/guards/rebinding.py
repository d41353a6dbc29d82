"""Bindings of a block the assignment reader does not see as such: a guard that reads a name bound one of these ways
is not decided from the name's plain assignment.

`collect_bindings` keeps a name's value when a block assigns it once; Python binds names in more ways
(the language reference, "Naming and binding"): `with ... as name`, `except E as name`, a `match` case's body
and capture patterns, `del name`, an assignment expression `(name := value)` anywhere in an expression, a
`def`/`class` of that name, and `global`/`nonlocal` in a nested function (which may run before the guard does).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

_DEFS = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def rebound(body: Sequence[ast.stmt], statements: Iterable[ast.stmt], names: set[str]) -> set[str]:
    """Those of `names` that `body` (its straight-line `statements` given) binds in one of the ways above."""
    if not names:
        return set()
    out: set[str] = set()
    for stmt in statements:
        if isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                if item.optional_vars is not None:
                    out.update(_targets(item.optional_vars))
        elif isinstance(stmt, ast.Try | ast.TryStar):
            out.update(h.name for h in stmt.handlers if h.name)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                out.update(_targets(target))
        elif isinstance(stmt, _DEFS):
            out.add(stmt.name)
        elif isinstance(stmt, ast.Match):
            # Not walked by the straight-line reader: every name a case binds or assigns is a second binding.
            for case in stmt.cases:
                out.update(n.name for n in ast.walk(case.pattern) if isinstance(n, ast.MatchAs | ast.MatchStar) and n.name)
                out.update(n.rest for n in ast.walk(case.pattern) if isinstance(n, ast.MatchMapping) and n.rest)
                out.update(_assigned(case.body))
    return (out | _walked(body, names)) & names


def _targets(node: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def _assigned(body: Sequence[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for node in body:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
                out.add(inner.id)
            elif isinstance(inner, _DEFS):
                out.add(inner.name)
    return out


def _walked(body: Sequence[ast.stmt], names: set[str]) -> set[str]:
    """Assignment expressions in the block's own scope, and `global`/`nonlocal` of a name in a function it defines
    (an explicit stack: the block is untrusted)."""
    out: set[str] = set()
    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in body]
    while stack:
        node, nested = stack.pop()
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name) and not nested:
            out.add(node.target.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            out.update(node.names)
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            # A literal's constants bind nothing: a data table of a million of them is skipped in one pass.
            stack.extend((e, nested) for e in node.elts if not isinstance(e, ast.Constant))
            continue
        elif isinstance(node, ast.Constant | ast.Name | ast.alias):
            continue
        inner = nested or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef)
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return out & names
