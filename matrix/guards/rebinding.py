"""Names a block binds other than by assignment (`with as`, `:=`, `match`, `del`, `global`): their value is unknown.

A guard that reads a name bound one of these ways is not decided from the name's plain assignment.

`collect_bindings` keeps a name's value when a block assigns it once; Python binds names in more ways
(the language reference, "Naming and binding"): `with ... as name`, `except E as name`, a `match` case's body
and capture patterns, `del name`, an assignment expression `(name := value)` anywhere in an expression, a
`def`/`class` of that name, and `global`/`nonlocal` in a nested function (which may run before the guard does).
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar

_DEFS = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
# Whether the file being read may hold an assignment expression, and a `global`/`nonlocal` (its text says so):
# finding either takes a walk of every expression, which a file that holds neither is spared. Unknown: walked.
_DECLARES = re.compile(r"^[ \t]*(?:global|nonlocal)[ \t]", re.M)
_SPELLED: ContextVar[tuple[bool, bool]] = ContextVar("rebinding_spelled", default=(True, True))


@contextlib.contextmanager
def reading(text: str) -> Iterator[None]:
    """Bindings read inside this block are of a file whose source is `text`."""
    declares = ("global" in text or "nonlocal" in text) and _DECLARES.search(text) is not None
    token = _SPELLED.set((":=" in text, declares))
    try:
        yield
    finally:
        _SPELLED.reset(token)


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
    walrus, declared = _SPELLED.get()
    if walrus:
        out |= _walrus(body)
    if declared:
        out |= _declared(body, 0)
    return out & names


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


def _walrus(body: Sequence[ast.stmt]) -> set[str]:
    """Names assignment expressions bind in the block's own scope (an explicit stack: the block is untrusted)."""
    out: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.List | ast.Tuple | ast.Set):
            # A literal's constants bind nothing: a data table of a million of them is skipped in one pass.
            stack.extend(e for e in node.elts if not isinstance(e, ast.Constant))
            continue
        elif isinstance(node, ast.Constant | ast.Name | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue  # a nested scope's `:=` binds there
        stack.extend(ast.iter_child_nodes(node))
    return out


def _declared(body: Sequence[ast.stmt], depth: int) -> set[str]:
    """Names a `global`/`nonlocal` statement names anywhere in the block, nested functions included (statements
    only: neither can sit in an expression), bounded in depth."""
    out: set[str] = set()
    for stmt in body:
        if isinstance(stmt, ast.Global | ast.Nonlocal):
            out.update(stmt.names)
        elif depth < 64:
            for field in ("body", "orelse", "handlers", "finalbody", "cases"):
                inner = getattr(stmt, field, None)
                if inner:
                    out |= _declared(inner, depth + 1)
    return out
