"""What a registered file tests when CI runs it as a script, read from its text; pure.

sglang's `run_suite.py` starts each registered file as `python3 FILE` (`-f` added on newer trees; sglang
python/sglang/test/ci/ci_utils.py `run_unittest_files`, main 2026-07): only the file's `__main__` block decides what
runs. A file with tests whose block is missing, only `pass`, indented inside another block, or calls no test runner
and no test (a benchmark CLI, say) runs none of them there: `never-runs`. A test whose body is only `pass` (or `...`,
after an optional docstring) passes having tested nothing: `silent-pass` (an override of an inherited test says so).

Only small fragments are parsed (the `__main__` block, the module-level functions it calls), never the whole file
again. A call the reading cannot see into whose name may run tests (`*main*`, `*test*`, `*suite*`) leaves the
verdict open: no finding, never "runs nothing" by default.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from matrix.core.finding import Finding
from matrix.guards.model import GuardFindingKind, ScopeKind, TestScope, dotted, guard_finding
from matrix.registered_suite.exits import DroppedExit, Fragment, dropped_exit

_MAIN = re.compile(r"""^([ \t]*)if\s+(?:__name__\s*==\s*['"]__main__['"]|['"]__main__['"]\s*==\s*__name__)\s*:""", re.M)
_RUNNERS = re.compile(r"(^|\.)(unittest|pytest)\.main$|pytest_main|unittest_main|TextTestRunner|TestProgram")
_MAY_RUN = re.compile(r"main|test|suite", re.I)
MAX_DEPTH = 3  # module-level functions followed from the block
MAX_FRAGMENT_LINES = 2000


@dataclass(frozen=True, kw_only=True)
class ScriptRun:
    """Whether running the file as a script runs its tests: True, False (with why and the line), or None (open)."""

    runs: bool | None
    why: str = ""
    line: int = 1


def _block(lines: Sequence[str], start: int) -> str:
    """The statement at `start` (0-based) and every following line indented deeper than it."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and end - start < MAX_FRAGMENT_LINES:
        line = lines[end]
        stripped = line.lstrip()
        # A closing bracket at the statement's own indent ends a multi-line signature or call, not the block.
        if stripped and not stripped.startswith(("#", ")", "]", "}")) and len(line) - len(stripped) <= indent:
            break
        end += 1
    return "\n".join(line[indent:] if line[:indent].strip() == "" else line for line in lines[start:end])


def _parse(fragment: str) -> ast.Module | None:
    try:
        return ast.parse(fragment)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _calls(node: ast.AST) -> list[str]:
    return [name for call in ast.walk(node) if isinstance(call, ast.Call) and (name := dotted(call.func)) is not None]


def _def_line(lines: Sequence[str], name: str) -> int | None:
    pattern = re.compile(rf"^(async\s+)?def\s+{re.escape(name)}\s*\(")
    for i, line in enumerate(lines):
        if pattern.match(line):
            return i
    return None


def script_run(text: str, tests: Sequence[str], lines: Sequence[str] | None = None) -> ScriptRun:
    """Whether `python3 FILE` runs a test of `tests` (the file's test names); `text` is the file's source."""
    found = list(_MAIN.finditer(text))
    top = [m for m in found if not m.group(1)]
    if not top:
        if found:
            line = text.count("\n", 0, found[-1].start()) + 1
            return ScriptRun(runs=False, why=f"its `__main__` block (line {line}) is nested in an indented block", line=line)
        return ScriptRun(runs=False, why="it has no `if __name__ == '__main__':` block")
    start = text.count("\n", 0, top[-1].start())
    lines = lines if lines is not None else text.splitlines()
    tree = _parse(_block(lines, start))
    if tree is None:
        return ScriptRun(runs=None)
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.If) else []
    if all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in body):
        return ScriptRun(runs=False, why=f"its `__main__` block (line {start + 1}) is only `pass`", line=start + 1)
    names = set(tests)
    seen: set[str] = set()
    frontier = _calls(tree)
    shown = list(dict.fromkeys(frontier))
    for _ in range(MAX_DEPTH + 1):
        following: list[str] = []
        for name in frontier:
            last = name.rpartition(".")[2]
            if _RUNNERS.search(name) or last in names or last.startswith(("test", "Test")):
                return ScriptRun(runs=True)
            if "." in name or name in seen:
                if "." in name and _MAY_RUN.search(last) and not name.startswith(("argparse.", "parser.", "print")):
                    return ScriptRun(runs=None)
                continue
            seen.add(name)
            at = _def_line(lines, name)
            if at is None:
                if _MAY_RUN.search(name):
                    return ScriptRun(runs=None)  # imported or built at run time: cannot be read here
                continue
            fn = _parse(_block(lines, at))
            if fn is None:
                return ScriptRun(runs=None)
            following.extend(_calls(fn))
        if not following:
            break
        frontier = following
    else:
        return ScriptRun(runs=None)  # deeper than the reading follows
    called = ", ".join(shown[:6]) + (" ..." if len(shown) > 6 else "")
    return ScriptRun(
        runs=False,
        why=f"its `__main__` block (line {start + 1}) calls {called or 'nothing'}, and no test runner or test",
        line=start + 1,
    )


def exit_dropped(text: str, lines: Sequence[str] | None = None) -> DroppedExit | None:
    """The test-runner call whose exit code the file's `__main__` block drops (`exits.dropped_exit`), if any."""
    top = [m for m in _MAIN.finditer(text) if not m.group(1)]
    if not top:
        return None
    start = text.count("\n", 0, top[-1].start())
    lines = lines if lines is not None else text.splitlines()
    tree = _parse(_block(lines, start))
    if tree is None or not tree.body or not isinstance(tree.body[0], ast.If):
        return None

    def function(name: str) -> Fragment | None:
        at = _def_line(lines, name)
        fn = _parse(_block(lines, at)) if at is not None else None
        if at is None or fn is None or not fn.body or not isinstance(fn.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        return Fragment(body=tuple(fn.body[0].body), offset=at)

    return dropped_exit(Fragment(body=tuple(tree.body[0].body), offset=start), function)


def names_of_tests(scopes: Sequence[TestScope]) -> list[str]:
    """The file's test functions and test classes by name."""
    out: list[str] = []
    for scope in scopes:
        if scope.kind is ScopeKind.MODULE:
            continue
        name = scope.nodeid.rpartition("::")[2]
        if (scope.kind is ScopeKind.FUNCTION and name.startswith("test")) or scope.kind is ScopeKind.CLASS:
            out.append(name)
    return out


@dataclass(frozen=True, kw_only=True)
class EmptyTest:
    nodeid: str
    line: int
    source: str
    override: bool


_TRIVIAL = re.compile(r"^\s*(pass|\.\.\.)\s*(#.*)?$")


def has_trivial_line(text: str) -> bool:
    """Whether an indented line is only `pass` or `...`: a file without one has no empty test, and is not split
    into lines. Found by `str.find` (a multi-line regex tries every position of the text, several times slower)."""
    for word in ("pass", "..."):
        at = text.find(word)
        while at != -1:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            line = text[start : end if end != -1 else len(text)]
            if start < at and not line[: at - start].strip() and _TRIVIAL.match(line):
                return True
            at = text.find(word, at + len(word))
    return False


def empty_tests(lines: Sequence[str], scopes: Sequence[TestScope]) -> list[EmptyTest]:
    """Test functions whose body is only `pass` or `...` (after a docstring, if any); `override` when the class
    inherits tests (a base other than a TestCase)."""
    out: list[EmptyTest] = []
    bases: dict[str, bool] | None = None
    for scope in scopes:
        name = scope.nodeid.rpartition("::")[2]
        if scope.kind is not ScopeKind.FUNCTION or not name.startswith("test"):
            continue
        at = scope.line - 1  # a function scope's line is its `def` line
        if not 0 <= at < len(lines) or not _looks_empty(lines, at):
            continue
        fn = _parse(_block(lines, at))
        if fn is None or not fn.body or not isinstance(fn.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = fn.body[0].body
        if not all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in body):
            continue
        if bases is None:
            bases = inheriting_classes(lines, scopes)
        inherited = bases.get(scope.parent or "", False)
        out.append(EmptyTest(nodeid=scope.nodeid, line=at + 1, source=lines[at].strip(), override=inherited))
    return out


def inheriting_classes(lines: Sequence[str], scopes: Sequence[TestScope]) -> dict[str, bool]:
    """Class node id -> whether it has a base other than a TestCase (so it inherits tests it may override)."""
    out: dict[str, bool] = {}
    for scope in scopes:
        if scope.kind is not ScopeKind.CLASS or not 0 < scope.line <= len(lines):
            continue
        header = " ".join(lines[scope.line - 1 : scope.line + 3])
        match = re.search(r"class\s+\w+\s*\(([^)]*)\)", header)
        if match is None:
            continue
        bases = [b.strip().rpartition(".")[2] for b in match.group(1).split(",") if b.strip()]
        out[scope.nodeid] = any(not b.endswith("TestCase") and "=" not in b for b in bases)
    return out


def _looks_empty(lines: Sequence[str], at: int) -> bool:
    """A cheap look before parsing: after the signature, an optional docstring, then `pass`/`...` or the end of the
    body. Most test bodies start with real code, or with a docstring followed by code: neither is parsed."""
    indent = len(lines[at]) - len(lines[at].lstrip())
    i = at
    while i < len(lines) and i - at < 20 and not lines[i].split("#", 1)[0].rstrip().endswith(":"):
        i += 1
    i += 1
    seen_doc = False
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        if len(lines[i]) - len(lines[i].lstrip()) <= indent:
            return False  # the body ended: a docstring alone is not read as a test (it may document a stub)
        if _TRIVIAL.match(stripped):
            return True
        if seen_doc or not stripped.startswith(('"', "'", 'r"', "r'")):
            return False
        seen_doc = True
        quote = stripped.lstrip("r")[:3] if stripped.lstrip("r")[:3] in ('"""', "'''") else ""
        if quote and stripped.lstrip("r").count(quote) < 2:
            i += 1
            while i < len(lines) and quote not in lines[i]:
                i += 1
        i += 1
    return False


RUN_AS_SCRIPT = (
    "run_suite.py starts every registered file as a script (`python3 FILE`, `-f` added on newer trees; sglang "
    "python/sglang/test/ci/ci_utils.py run_unittest_files)"
)


def script_findings(
    path: str,
    scopes: Sequence[TestScope],
    runners: tuple[str, ...],
    text: str,
    guarded: frozenset[str] = frozenset(),
    *,
    as_script: bool = False,
) -> list[Finding]:
    """`never-runs` for a file whose `__main__` block runs none of its tests (judged only when `as_script`: a
    workflow job starts the file through run_suite.py), `silent-pass` for each empty test that no guard of its own
    skips (`guarded`: the node ids with one; a visible skip is no silent pass)."""
    if not runners:
        return []
    out: list[Finding] = []
    run = ScriptRun(runs=None)
    names = names_of_tests(scopes) if as_script else []
    if names:
        run = script_run(text, names)
    if run.runs is False:
        out.append(
            guard_finding(
                GuardFindingKind.NEVER_RUNS,
                path=path,
                line=run.line,
                test=path,
                runners=runners,
                guard="if __name__ == '__main__':",
                reason=f"{RUN_AS_SCRIPT}, and run so it runs none of its tests: {run.why}",
                hint='end the file with `if __name__ == "__main__": unittest.main()` (or `sys.exit(pytest.main([__file__]))`)',
            )
        )
        return out
    dropped = exit_dropped(text) if names and "main(" in text else None
    if dropped is not None:
        out.append(
            guard_finding(
                GuardFindingKind.EXIT_CODE_DROPPED,
                path=path,
                line=dropped.line,
                test=path,
                runners=runners,
                guard=dropped.call,
                reason=f"{RUN_AS_SCRIPT} and judges it by its exit code; its `__main__` block drops the exit code of "
                f"{dropped.call}, so the file passes CI whatever its tests do",
                hint="pass the result on: `sys.exit(pytest.main([__file__]))` (unittest.main() exits by itself unless "
                "given exit=False)",
            )
        )
    if not has_trivial_line(text):
        return out
    for empty in empty_tests(text.splitlines(), [s for s in scopes if s.nodeid not in guarded]):
        what = "overrides an inherited test with an empty body" if empty.override else "has an empty body"
        out.append(
            guard_finding(
                GuardFindingKind.SILENT_PASS,
                path=path,
                line=empty.line,
                test=empty.nodeid,
                runners=runners,
                guard=empty.source,
                reason=f"the test {what} (only `pass` or `...`): it passes having tested nothing",
                hint=(
                    'delete it (the inherited test then runs), or skip visibly: self.skipTest("why")'
                    if empty.override
                    else 'write the test (or delete it), or skip visibly: self.skipTest("why")'
                ),
            )
        )
    return out
