"""Tests whose every assertion sits under an `if` on the CI environment; pure over one file's text.

`if is_in_ci(): self.assertGreater(score, 0.45)` as a test's only check: where the condition is false the test
runs (a server, an eval) and passes having checked nothing of what it computed. The condition is the guard: it
"skips" the test's checks where it is false, and `specmatrix guards` evaluates it on each runner as any guard,
with the runner's (or the job's container's) environment, and reports a certain miss as `silent-pass`.

Only conditions that read the CI environment (`is_in_ci()`, `is_in_amd_ci()`, `os.environ`, `os.getenv`,
`get_bool_env_var`) are read: a data-dependent `if result:` is the test's own business. A test that calls, outside
the gate, a method of its class, a function of its own file, or anything named like a check (`check_`, `verify`,
`validate`, `expect`, `compare`) may check through it: no guard is made for it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence

from matrix.guards.model import ExprCondition, FileAnalysis, Guard, GuardKind, ScopeKind, SkipCondition

# A gating `if` on the CI environment (a line starting `if`/`elif` that names one of these): only files with one
# and an assertion are parsed again.
_ENV_NAMES = frozenset({"is_in_ci", "is_in_amd_ci", "environ", "getenv", "get_bool_env_var"})
# The leading `\b` is tested by hand on each occurrence (`_WORD`): written into the pattern, it makes the engine
# try every position of the file (three times slower over sglang's registered suite).
_NAME = re.compile(rf"(?:{'|'.join(sorted(_ENV_NAMES))})\b")
_WORD = re.compile(r"\w")
_IF_START = re.compile(r"[ \t]*(?:el)?if\b")
_CHECKS = re.compile(r"check|verify|validate|expect|compare|assert", re.IGNORECASE)
MAX_TESTS = 2000


def _gates(text: str) -> bool:
    """Whether a line of `text` is an `if`/`elif` naming the CI environment, found from the names' few occurrences
    rather than by trying a pattern at every line start."""
    for found in _NAME.finditer(text):
        if found.start() and _WORD.match(text, found.start() - 1):
            continue  # inside a longer word (`xenviron`)
        start = text.rfind("\n", 0, found.start()) + 1
        if _IF_START.match(text, start):
            return True
    return False


def gated_guards(analysis: FileAnalysis, text: str) -> tuple[Guard, ...]:
    """One guard per test whose assertions all run under an `if` on the CI environment (kind GATED_ASSERTIONS):
    it fires where that condition is false, i.e. where the test checks nothing."""
    if not analysis.is_test_file or "assert" not in text or not _gates(text):
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    tests = {s.nodeid for s in analysis.scopes if s.kind is ScopeKind.FUNCTION}
    local = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    out: list[Guard] = []
    for nodeid, function in _tests(analysis.path, tree):
        if nodeid not in tests or len(out) >= MAX_TESTS:
            continue
        guard = _guard(nodeid, function, local)
        if guard is not None:
            out.append(guard)
    return tuple(out)


def _tests(path: str, tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            yield f"{path}::{node.name}", node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test"):
                    yield f"{path}::{node.name}::{item.name}", item


class _Checks:
    """The checks of one test body, each with the `if` tests above it (innermost last)."""

    def __init__(self, local: set[str]) -> None:
        self.local = local
        self.gated: list[tuple[ast.stmt, tuple[ast.expr, ...]]] = []
        self.open = False  # a check outside any gate, or a call that may check

    def walk(self, body: Sequence[ast.stmt], path: tuple[ast.expr, ...], depth: int = 0) -> None:
        if depth > 32:
            self.open = True
            return
        for stmt in body:
            if self.open:
                return
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if isinstance(stmt, ast.If):
                self._calls(stmt.test, path)
                inner = (*path, stmt.test)
                self.walk(stmt.body, inner, depth + 1)
                if stmt.orelse:
                    self.walk(stmt.orelse, (*path, ast.UnaryOp(op=ast.Not(), operand=stmt.test)), depth + 1)
                continue
            if isinstance(stmt, ast.Try | ast.TryStar):
                self.walk(stmt.body, path, depth + 1)
                for handler in stmt.handlers:
                    self.walk(handler.body, path, depth + 1)
                self.walk([*stmt.orelse, *stmt.finalbody], path, depth + 1)
                continue
            if isinstance(stmt, ast.With | ast.AsyncWith):
                if any(_is_check(item.context_expr) for item in stmt.items):
                    self._check(stmt, path)
                self.walk(stmt.body, path, depth + 1)
                continue
            if isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
                self.walk([*stmt.body, *stmt.orelse], path, depth + 1)
                continue
            if isinstance(stmt, ast.Assert | ast.Raise) or (isinstance(stmt, ast.Expr) and _is_check(stmt.value)):
                self._check(stmt, path)
                continue
            self._calls(stmt, path)

    def _check(self, stmt: ast.stmt, path: tuple[ast.expr, ...]) -> None:
        if any(_reads_env(test) for test in path):
            self.gated.append((stmt, path))
        else:
            self.open = True

    def _calls(self, node: ast.AST, path: tuple[ast.expr, ...]) -> None:
        """A call that may check is a check of unknown reach: outside a gate it leaves the test open."""
        if any(_reads_env(test) for test in path):
            return
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            on_self = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")
            if on_self or name in self.local or _CHECKS.search(name):
                self.open = True
                return


def _is_check(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name.startswith("assert") or name in ("fail", "raises", "warns")


def _reads_env(test: ast.expr) -> bool:
    for node in ast.walk(test):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
        if name in _ENV_NAMES:
            return True
    return False


def _guard(nodeid: str, function: ast.FunctionDef | ast.AsyncFunctionDef, local: set[str]) -> Guard | None:
    if any(not _plain_decorator(d) for d in function.decorator_list):
        return None  # a wrapping decorator may check what the body returns
    checks = _Checks(local)
    checks.walk(function.body, ())
    if checks.open or not checks.gated:
        return None
    paths = list(dict.fromkeys(tuple(ast.dump(t) for t in path) for _, path in checks.gated))
    by_dump = {tuple(ast.dump(t) for t in path): path for _, path in checks.gated}
    # The checks run when one gate's path holds; none runs when every path fails.
    reached: list[ast.expr] = [_all(by_dump[key]) for key in paths]
    runs = reached[0] if len(reached) == 1 else ast.BoolOp(op=ast.Or(), values=reached)
    first, gates = checks.gated[0]
    line = getattr(gates[-1], "lineno", first.lineno)  # the innermost `if` over the first check
    runs = ast.fix_missing_locations(runs if hasattr(runs, "lineno") else ast.copy_location(runs, first))
    condition: SkipCondition = ExprCondition(expr=runs, negate=True)
    lines = ", ".join(str(s.lineno) for s, _ in checks.gated[:6])
    source = f"every assertion of {function.name} (line {lines}) runs only if {ast.unparse(runs)[:200]}"
    return Guard(scope=nodeid, kind=GuardKind.GATED_ASSERTIONS, line=line, source=source, conditions=(condition,))


def _all(path: tuple[ast.expr, ...]) -> ast.expr:
    return path[0] if len(path) == 1 else ast.BoolOp(op=ast.And(), values=list(path))


def _plain_decorator(node: ast.expr) -> bool:
    """Marks and skips (`pytest.mark.x`, `unittest.skipIf(...)`) leave the body's result unchecked."""
    target = node.func if isinstance(node, ast.Call) else node
    text = ast.unparse(target)
    return text.startswith(("pytest.mark.", "mark.", "unittest.skip", "skip")) or text in ("staticmethod", "classmethod")
