"""`self.id()` in a guard of a unittest test, as the test it is evaluated for has it; pure.

unittest's `TestCase.id()` is `f"{strclass(type(self))}.{self._testMethodName}"`, `strclass` being the class's
`__module__` and `__qualname__` (CPython `Lib/unittest/case.py`). For a test collected through a class (inherited
methods included: the class is the one collected through, not the one defining the method) the class and method
are known from its node id; the module is the name pytest imports the file as, a dotted tail of the file's path
within the checkout (`rootdir`-relative or the package chain above it, `_pytest.pathlib.import_path`), unless the
checkout's root folder is itself a package, when folders above it may join. A guard's `self.id()` is replaced by
a `PartText` holding those parts: `"_Base" in self.id()` is then decided where the parts decide it
(`matrix.guards.evaluate`)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Sequence
from dataclasses import replace

from matrix.guards.model import ExprCondition, Guard
from matrix.guards.predicates import PartText

# Decorators whose name says they make several tests of one method under other names (torch's `parametrize`,
# `parameterized.expand`): the method's name is then only the start of the test's name.
_RENAMING = ("parametrize", "parameterized", "expand")


def test_id(nodeid: str, decorators: Sequence[ast.expr], package_root: bool) -> PartText | None:
    """The id a unittest test `path::Class::test` has, as far as its node id says; None when not a class's test."""
    path, *names = nodeid.split("::")
    if len(names) < 2 or not path.endswith(".py"):
        return None
    method = names[-1].partition("[")[0]
    renamed = any(any(word in ast.unparse(d).partition("(")[0] for word in _RENAMING) for d in decorators)
    known = f".{'.'.join(names[:-1])}.{method}"
    # The id is a tail of the dotted path and `known`, unless folders above the checkout or a suffix may join it.
    within = () if package_root or renamed else (".".join(path[: -len(".py")].split("/")) + known,)
    why = f"the id of {nodeid}: its module name is a tail of {path}" + (", its name may carry a suffix" if renamed else "")
    return PartText(why=why, known=known, within=within)


def _is_self_id(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and not node.args
        and not node.keywords
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "id"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    )


def mentions_self_id(guard: Guard) -> bool:
    """Whether a guard's conditions or local names call `self.id()`."""
    exprs = [c.expr for c in guard.conditions if isinstance(c, ExprCondition)]
    exprs += [e for _, e in guard.local_names if e is not None]
    return any(_is_self_id(n) for e in exprs for n in ast.walk(e))


class _Replace(ast.NodeTransformer):
    def __init__(self, value: PartText) -> None:
        self.value = value

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if _is_self_id(node):
            # an ast.Constant may hold any value; the evaluator reads it as the value it holds
            return ast.copy_location(ast.Constant(value=self.value), node)  # type: ignore[arg-type]
        self.generic_visit(node)
        return node


def with_test_id(guard: Guard, value: PartText) -> Guard:
    """The guard with each `self.id()` replaced by `value` (the original is left as it is: other tests share it)."""
    replacer = _Replace(value)

    def rewrite(expr: ast.expr) -> ast.expr:
        try:
            out: ast.expr = replacer.visit(copy.deepcopy(expr))
        except RecursionError:
            return expr  # nested past Python's limit: left as written, so the evaluator's budget answers unknown
        return out

    conditions = tuple(replace(c, expr=rewrite(c.expr)) if isinstance(c, ExprCondition) else c for c in guard.conditions)
    local = tuple((n, rewrite(e) if e is not None else None) for n, e in guard.local_names)
    return replace(guard, conditions=conditions, local_names=local)
