"""What a name in a test module stands for: imports, aliases bound once, local definitions."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence

from matrix.guards.model import Bindings, ModuleNames


def dotted(node: ast.expr) -> str | None:
    """`torch.cuda.is_available` for an attribute chain over a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def resolve(name: str, imports: dict[str, str]) -> str:
    """Rewrite the first component through the module's imports (`tc.x` -> `torch.cuda.x`)."""
    head, _, rest = name.partition(".")
    target = imports.get(head)
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target


def collect_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted import target, for the imports at module level."""
    out: dict[str, str] = {}
    # Module-level imports (also inside if/try) bind the names guards read; imports inside defs do not.
    for node in straight_line(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    out.setdefault(head, head)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = alias.name
    return out


_LAST: list[tuple[Sequence[ast.stmt], list[ast.stmt]]] = []


def straight_line(body: Sequence[ast.stmt]) -> list[ast.stmt]:
    """Statements of a block and of the if/try/with blocks inside it (not of nested defs), in source order.

    A module body is walked by several readers (imports, bindings, registrations, marks); the last result
    is kept, keyed by the body object itself, so it is walked once. Callers only read the list."""
    if _LAST and _LAST[0][0] is body:
        return _LAST[0][1]
    out = _straight_line(body)
    _LAST[:] = [(body, out)]
    return out


def _straight_line(body: Sequence[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    # An explicit stack: audited files are untrusted, so deep nesting must not exhaust Python's recursion.
    stack: list[Iterator[ast.stmt]] = [iter(body)]
    while stack:
        stmt = next(stack[-1], None)
        if stmt is None:
            stack.pop()
            continue
        out.append(stmt)
        inner: list[ast.stmt] = []
        if isinstance(stmt, ast.If | ast.For | ast.While | ast.AsyncFor):
            inner = [*stmt.body, *stmt.orelse]
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            inner = stmt.body
        elif isinstance(stmt, ast.Try | ast.TryStar):
            inner = [*stmt.body, *(s for h in stmt.handlers for s in h.body), *stmt.orelse, *stmt.finalbody]
        if inner:
            stack.append(iter(inner))
    return out


def collect_bindings(body: Sequence[ast.stmt]) -> Bindings:
    """Names assigned in a block; a name bound more than once (an import counts) maps to None (ambiguous).

    Names bound only by imports are left to the import table; `try: from m import X` / `except ImportError:
    X = None` binds X twice, so X is unknown rather than always None.
    """
    seen: dict[str, ast.expr | None] = {}
    imported: set[str] = set()

    def bind(name: str, value: ast.expr | None) -> None:
        seen[name] = None if name in seen or name in imported else value

    for stmt in straight_line(body):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                _bind_target(target, stmt.value, bind)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            bind(stmt.target.id, stmt.value)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            seen[stmt.target.id] = None
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            for node in ast.walk(stmt.target):
                if isinstance(node, ast.Name):
                    seen[node.id] = None
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for name in _imported_names(stmt):
                if name in seen:
                    seen[name] = None
                imported.add(name)
    return tuple(seen.items())


def _imported_names(stmt: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in stmt.names]
    return [a.asname or a.name for a in stmt.names if a.name != "*"]


def _import_targets(tree: ast.Module) -> dict[str, set[str]]:
    """Every last component each name is imported as, to spot `try: from a import X` / `except: from b import Y as X`."""
    out: dict[str, set[str]] = {}
    for stmt in straight_line(tree.body):
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                if alias.name != "*":
                    local = alias.asname or (alias.name.split(".")[0] if isinstance(stmt, ast.Import) else alias.name)
                    out.setdefault(local, set()).add(alias.name.rpartition(".")[2])
    return out


def module_functions(
    tree: ast.Module, blanked: frozenset[int] = frozenset()
) -> tuple[dict[str, ast.FunctionDef], set[str], set[str]]:
    """Module-level functions that decide their name, and names whose meaning depends on the path taken.

    A `def` in the module's own body after every import of that name shadows the import (a local
    redefinition of `is_sm100_supported`); an import after it wins back; a def inside `if`/`try`, or
    a name also assigned, is ambiguous. A function whose body was not parsed (its def line in `blanked`) is
    bound, but never stepped into.
    """
    functions: dict[str, ast.FunctionDef] = {}
    ambiguous: set[str] = set()
    top = set(map(id, tree.body))
    last_import: dict[str, int] = {}
    last_def: dict[str, int] = {}
    for index, stmt in enumerate(straight_line(tree.body)):
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            for name in _imported_names(stmt):
                last_import[name] = index
                if id(stmt) not in top and name in last_def:
                    ambiguous.add(name)
        elif isinstance(stmt, ast.FunctionDef):
            if id(stmt) not in top or stmt.name in last_def:
                ambiguous.add(stmt.name)
            last_def[stmt.name] = index
            if stmt.lineno in blanked:
                functions.pop(stmt.name, None)
            else:
                functions[stmt.name] = stmt
        elif isinstance(stmt, ast.AsyncFunctionDef | ast.ClassDef):
            ambiguous.add(stmt.name)
    reimported = {name for name, index in last_def.items() if last_import.get(name, -1) > index}
    for name in reimported | ambiguous:
        functions.pop(name, None)  # imported again after the def: the import is what guards see
    return functions, ambiguous, reimported - ambiguous


def _bind_target(target: ast.expr, value: ast.expr, bind: Callable[[str, ast.expr | None], None]) -> None:
    if isinstance(target, ast.Name):
        bind(target.id, value)
    elif isinstance(target, ast.Tuple | ast.List):
        # `major, minor = torch.cuda.get_device_capability()` binds each name to an item.
        for index, element in enumerate(target.elts):
            if isinstance(element, ast.Name):
                item = ast.Subscript(value=value, slice=ast.Constant(value=index), ctx=ast.Load())
                bind(element.id, item)
            elif isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
                bind(element.value.id, None)


def collect_module_names(tree: ast.Module, blanked: frozenset[int] = frozenset()) -> ModuleNames:
    """Imports, module-level aliases, functions and ambiguous names of a parsed file (`blanked`: see module_functions)."""
    functions, ambiguous, reimported = module_functions(tree, blanked)
    defined = frozenset(
        stmt.name
        for stmt in straight_line(tree.body)
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and stmt.name not in reimported
    )
    aliases = collect_bindings(tree.body)
    assigned = {name for name, _ in aliases}
    ambiguous |= {name for name in functions if name in assigned}
    ambiguous |= {name for name, targets in _import_targets(tree).items() if len(targets) > 1}
    return ModuleNames(
        imports=tuple(collect_imports(tree).items()),
        aliases=aliases,
        defined=defined,
        functions=tuple((n, f) for n, f in functions.items() if n not in ambiguous),
        ambiguous=frozenset(ambiguous),
    )
