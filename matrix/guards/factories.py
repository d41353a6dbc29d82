"""Decorator factories of the audited file: a module function whose single `return` is a skip decorator.

`@requires_major(9)` with `def requires_major(major): return unittest.skipUnless(... == major, ...)` is
read as that skip with the call's arguments put in for the parameters (a copy; the file's tree is untouched).
"""

from __future__ import annotations

import ast
import copy

MAX_FACTORY_DEPTH = 4


def single_return(fn: ast.FunctionDef) -> ast.expr | None:
    """The expression of a function whose body (docstring and plain `from m import name` lines aside) is one
    `return`; the imported names are predicates matched by their own name, as at module level."""
    body = [
        s
        for s in fn.body
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        and not (isinstance(s, ast.ImportFrom) and all(a.asname is None and a.name != "*" for a in s.names))
    ]
    if len(body) == 1 and isinstance(body[0], ast.Return):
        return body[0].value
    return None


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.values.get(node.id, node)


def substitute(expr: ast.expr, fn: ast.FunctionDef, call: ast.Call | None) -> ast.expr | None:
    """`expr` with the factory's parameters replaced by the call's argument expressions; None if they do not fit."""
    params = [a.arg for a in fn.args.args]
    if call is None:
        values: dict[str, ast.expr] = {}
    else:
        if fn.args.vararg or fn.args.kwarg or len(call.args) > len(params):
            return None
        values = dict(zip(params, call.args, strict=False))
        for kw in call.keywords:
            if kw.arg is None or kw.arg not in params:
                return None
            values[kw.arg] = kw.value
        defaults = dict(zip(params[len(params) - len(fn.args.defaults) :], fn.args.defaults, strict=True))
        for name in params:
            if name not in values:
                if name not in defaults:
                    return None
                values[name] = defaults[name]
    try:
        copied = copy.deepcopy(expr)  # a fresh tree; the factory's own stays untouched
    except RecursionError:
        return None
    out = _Substitute(values).visit(copied)
    for node in ast.walk(out):
        # Point every copied node at the factory's return, the text a finding shows.
        if isinstance(node, ast.expr) and node not in values.values():
            ast.copy_location(node, expr)
    return out if isinstance(out, ast.expr) else None
