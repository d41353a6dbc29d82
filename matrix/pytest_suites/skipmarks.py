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
    call = mark if isinstance(mark, ast.Call) else None
    if last == "xfail" and call is not None and any(k.arg == "run" and _is_false(k.value) for k in call.keywords):
        last = "skipif"  # xfail(cond, run=False): pytest does not run the test where the condition holds
    if last == "skip":
        return Guard(scope=scope, kind=GuardKind.MARK_SKIP, line=mark.lineno, source=source, conditions=(AlwaysSkips(),))
    if last != "skipif":
        return None
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


# The attribute a skipif mark's record carries its condition under (`matrix.guards.predicates.skipif_record`).
CONDITION = "condition"


def factory_mark_guard(mark: ast.expr, names: ModuleNames, scope: str, source: str) -> Guard | None:
    """`requires_x = make_mark(arg)` where `make_mark` is a function of the same file every `return` of which is a
    `pytest.mark.skipif(cond, ...)`: a guard on the condition the call returns, evaluated by stepping into the
    function with its arguments (`make_mark(arg).condition`); None for any other mark."""
    if not isinstance(mark, ast.Call) or not isinstance(mark.func, ast.Name):
        return None
    fn = names.function_map.get(mark.func.id)
    if fn is None or mark.func.id in names.ambiguous:
        return None
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    nested = [n for n in ast.walk(fn) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and n is not fn]
    if nested or not returns or any(not _is_skipif(r.value, names) for r in returns):
        return None
    expr = ast.Attribute(value=mark, attr=CONDITION, ctx=ast.Load())
    condition = ExprCondition(expr=ast.copy_location(expr, mark))
    return Guard(scope=scope, kind=GuardKind.MARK_SKIPIF, line=mark.lineno, source=source, conditions=(condition,))


def _is_skipif(value: ast.expr | None, names: ModuleNames) -> bool:
    if not isinstance(value, ast.Call) or not value.args or any(k.arg == "condition" for k in value.keywords):
        return False
    first = value.args[0]
    if isinstance(first, ast.JoinedStr) or (isinstance(first, ast.Constant) and not isinstance(first.value, bool)):
        return False  # a condition string pytest evaluates itself
    return resolve(dotted(value.func) or "", names.import_map) == "pytest.mark.skipif"


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def usefixtures(marks: list[ast.expr], names: ModuleNames) -> list[str]:
    """Fixture names `@pytest.mark.usefixtures("a", "b")` marks request (literal names only)."""
    out: list[str] = []
    for mark in marks:
        if not isinstance(mark, ast.Call) or not resolve(dotted(mark.func) or "", names.import_map).endswith("mark.usefixtures"):
            continue
        out.extend(a.value for a in mark.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    return out


def fixture_param_guard(fixture: ast.FunctionDef | ast.AsyncFunctionDef, names: ModuleNames, scope: str) -> Guard | None:
    """A fixture whose every `params=[pytest.param(..., marks=...)]` value is skipped: the test it serves skips
    where all of them do (each value's skips OR-ed, the values AND-ed); None when some value is never skipped."""
    values: ast.expr | None = None
    for deco in fixture.decorator_list:
        if isinstance(deco, ast.Call) and resolve(dotted(deco.func) or "", names.import_map).endswith("fixture"):
            values = next((k.value for k in deco.keywords if k.arg == "params"), None)
    if isinstance(values, ast.Name):
        values = names.alias_map.get(values.id)
    if values is None:
        return None
    if not isinstance(values, ast.List | ast.Tuple) or not values.elts:
        return None
    conditions: list[SkipCondition] = []
    for element in values.elts:
        marks = _param_marks(element)
        skips = [g for g in (mark_guard(_alias(m, names), names, scope, "") for m in marks) if g is not None]
        if not skips:
            return None  # this value runs wherever the test does
        if any(isinstance(c, AlwaysSkips) for g in skips for c in g.conditions):
            continue
        exprs = [c.expr for g in skips for c in g.conditions if isinstance(c, ExprCondition)]
        if len(exprs) < len(skips):
            conditions.append(OpaqueCondition(why="a fixture value's skip mark cannot be read"))
        else:
            conditions.append(ExprCondition(expr=exprs[0] if len(exprs) == 1 else ast.BoolOp(op=ast.Or(), values=exprs)))
    shown = f"every value of fixture {fixture.name} is skipped by its marks"
    return Guard(
        scope=scope,
        kind=GuardKind.MARK_SKIPIF,
        line=fixture.lineno,
        source=shown,
        conditions=tuple(conditions) or (AlwaysSkips(),),
    )


def _param_marks(element: ast.expr) -> list[ast.expr]:
    if not (isinstance(element, ast.Call) and (dotted(element.func) or "").rpartition(".")[2] == "param"):
        return []
    given = next((k.value for k in element.keywords if k.arg == "marks"), None)
    if given is None:
        return []
    return list(given.elts) if isinstance(given, ast.List | ast.Tuple) else [given]


def _alias(mark: ast.expr, names: ModuleNames) -> ast.expr:
    bound = names.alias_map.get(mark.id) if isinstance(mark, ast.Name) else None
    return bound if bound is not None else mark


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
