"""What a registered file's `__main__` block does with its test runner's exit code, read from its text; pure.

sglang's CI starts each registered file as a script and judges it by its exit code (sglang
python/sglang/test/ci/ci_utils.py `run_unittest_files`). `pytest.main(...)` returns the code and exits nothing itself
(pytest docs, "Calling pytest from Python code": "this will not raise SystemExit but return the exit code
instead"); `unittest.main(exit=False)` returns the program without exiting (Python docs, `unittest.main`). A block
that calls either and drops the result passes CI whatever its tests do: `exit-code-dropped`.

The result is kept when it reaches an exit: an argument of `sys.exit`, `exit`, `quit`, `os._exit` or `SystemExit`
(`raise SystemExit(pytest.main(...))`), a name bound to it and used so, a test of an `if` whose branches exit, or the
return of a function whose call is itself kept. It is dropped when the call is a statement of its own, is bound to a
name never read again, or only reaches `print`. Anything else (passed to another function, stored elsewhere) is not
judged: no finding.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from matrix.guards.model import dotted

_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "SystemExit", "builtins.exit", "_exit"})
_SHOWS = frozenset({"print", "logging.info", "logging.warning", "logging.error", "logger.info", "log.info"})
MAX_DEPTH = 3  # module-level functions followed from the block
MAX_NAMES = 8  # names a value is bound through (`code = pytest.main(); rc = code`) before it is not judged


class Use(StrEnum):
    """What a block does with a value: makes it the exit code, returns it, drops it, or something not judged."""

    EXITS = "exits"
    RETURNS = "returns"
    DROPS = "drops"
    UNKNOWN = "unknown"


@dataclass(frozen=True, kw_only=True)
class DroppedExit:
    """A test-runner call whose exit code never reaches the process's exit: where, and the call as written."""

    line: int
    call: str


def runner_call(node: ast.AST) -> bool:
    """`pytest.main(...)`, or `unittest.main(..., exit=False)` (with `exit=True` or none it exits by itself)."""
    if not isinstance(node, ast.Call):
        return False
    name = dotted(node.func) or ""
    if name == "pytest.main":
        return True
    if name == "unittest.main":
        return any(k.arg == "exit" and isinstance(k.value, ast.Constant) and k.value.value is False for k in node.keywords)
    return False


def _exit_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (dotted(node.func) or "") in _EXITS


def _exits(statements: Sequence[ast.stmt]) -> bool:
    """Whether any statement (at any depth) exits or raises."""
    return any(_exit_call(n) or isinstance(n, ast.Raise) for s in statements for n in ast.walk(s))


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def use_of(value: ast.AST, body: Sequence[ast.stmt], parents: dict[int, ast.AST], names: int = 0) -> Use:
    """What the statements of `body` do with the value of the expression `value` (a node inside one of them)."""
    if names > MAX_NAMES:
        return Use.UNKNOWN
    node: ast.AST = value
    while True:
        parent = parents.get(id(node))
        if parent is None:
            return Use.UNKNOWN
        if _exit_call(parent):
            return Use.EXITS
        if isinstance(parent, ast.Call) and node is not parent.func:
            name = dotted(parent.func) or ""
            return Use.DROPS if name in _SHOWS else Use.UNKNOWN
        if isinstance(parent, ast.stmt):
            return _statement_use(node, parent, body, parents, names)
        node = parent


def _statement_use(value: ast.AST, statement: ast.stmt, body: Sequence[ast.stmt], parents: dict[int, ast.AST], names: int) -> Use:
    if isinstance(statement, ast.Raise):
        return Use.EXITS
    if isinstance(statement, ast.Return):
        return Use.RETURNS
    if isinstance(statement, ast.Expr):
        return Use.DROPS
    if isinstance(statement, ast.If | ast.While) and value is statement.test:
        return Use.EXITS if _exits([*statement.body, *statement.orelse]) else Use.DROPS
    if isinstance(statement, ast.Assign | ast.AnnAssign) and value is statement.value:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            return _name_use(targets[0].id, statement, body, parents, names + 1)
    return Use.UNKNOWN


def _name_use(name: str, bound: ast.stmt, body: Sequence[ast.stmt], parents: dict[int, ast.AST], names: int) -> Use:
    """How a name bound to the value is used after `bound`: the strongest use of its reads (none read: dropped)."""
    reads = [
        n
        for s in body
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and n.lineno >= bound.lineno
    ]
    if not reads:
        return Use.DROPS
    uses = {use_of(n, body, parents, names) for n in reads}
    for strongest in (Use.EXITS, Use.RETURNS, Use.UNKNOWN):
        if strongest in uses:
            return strongest
    # Read only where the value is dropped (printed, compared in an `if` that never exits): dropped.
    return Use.DROPS


def _calls_in(statements: Sequence[ast.stmt]) -> Iterator[ast.Call]:
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                yield node


@dataclass(frozen=True, kw_only=True)
class Fragment:
    """A parsed piece of the file: its statements and the line (1-based) its first line has in the file."""

    body: tuple[ast.stmt, ...]
    offset: int  # added to a node's line number to give the file's


Functions = Callable[[str], "Fragment | None"]


def dropped_exit(block: Fragment, functions: Functions) -> DroppedExit | None:
    """The first test-runner call whose exit code the `__main__` block drops, following the module-level functions
    the block calls (`functions`: a name -> the body of its definition, None when there is none or it is not read)."""
    return _dropped(block, functions, 0, frozenset())


def _dropped(scope: Fragment, functions: Functions, depth: int, seen: frozenset[str]) -> DroppedExit | None:
    parents = _parents(ast.Module(body=list(scope.body), type_ignores=[]))
    for call in _calls_in(scope.body):
        if runner_call(call):
            if use_of(call, scope.body, parents) is Use.DROPS:
                return DroppedExit(line=call.lineno + scope.offset, call=_shown(call))
            continue
        name = dotted(call.func) or ""
        if "." in name or name in seen or depth >= MAX_DEPTH:
            continue
        found = functions(name)
        if found is None:
            continue
        inner = _returned_runner(found)
        if inner is not None and use_of(call, scope.body, parents) is Use.DROPS:
            # `main()` returns pytest.main's code, and the block drops what `main()` returns.
            return DroppedExit(line=inner.lineno + found.offset, call=f"{_shown(inner)} (returned by {name}(), then dropped)")
        deeper = _dropped(found, functions, depth + 1, seen | {name})
        if deeper is not None:
            return deeper
    return None


def _returned_runner(function: Fragment) -> ast.Call | None:
    """A test-runner call a function returns (`return pytest.main(...)`, or a name bound to it and returned)."""
    parents = _parents(ast.Module(body=list(function.body), type_ignores=[]))
    for call in _calls_in(function.body):
        if runner_call(call) and use_of(call, function.body, parents) is Use.RETURNS:
            return call
    return None


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."
