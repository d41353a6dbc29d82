"""The pytest runs a Python program starts itself (`pytest.main([...])`), read from its source and the words of the
command that runs it; pure, never imported or executed.

Read: `pytest.main` under any name the module binds (`import pytest as pt; pt.main(...)`, `from pytest import main`,
`from pytest import main as run`), at module level, in the `if __name__ == "__main__":` block, and in module-level
functions called from there without arguments (up to `MAX_CALLS` deep). Its arguments when they are a literal list
or tuple of text, `__file__`, `sys.argv[1:]` (the command's own words, also spread or added), or none at all (then
pytest reads `sys.argv[1:]`). The conditions it runs under (`if`, `else`, `elif`), decided from the command's words
when they are literal: `"--x" in sys.argv`, `len(sys.argv) > n`, `sys.argv[i] == "x"`, and an argparse parser's
flags (`add_argument("--x", action="store_true")`, `store_false`, a value option with its default) read as
`args.x`; `and`, `or`, `not`, `==`, `!=`, `in`. A condition it cannot decide is kept, as the shell reader keeps
one. `sys.exit(...)`, `exit(...)` and `raise SystemExit` end the block they stand in. Anything else that starts
pytest (a computed argument list, a call through another object) makes the program unread.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_SOURCE = 4 * 1024 * 1024
MAX_CALLS = 4
MAX_RUNS = 64


@dataclass(frozen=True, kw_only=True)
class PytestRun:
    """One `pytest.main` call a program makes: its arguments and the conditions it runs under (each known only at
    run time; none when it always runs)."""

    arguments: tuple[str, ...]
    conditions: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Launch:
    """What a program starts: its pytest runs, or why they are not read (`unread`)."""

    runs: tuple[PytestRun, ...] = ()
    unread: str = ""
    calls: int = 0  # the pytest.main calls it holds (read: none of those not in `runs` runs for these words)


_UNKNOWN = object()  # a value known only at run time


@dataclass(kw_only=True)
class _Program:
    argv: tuple[str, ...]  # sys.argv: the program's name, then the command's words
    script: str
    mains: frozenset[str]  # names bound to pytest.main
    modules: frozenset[str]  # names bound to the pytest module
    functions: Mapping[str, ast.FunctionDef]
    parsers: dict[str, dict[str, tuple[str, object, tuple[str, ...]]]] = field(default_factory=dict)
    namespaces: dict[str, str] = field(default_factory=dict)  # args -> parser
    runs: list[PytestRun] = field(default_factory=list)
    unread: str = ""


def launch(source: str, script: str, arguments: Sequence[str], *, test_file: bool = False) -> Launch:
    """The pytest runs of the program `source` run as `python SCRIPT ARGUMENTS` (`script` "-c" for `python -c`); in a
    `test_file` only its `__main__` block's changes to the environment count (the module's own are its tests' under
    any pytest run, read with the guards)."""
    if "pytest" not in source:
        return Launch()  # names no pytest: starts none (a program importing a helper that does is `starts_pytest`'s)
    if len(source) > MAX_SOURCE:
        return Launch(unread=f"{script} is over the size limit ({MAX_SOURCE} bytes)")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Launch(unread=f"{script} does not parse as Python")
    mains, modules = _pytest_names(tree)
    if not mains and not modules:
        return Launch()
    if test_file:
        blocks = [n for n in tree.body if isinstance(n, ast.If) and _is_main_test(n.test)]
        changed = next((c for c in (_environ_write(ast.Module(body=b.body, type_ignores=[])) for b in blocks) if c), "")
    else:
        changed = _environ_write(tree)
    if changed:
        return Launch(unread=f"{script} changes its environment ({changed}) before pytest runs: what its tests see is not read")
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        named = isinstance(node, ast.Name) and node.id in mains and isinstance(node.ctx, ast.Load)
        attribute = (
            isinstance(node, ast.Attribute)
            and node.attr == "main"
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        )
        if (named or attribute) and id(node) not in called:
            return Launch(unread=f"{script} refers to pytest.main other than by calling it: what it runs is not read")
    program = _Program(
        argv=(script, *arguments),
        script=script,
        mains=mains,
        modules=modules,
        functions={n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)},
    )
    try:
        _block(program, tree.body, (), 0, main=False)
    except RecursionError:
        return Launch(unread=f"{script}: nested too deep to read")
    if program.unread:
        return Launch(unread=program.unread)
    return Launch(runs=tuple(program.runs[:MAX_RUNS]), calls=len(called & _main_calls(tree, mains, modules)))


_ENVIRON_METHODS = frozenset({"pop", "popitem", "update", "clear", "setdefault", "__setitem__", "__delitem__"})


def _environ_write(tree: ast.Module) -> str:
    """The first change the program makes to its own environment (`os.environ[X] = v`, `del os.environ[X]`,
    `os.environ.pop(X)`, `os.putenv`, `os.unsetenv`), shown; "" when none: pytest.main runs in the process, so its
    tests see it."""

    def environ(node: ast.expr) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
            isinstance(node, ast.Name) and node.id == "environ"
        )

    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Subscript) and environ(t.value) for t in targets):
            return ast.unparse(node)[:80]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called = node.func
            if (called.attr in _ENVIRON_METHODS and environ(called.value)) or called.attr in ("putenv", "unsetenv"):
                return ast.unparse(node)[:80]
    return ""


def _main_calls(tree: ast.Module, mains: frozenset[str], modules: frozenset[str]) -> set[int]:
    """The ids of the `func` nodes of the pytest.main calls in `tree`."""
    return {
        id(node.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id in mains)
            or (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "main"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in modules
            )
        )
    }


def _pytest_names(tree: ast.Module) -> tuple[frozenset[str], frozenset[str]]:
    mains: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name == "pytest")
        elif isinstance(node, ast.ImportFrom) and node.module == "pytest":
            mains.update(a.asname or a.name for a in node.names if a.name == "main")
    return frozenset(mains), frozenset(modules)


def _block(program: _Program, body: Sequence[ast.stmt], conditions: tuple[str, ...], depth: int, *, main: bool) -> bool:
    """Read statements in order; False once the block has certainly ended (`sys.exit`)."""
    for statement in body:
        if program.unread or len(program.runs) > MAX_RUNS:
            return False
        if isinstance(statement, ast.If):
            test = statement.test
            if _is_main_test(test):
                if not _block(program, statement.body, conditions, depth, main=True):
                    return False
                continue
            value = _truth(program, test)
            shown = f"`{ast.unparse(test)[:80]}`"
            if value is True:
                if not _block(program, statement.body, conditions, depth, main=main):
                    return False
            elif value is False:
                if not _block(program, statement.orelse, conditions, depth, main=main):
                    return False
            else:
                ended = not _block(
                    program,
                    statement.body,
                    (*conditions, f"runs only if {shown} holds (known only at run time)"),
                    depth,
                    main=main,
                )
                other = not _block(
                    program,
                    statement.orelse,
                    (*conditions, f"runs only if {shown} does not hold (known only at run time)"),
                    depth,
                    main=main,
                )
                if ended and other:
                    return False
                if ended or other:
                    conditions = (
                        *conditions,
                        f"runs only if {shown} {'does not hold' if ended else 'holds'} (known only at run time)",
                    )
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue  # runs when called
        if isinstance(statement, ast.With):
            if not _block(program, statement.body, conditions, depth, main=main):
                return False
            continue
        if isinstance(statement, ast.For | ast.While):
            shown = f"runs inside `{ast.unparse(statement).splitlines()[0][:60]}` (how often is known only at run time)"
            _block(program, statement.body, (*conditions, shown), depth, main=main)
            continue
        if isinstance(statement, ast.Try):
            if not _block(program, [*statement.body, *statement.orelse, *statement.finalbody], conditions, depth, main=main):
                return False
            for handler in statement.handlers:
                _block(program, handler.body, (*conditions, "runs only if an exception is raised"), depth, main=main)
            continue
        if isinstance(statement, ast.Assign):
            _assign(program, statement)
        for call in (n for n in ast.walk(statement) if isinstance(n, ast.Call)):
            _add_argument(program, call)
            _call(program, call, conditions, depth, main=main)
        if _exits(statement):
            return False
    return True


def _call(program: _Program, call: ast.Call, conditions: tuple[str, ...], depth: int, *, main: bool) -> None:
    func = call.func
    if (isinstance(func, ast.Name) and func.id in program.mains) or (
        isinstance(func, ast.Attribute)
        and func.attr == "main"
        and isinstance(func.value, ast.Name)
        and func.value.id in program.modules
    ):
        arguments = _arguments(program, call)
        if arguments is None:
            program.unread = f"{program.script} calls pytest.main with arguments that are not literal text: not read"
        else:
            program.runs.append(PytestRun(arguments=arguments, conditions=conditions))
        return
    if isinstance(func, ast.Name) and func.id in program.functions and not call.args and depth < MAX_CALLS:
        _block(program, program.functions[func.id].body, conditions, depth + 1, main=main)


def _arguments(program: _Program, call: ast.Call) -> tuple[str, ...] | None:
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "args"), None)
    if any(k.arg not in ("args", "plugins") for k in call.keywords) or len(call.args) > 1:
        return None
    if given is None:
        return tuple(program.argv[1:])  # pytest.main() reads sys.argv[1:]
    return _words(program, given)


def _words(program: _Program, node: ast.expr) -> tuple[str, ...] | None:
    if isinstance(node, ast.List | ast.Tuple):
        out: list[str] = []
        for item in node.elts:
            if isinstance(item, ast.Starred):
                inner = _words(program, item.value)
                if inner is None:
                    return None
                out.extend(inner)
            elif isinstance(item, ast.Constant) and isinstance(item.value, str):
                out.append(item.value)
            elif isinstance(item, ast.Name) and item.id == "__file__":
                out.append(program.script)
            else:
                return None
        return tuple(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _words(program, node.left), _words(program, node.right)
        return None if left is None or right is None else (*left, *right)
    if _is_argv_tail(node):
        return tuple(program.argv[1:])
    return None


def _is_argv_tail(node: ast.expr) -> bool:
    """`sys.argv[1:]`."""
    return (
        isinstance(node, ast.Subscript)
        and _is_argv(node.value)
        and isinstance(node.slice, ast.Slice)
        and isinstance(node.slice.lower, ast.Constant)
        and node.slice.lower.value == 1
        and node.slice.upper is None
    )


def _is_argv(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "argv" and isinstance(node.value, ast.Name) and node.value.id == "sys"


def _exits(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Raise):
        exc = statement.exc
        target = exc.func if isinstance(exc, ast.Call) else exc
        return isinstance(target, ast.Name) and target.id == "SystemExit"
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        name = (
            func.id
            if isinstance(func, ast.Name)
            else (f"{func.value.id}.{func.attr}" if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else "")
        )
        return name in ("sys.exit", "exit", "quit", "os._exit")
    return False


def _is_main_test(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


# --- argparse ------------------------------------------------------------------------------------------------


def _assign(program: _Program, statement: ast.Assign) -> None:
    """`p = argparse.ArgumentParser(...)`, `args = p.parse_args()`; `p.add_argument(...)` is read by `_call`'s
    walk below (an expression statement)."""
    value = statement.value
    targets = [t.id for t in statement.targets if isinstance(t, ast.Name)]
    if not targets or not isinstance(value, ast.Call):
        return
    func = value.func
    if (isinstance(func, ast.Attribute) and func.attr == "ArgumentParser") or (
        isinstance(func, ast.Name) and func.id == "ArgumentParser"
    ):
        for name in targets:
            program.parsers[name] = {}
    elif (
        isinstance(func, ast.Attribute)
        and func.attr == "parse_args"
        and isinstance(func.value, ast.Name)
        and func.value.id in program.parsers
        and not value.args
    ):
        for name in targets:
            program.namespaces[name] = func.value.id


def _add_argument(program: _Program, call: ast.Call) -> None:
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "add_argument" and isinstance(func.value, ast.Name)):
        return
    parser = program.parsers.get(func.value.id)
    if parser is None:
        return
    flags = tuple(a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    action = keywords.get("action")
    kind = (
        action.value
        if isinstance(action, ast.Constant) and isinstance(action.value, str)
        else ("store" if action is None else "?")
    )
    dest_node = keywords.get("dest")
    long = next((f for f in flags if f.startswith("--")), flags[0] if flags else "")
    dest = (
        dest_node.value
        if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str)
        else long.lstrip("-").replace("-", "_")
    )
    default_node = keywords.get("default")
    if default_node is None:
        default: object = False if kind == "store_true" else True if kind == "store_false" else None
    else:
        default = default_node.value if isinstance(default_node, ast.Constant) else _UNKNOWN
    parser[dest] = (kind, default, flags)


def _argument(program: _Program, namespace: str, dest: str) -> object:
    """The value `args.dest` takes for the command's words (argparse's rules for the actions read)."""
    parser = program.parsers.get(program.namespaces.get(namespace, ""), None)
    if parser is None or dest not in parser:
        return _UNKNOWN
    kind, default, flags = parser[dest]
    words = program.argv[1:]
    if any("$" in w or "`" in w or "__UNRESOLVED_" in w for w in words) or kind not in ("store", "store_true", "store_false"):
        return _UNKNOWN
    found: object = default
    for i, word in enumerate(words):
        option, eq, inline = word.partition("=")
        if option not in flags:
            if any(word.startswith(f) and len(word) > len(f) and not f.startswith("--") for f in flags):
                return _UNKNOWN  # `-xVALUE`: not read
            continue
        if kind == "store_true":
            found = True
        elif kind == "store_false":
            found = False
        else:
            found = inline if eq else (words[i + 1] if i + 1 < len(words) else _UNKNOWN)
    return found


# --- conditions -----------------------------------------------------------------------------------------------


def _truth(program: _Program, test: ast.expr) -> bool | None:
    value = _value(program, test)
    return None if value is _UNKNOWN else bool(value)


def _value(program: _Program, node: ast.expr) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id == "__name__":
        return "__main__"  # the program is run, not imported
    if isinstance(node, ast.BoolOp):
        values = [_value(program, v) for v in node.values]
        if isinstance(node.op, ast.And):
            if any(v is not _UNKNOWN and not v for v in values):
                return False
            return _UNKNOWN if any(v is _UNKNOWN for v in values) else values[-1]
        if any(v is not _UNKNOWN and v for v in values):
            return True
        return _UNKNOWN if any(v is _UNKNOWN for v in values) else values[-1]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _value(program, node.operand)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _value(program, node.left), _value(program, node.comparators[0])
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        op = node.ops[0]
        try:
            if isinstance(op, ast.In | ast.NotIn):
                found = left in right  # type: ignore[operator]
                return found if isinstance(op, ast.In) else not found
            for kind, function in _COMPARE.items():
                if isinstance(op, kind):
                    return function(left, right)
        except TypeError:
            return _UNKNOWN
        return _UNKNOWN
    if _is_argv(node):
        return _UNKNOWN if _late(program) else list(program.argv)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
        inner = _value(program, node.args[0])
        return _UNKNOWN if inner is _UNKNOWN or not isinstance(inner, list | str | tuple) else len(inner)
    if isinstance(node, ast.Subscript) and _is_argv(node.value) and isinstance(node.slice, ast.Constant):
        index = node.slice.value
        if _late(program) or not isinstance(index, int):
            return _UNKNOWN
        return program.argv[index] if -len(program.argv) <= index < len(program.argv) else _UNKNOWN
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in program.namespaces:
        return _argument(program, node.value.id, node.attr)
    return _UNKNOWN


_COMPARE: Mapping[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
}


def _late(program: _Program) -> bool:
    return any("$" in w or "`" in w or "__UNRESOLVED_" in w for w in program.argv[1:])
