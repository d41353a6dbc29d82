"""Skip marks read without the guard finder's file context: a mark expression to a guard, and where a
`from X import name` of a test file points inside the audited tree (relative imports included).

These serve marks that reach a test from another module (`from .utils import requires_sm100`, where
utils.py binds `requires_sm100 = pytest.mark.skipif(...)`) and the marks of one parametrized case
(`pytest.param(..., marks=pytest.mark.skipif(...))`).
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable

from matrix.guards.model import AlwaysSkips, ExprCondition, Guard, GuardKind, ModuleNames, OpaqueCondition, SkipCondition, dotted
from matrix.guards.source import resolve, straight_line

# An imported name: the files that may define it (module.py, then module/__init__.py) and its name there.
ImportTarget = tuple[tuple[str, ...], str]


def mark_guard(mark: ast.expr, names: ModuleNames, scope: str, source: str) -> Guard | None:
    """`pytest.mark.skipif(cond, ...)` / `pytest.mark.skip(...)` as a guard at `scope`; None for other marks."""
    target = mark.func if isinstance(mark, ast.Call) else mark
    name = resolve(dotted(target) or "", names.import_map)
    head, sep, last = name.rpartition(".mark.")
    if not (sep and head.endswith("pytest")) and name not in ("mark.skipif", "mark.skip"):
        return None
    last = last or name.rpartition(".")[2]
    if last == "skip":
        return Guard(scope=scope, kind=GuardKind.MARK_SKIP, line=mark.lineno, source=source, conditions=(AlwaysSkips(),))
    if last != "skipif":
        return None
    call = mark if isinstance(mark, ast.Call) else None
    conds = (list(call.args) or [kw.value for kw in call.keywords if kw.arg == "condition"]) if call is not None else []
    condition: SkipCondition = AlwaysSkips()
    if conds:
        parsed = [_condition(c) for c in conds]
        exprs = [p.expr for p in parsed if isinstance(p, ExprCondition)]
        if len(exprs) < len(parsed):
            condition = OpaqueCondition(why="a condition string does not parse")
        else:
            condition = ExprCondition(expr=exprs[0] if len(exprs) == 1 else ast.BoolOp(op=ast.Or(), values=exprs))
    return Guard(scope=scope, kind=GuardKind.MARK_SKIPIF, line=mark.lineno, source=source, conditions=(condition,))


def _condition(node: ast.expr) -> ExprCondition | OpaqueCondition:
    """A skipif condition; a string one (`"sys.platform == 'win32'"`) is parsed (bounded, never evaluated)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if len(node.value) > 4096:
            return OpaqueCondition(why="a condition string over 4096 characters")
        try:
            return ExprCondition(expr=ast.parse(node.value.strip(), mode="eval").body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return OpaqueCondition(why="a condition string does not parse")
    return ExprCondition(expr=node)


def from_imports(tree: ast.Module, path: str, bases: tuple[str, ...] = ("",)) -> dict[str, ImportTarget]:
    """Local name -> (candidate files, name there) for the module-level imports of a file.

    `from . import utils` maps `utils.` to the module itself (name ""), so `@utils.requires_sm100` can be
    followed; `import common.marks as M` maps `M.` the same way. An absolute import is looked for under each
    of `bases`, the folders pytest's default import mode puts on `sys.path` (see `sys_path_dirs`), in order.
    """
    out: dict[str, ImportTarget] = {}
    folder = posixpath.dirname(path)
    for stmt in straight_line(tree.body):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                # `import a.b` binds `a`, whose attributes are not followed; `import a` and `import a.b as m` are.
                if alias.asname or "." not in alias.name:
                    out[(alias.asname or alias.name) + "."] = (_files(alias.name.split("."), bases), "")
            continue
        if not isinstance(stmt, ast.ImportFrom):
            continue
        if stmt.level:
            parts = folder.split("/") if folder else []
            if stmt.level - 1 > len(parts):
                continue  # climbs above the audited tree
            where: tuple[str, ...] = ("/".join(parts[: len(parts) - (stmt.level - 1)]),)
        else:
            where = bases
        module = stmt.module.split(".") if stmt.module else []
        for alias in stmt.names:
            if alias.name == "*":
                continue
            local = alias.asname or alias.name
            if module or stmt.level:
                out[local] = (_files(module, where), alias.name)
            # `from . import utils` / `from tests import helpers`: the name may be a module itself.
            out[local + "."] = (_files([*module, alias.name], where), "")
    return out


def _files(module: list[str], bases: tuple[str, ...]) -> tuple[str, ...]:
    stem = "/".join(module)
    out: list[str] = []
    for base in bases:
        head = f"{base}/{stem}" if base and stem else base or stem
        if head:
            out.extend((f"{head}.py", f"{head}/__init__.py"))
    return tuple(dict.fromkeys(out))


def sys_path_dirs(path: str, conftests: list[str], exists: Callable[[str], bool]) -> tuple[str, ...]:
    """Folders an import in `path` is looked for under, in pytest's default (`prepend`) import mode.

    pytest inserts the first folder above a test file or conftest.py that has no `__init__.py` (its
    "basedir") at the front of `sys.path` (docs: "pytest import mechanisms and sys.path/PYTHONPATH",
    prepend); `python -m pytest` adds the working folder, the root here; a `src/` layout is the
    project's own package. Nearest first."""
    out: list[str] = []
    for where in (path, *reversed(conftests)):
        folder = posixpath.dirname(where)
        while folder and exists(f"{folder}/__init__.py"):
            folder = posixpath.dirname(folder)
        out.append(folder)
    out.extend(("", "src"))
    return tuple(dict.fromkeys(out))
