"""Plan the matrix tests of a module that never got collected (a module-level skip or import error), from its source.

pytest never imports past a module-level `pytest.skip(..., allow_module_level=True)` or `importorskip`, so its
matrix tests are never parametrized. Reading the source finds them: test functions and methods (named by
`python_functions` / `python_classes`) that take `matrix_cell`, directly or through a fixture defined in the same
module, with the selects of their `pytest.mark.matrix` marks (function, class, `pytestmark`).
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

MATRIX_FIXTURE = "matrix_cell"


@dataclass(frozen=True, kw_only=True)
class StaticTest:
    """A matrix test found in source: `name` is `test_f` or `TestC::test_f`."""

    name: str
    selects: tuple[str, ...]
    literal: bool  # False when some select was not a string literal (it is then ignored: over-report, never hide)


def pytest_collects(name: str, patterns: Sequence[str]) -> bool:
    """pytest's rule for python_functions / python_classes: a prefix, or a glob when it has glob characters."""
    return any(name.startswith(p) or (any(ch in p for ch in "*?[") and fnmatch.fnmatch(name, p)) for p in patterns)


def _is_matrix_mark(node: ast.expr) -> bool:
    if not isinstance(node, ast.Attribute) or node.attr != "matrix":
        return False
    owner = node.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (isinstance(owner, ast.Name) and owner.id == "mark")


def _mark_selects(exprs: Sequence[ast.expr]) -> tuple[list[str], bool]:
    selects: list[str] = []
    literal = True
    for expr in exprs:
        if not (isinstance(expr, ast.Call) and _is_matrix_mark(expr.func)):
            continue
        arg = next((k.value for k in expr.keywords if k.arg == "select"), expr.args[0] if expr.args else None)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            selects.append(arg.value)
        elif arg is not None:
            literal = False
    return selects, literal


def _pytestmark(body: Sequence[ast.stmt]) -> list[ast.expr]:
    out: list[ast.expr] = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            value = stmt.value
            out.extend(value.elts if isinstance(value, ast.List | ast.Tuple) else [value])
    return out


def _arg_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = func.args
    return {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}


def _fixture_name(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for dec in func.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if (isinstance(target, ast.Attribute) and target.attr == "fixture") or (
            isinstance(target, ast.Name) and target.id == "fixture"
        ):
            if isinstance(dec, ast.Call):
                for k in dec.keywords:
                    if k.arg == "name" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str):
                        return k.value.value
            return func.name
    return None


def _matrix_fixtures(tree: ast.Module) -> set[str]:
    """Fixtures of this module that need matrix_cell, transitively."""
    fixtures: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (name := _fixture_name(node)) is not None:
            fixtures[name] = _arg_names(node)
    needs = {MATRIX_FIXTURE}
    changed = True
    while changed:
        changed = False
        for name, args in fixtures.items():
            if name not in needs and args & needs:
                needs.add(name)
                changed = True
    return needs


def matrix_tests(source: str, *, functions: Sequence[str] = ("test",), classes: Sequence[str] = ("Test",)) -> list[StaticTest]:
    """The matrix tests a module's source defines; a module that does not parse has none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    needs = _matrix_fixtures(tree)
    found: list[StaticTest] = []
    module_selects, module_literal = _mark_selects(_pytestmark(tree.body))

    def visit(body: Sequence[ast.stmt], prefix: str, selects: list[str], literal: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and pytest_collects(node.name, classes):
                own, own_literal = _mark_selects([*node.decorator_list, *_pytestmark(node.body)])
                visit(node.body, f"{prefix}{node.name}::", selects + own, literal and own_literal)
            elif (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and pytest_collects(node.name, functions)
                and _fixture_name(node) is None
                and _arg_names(node) & needs
            ):
                own, own_literal = _mark_selects(node.decorator_list)
                found.append(StaticTest(name=f"{prefix}{node.name}", selects=(*selects, *own), literal=literal and own_literal))

    visit(tree.body, "", module_selects, module_literal)
    return found
