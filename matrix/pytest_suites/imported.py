"""Test functions and classes a test module imports: pytest collects them there too.

pytest collects a module's `__dict__` (`_pytest/python.py`, PyCollector.collect), so `from .base import TestBase`,
`from helpers import test_shared` and `from common import *` make those objects tests of the importing module,
under the name they are bound to (node id `tests/test_x.py::TestBase::test_one`). Here such an import is followed
into the file of the tree that defines the name (re-exports followed, bounded); its definition is read in its own
module (a class's bases there). A definition that can carry nothing of its own (no decorator, no `pytestmark`, no
call in the test's body, no module-level skip in its file) is judged where it is collected; any other is kept with
a doubt, and an import that leads out of the tree is not resolved (the caller keeps its name with a doubt).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from matrix.guards.model import ModuleNames
from matrix.pytest_suites.skipmarks import from_imports

_Function = ast.FunctionDef | ast.AsyncFunctionDef
MAX_IMPORT_DEPTH = 4
MAX_STAR_NAMES = 2_000
# A module-level statement that may skip or mark at import (`pytest.skip(..., allow_module_level=True)`,
# `importorskip`, `pytestmark`): the module's definitions are then not judged plainly.
_MODULE_SKIP = re.compile(r"skip|pytestmark|SkipTest")


@dataclass(frozen=True, kw_only=True)
class ImportedDef:
    """A function or class bound by an import, as defined in `origin`."""

    node: ast.ClassDef | _Function
    origin: str
    names: ModuleNames
    classes: Mapping[str, ast.ClassDef] = field(default_factory=dict)  # the origin's classes (bases looked up there)
    quiet_module: bool = True  # no module-level statement of the origin mentions a skip or pytestmark


Parse = Callable[[str], tuple[ast.Module, ModuleNames] | None]  # path -> (tree, names), None: unread or unparsed


class ImportResolver:
    """Follows `from X import ...` of a test module to the definitions in the tree (cached by file)."""

    def __init__(self, parse: Parse, bases: Callable[[str], tuple[str, ...]]):
        self.parse = parse
        self.bases = bases
        self.modules: dict[str, tuple[dict[str, ast.stmt], dict[str, ast.ClassDef], bool] | None] = {}

    def __call__(self, path: str, stmt: ast.ImportFrom) -> dict[str, ImportedDef] | None:
        """Local name -> definition for the functions and classes `stmt` binds; None when its module is not
        a file of the tree (or a star import whose names are not read)."""
        return self._resolve(path, stmt, 0)

    def _resolve(self, path: str, stmt: ast.ImportFrom, depth: int) -> dict[str, ImportedDef] | None:
        if depth > MAX_IMPORT_DEPTH:
            return None
        wanted = [(a.name, a.asname or a.name) for a in stmt.names]
        probe = ast.ImportFrom(module=stmt.module, names=[ast.alias(name="*star*")], level=stmt.level)
        files = from_imports(ast.Module(body=[probe], type_ignores=[]), path, self.bases(path)).get("*star*")
        origin = next((f for f in files[0] if self._module(f) is not None), None) if files else None
        if origin is None:
            return None
        module = self._module(origin)
        assert module is not None
        top, classes, quiet = module
        if wanted == [("*", "*")]:
            names = self._star_names(origin, top)
            if names is None:
                return None
            wanted = [(n, n) for n in names]
        out: dict[str, ImportedDef] = {}
        parsed = self.parse(origin)
        assert parsed is not None
        for name, local in wanted:
            found = top.get(name)
            if isinstance(found, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                out[local] = ImportedDef(node=found, origin=origin, names=parsed[1], classes=classes, quiet_module=quiet)
            elif isinstance(found, ast.ImportFrom):
                again = ast.ImportFrom(
                    module=found.module,
                    names=[a for a in found.names if (a.asname or a.name) == name],
                    level=found.level,
                )
                inner = self._resolve(origin, again, depth + 1) if again.names else None
                if inner is not None and name in inner:
                    out[local] = inner[name]
        return out

    def _module(self, path: str) -> tuple[dict[str, ast.stmt], dict[str, ast.ClassDef], bool] | None:
        if path not in self.modules:
            parsed = self.parse(path)
            if parsed is None:
                self.modules[path] = None
            else:
                tree = parsed[0]
                top: dict[str, ast.stmt] = {}
                quiet = True
                for stmt in tree.body:
                    if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                        top[stmt.name] = stmt
                    elif isinstance(stmt, ast.ImportFrom):
                        top.update({a.asname or a.name: stmt for a in stmt.names if a.name != "*"})
                    else:
                        # Any other module-level binding replaces what an earlier one bound (not read: dropped).
                        for node in ast.walk(stmt):
                            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                                top.pop(node.id, None)
                        quiet = quiet and not _MODULE_SKIP.search(_text(stmt))
                classes = {n: s for n, s in top.items() if isinstance(s, ast.ClassDef)}
                self.modules[path] = (top, classes, quiet)
        return self.modules[path]

    def _star_names(self, origin: str, top: Mapping[str, ast.stmt]) -> list[str] | None:
        """The names `from origin import *` binds: `__all__` when a literal list, else every public name."""
        parsed = self.parse(origin)
        assert parsed is not None
        for stmt in parsed[0].body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
                if not isinstance(stmt.value, ast.List | ast.Tuple):
                    return None
                values = [e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                return values[:MAX_STAR_NAMES] if len(values) == len(stmt.value.elts) else None
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                return None  # a star import of a star import: not followed
        return [n for n in top if not n.startswith("_")][:MAX_STAR_NAMES]


def _text(stmt: ast.stmt) -> str:
    try:
        return ast.unparse(stmt)
    except (RecursionError, ValueError):
        return "skip"  # unreadable: treated as if it skipped


def plain(imported: ImportedDef, node: _Function, classes: tuple[ast.ClassDef, ...]) -> bool:
    """A test from another module that carries nothing of its own there: no decorator on it or its classes, no
    `pytestmark` in a class, no call in its body, no module-level skip or mark in its file."""
    if not imported.quiet_module or node.decorator_list:
        return False
    for cls in classes:
        if cls.decorator_list or any(
            isinstance(s, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Expr) and "pytestmark" in _text(s) for s in cls.body
        ):
            return False
    return not any(isinstance(n, ast.Call | ast.Raise) for s in node.body for n in ast.walk(s))
