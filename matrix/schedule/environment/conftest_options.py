"""The command-line options a conftest file declares in its `pytest_addoption` hook, read from its text; pure.

Read: `parser.addoption("--run-perf", action="store_true")`, `parser.addoption("--torch_ver", default="2.7")`,
`parser.getgroup("name").addoption(...)`, a group bound to a name first (`group = parser.getgroup(...)`), and
`_addoption` spellings. The arity comes from `action` and `nargs` as argparse reads them; an option whose flags,
`action` or `nargs` are not literals is listed as unread with why (its flags, where literal, are still options).
Where pytest stores the value and what it is when the command does not give it (`dest`, `default`, `const`,
`type` of int/float/str) are kept too, for the hooks that read the option (`matrix.pytest_suites.optins`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from matrix.schedule.environment.plugins import Arity

MAX_CONFTEST_CHARS = 2 * 1024 * 1024
MAX_OPTIONS = 512

# argparse actions that take no value (`_StoreTrueAction`, `_StoreConstAction`, `_CountAction` ...).
_NO_VALUE = frozenset({"store_true", "store_false", "store_const", "append_const", "count", "help", "version"})
_NARGS = {"?": Arity.OPTIONAL, "+": Arity.SOME, "*": Arity.ANY, 0: Arity.NONE, 1: Arity.ONE}


@dataclass(frozen=True, kw_only=True)
class DeclaredOption:
    """One option a conftest declares: its flags, its arity (None when not read), its line, and why it was not read;
    its argparse `action`, `dest`, `default`, `const` and `kind` (`type=` int, float or str), and whether those are all
    literals (`values_read`)."""

    flags: tuple[str, ...]
    arity: Arity | None
    line: int
    unread: str = ""
    action: str = "store"
    dest: str = ""
    default: object = None
    const: object = None
    kind: str = ""
    values_read: bool = False


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
    found = _arity(call)
    if found.unread or not found.flags:
        return found
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    values: dict[str, object] = {}
    for key in ("dest", "default", "const"):
        if key in keywords:
            values[key] = _evaluated(keywords[key])
    kind = keywords.get("type")
    values["type"] = (kind.id if isinstance(kind, ast.Name) and kind.id in _TYPES else _UNREAD) if kind is not None else ""
    action = _literal(keywords.get("action"), "store")
    action = action if isinstance(action, str) else "store"
    # argparse: the first long flag (else the first), its leading dashes stripped and inner ones made underscores.
    long = [f for f in found.flags if f.startswith("--")]
    dest = values.get("dest", (long or list(found.flags))[0].lstrip("-").replace("-", "_"))
    default = values.get("default", False if action == "store_true" else True if action == "store_false" else None)
    read = all(v is not _UNREAD for v in values.values()) and isinstance(dest, str) and action in _VALUED
    return replace(
        found,
        action=action,
        dest=dest if isinstance(dest, str) else "",
        default=default,
        const=values.get("const"),
        kind=str(values["type"]) if values["type"] is not _UNREAD else "",
        values_read=read,
    )


# The actions whose value a hook reading the option is told (argparse's names), and the `type=` callables read.
_VALUED = frozenset({"store", "store_true", "store_false", "store_const", "append", "count"})
_TYPES = frozenset({"int", "float", "str"})


def _evaluated(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return _UNREAD


def _arity(call: ast.Call) -> DeclaredOption:
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
