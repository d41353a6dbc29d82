"""The command-line options a conftest file declares in its `pytest_addoption` hook, read from its text; pure.

Read: `parser.addoption("--run-perf", action="store_true")`, `parser.addoption("--torch_ver", default="2.7")`,
`parser.getgroup("name").addoption(...)`, a group bound to a name first (`group = parser.getgroup(...)`), and
`_addoption` spellings. The arity comes from `action` and `nargs` as argparse reads them; an option whose flags,
`action` or `nargs` are not literals is listed as unread with why (its flags, where literal, are still options).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from matrix.schedule.environment.plugins import Arity

MAX_CONFTEST_CHARS = 2 * 1024 * 1024
MAX_OPTIONS = 512

# argparse actions that take no value (`_StoreTrueAction`, `_StoreConstAction`, `_CountAction` ...).
_NO_VALUE = frozenset({"store_true", "store_false", "store_const", "append_const", "count", "help", "version"})
_NARGS = {"?": Arity.OPTIONAL, "+": Arity.SOME, "*": Arity.ANY, 0: Arity.NONE, 1: Arity.ONE}


@dataclass(frozen=True, kw_only=True)
class DeclaredOption:
    """One option a conftest declares: its flags, its arity (None when not read), its line, and why it was not read."""

    flags: tuple[str, ...]
    arity: Arity | None
    line: int
    unread: str = ""


def declared_options(text: str) -> tuple[DeclaredOption, ...]:
    """The options the `pytest_addoption` hooks of one conftest's text declare (none when it does not parse)."""
    if len(text) > MAX_CONFTEST_CHARS or "addoption" not in text:
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    out: list[DeclaredOption] = []
    for hook in tree.body:
        if not isinstance(hook, ast.FunctionDef | ast.AsyncFunctionDef) or hook.name != "pytest_addoption":
            continue
        params = [a.arg for a in (*hook.args.posonlyargs, *hook.args.args, *hook.args.kwonlyargs)]
        parser = "parser" if "parser" in params else (params[0] if params else "")
        groups = _groups(hook, parser)
        for node in ast.walk(hook):
            if isinstance(node, ast.Call) and _is_addoption(node, parser, groups):
                out.append(_option(node))
                if len(out) >= MAX_OPTIONS:
                    return tuple(out)
    return tuple(out)


def _groups(hook: ast.FunctionDef | ast.AsyncFunctionDef, parser: str) -> frozenset[str]:
    """Names the hook binds to one of the parser's groups (`group = parser.getgroup("x")`)."""
    found: set[str] = set()
    for node in ast.walk(hook):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.Assign) and isinstance(target, ast.Name) and _is_getgroup(node.value, parser):
            found.add(target.id)
    return frozenset(found)


def _is_addoption(call: ast.Call, parser: str, groups: frozenset[str]) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("addoption", "_addoption"):
        return False
    owner = func.value
    if isinstance(owner, ast.Name):
        return owner.id == parser or owner.id in groups
    return _is_getgroup(owner, parser)  # parser.getgroup("x").addoption(...)


def _is_getgroup(node: ast.expr, parser: str) -> bool:
    """`parser.getgroup(...)` on the hook's parser."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "getgroup"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == parser
    )


def _option(call: ast.Call) -> DeclaredOption:
    flags = tuple(a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    if len(flags) != len(call.args) or not flags:
        return DeclaredOption(flags=flags, arity=None, line=call.lineno, unread="its flags are not literal strings")
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    if any(k.arg is None for k in call.keywords):
        return DeclaredOption(flags=flags, arity=None, line=call.lineno, unread="its keywords come from **kwargs")
    action = _literal(keywords.get("action"), "store")
    nargs = _literal(keywords.get("nargs"), None)
    if action is _UNREAD or nargs is _UNREAD:
        return DeclaredOption(flags=flags, arity=None, line=call.lineno, unread="its action or nargs is not a literal")
    if isinstance(action, str) and action in _NO_VALUE:
        return DeclaredOption(flags=flags, arity=Arity.NONE, line=call.lineno)
    if not isinstance(action, str) or action not in ("store", "append", "extend"):
        return DeclaredOption(flags=flags, arity=None, line=call.lineno, unread=f"action {action!r} is not one argparse names")
    if nargs is None:
        return DeclaredOption(flags=flags, arity=Arity.ONE, line=call.lineno)
    arity = _NARGS.get(nargs) if isinstance(nargs, str | int) and not isinstance(nargs, bool) else None
    if arity is None:
        return DeclaredOption(flags=flags, arity=None, line=call.lineno, unread=f"nargs={nargs!r} is not read")
    return DeclaredOption(flags=flags, arity=arity, line=call.lineno)


_UNREAD = object()


def _literal(node: ast.expr | None, default: object) -> object:
    if node is None:
        return default
    if isinstance(node, ast.Constant):
        return node.value
    return _UNREAD
