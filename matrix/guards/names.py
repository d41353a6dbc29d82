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


def straight_line(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a block and of the if/try/with blocks inside it, not of nested defs."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.For | ast.While | ast.AsyncFor):
            yield from straight_line(stmt.body)
            yield from straight_line(stmt.orelse)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            yield from straight_line(stmt.body)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            yield from straight_line(stmt.body)
            for handler in stmt.handlers:
                yield from straight_line(handler.body)
            yield from straight_line(stmt.orelse)
            yield from straight_line(stmt.finalbody)


def collect_bindings(body: Sequence[ast.stmt]) -> Bindings:
    """Names assigned in a block; a name bound more than once maps to None (ambiguous)."""
    seen: dict[str, ast.expr | None] = {}

    def bind(name: str, value: ast.expr | None) -> None:
        seen[name] = None if name in seen else value

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
    return tuple(seen.items())


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


def collect_module_names(tree: ast.Module) -> ModuleNames:
    """Imports, module-level aliases and module-level defs of a parsed file."""
    defined = frozenset(
        stmt.name for stmt in straight_line(tree.body) if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    )
    return ModuleNames(
        imports=tuple(collect_imports(tree).items()),
        aliases=collect_bindings(tree.body),
        defined=defined,
    )
