"""Find the skip guards of a parsed test file: module, class and test level, `__main__` blocks, decorator factories.

`analyse_source(path, text)` is the entry point: it reads the file (`matrix.guards.source`) and walks its tree
into a `FileAnalysis`.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from matrix.guards.model import (
    AlwaysSkips,
    Bindings,
    ExprCondition,
    FileAnalysis,
    Guard,
    GuardKind,
    MissingModules,
    ModuleNames,
    OpaqueCondition,
    ScopeKind,
    SkipCondition,
    TestScope,
    dotted,
)
from matrix.guards.rebinding import reading
from matrix.guards.source import (
    IMPORTABLE,
    VERSION_BELOW,
    SourceText,
    blanked_lines,
    collect_bindings,
    collect_module_names,
    elide,
    proven,
    read_registrations,
    resolve,
    straight_line,
    tried_modules,
)

# --- decorator factories ----------------------------------------------------------------------------------------------
# Decorator factories of the audited file: a module function whose single `return` is a skip decorator.
#
# `@requires_major(9)` with `def requires_major(major): return unittest.skipUnless(... == major, ...)` is
# read as that skip with the call's arguments put in for the parameters (a copy; the file's tree is untouched).

MAX_FACTORY_DEPTH = 4


def single_return(fn: ast.FunctionDef) -> ast.expr | None:
    """The expression of a function whose body (docstring and plain `from m import name` lines aside) is one
    `return`; the imported names are predicates matched by their own name, as at module level."""
    body = [
        s
        for s in fn.body
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        and not (isinstance(s, ast.ImportFrom) and all(a.asname is None and a.name != "*" for a in s.names))
    ]
    if len(body) == 1 and isinstance(body[0], ast.Return):
        return body[0].value
    return None


class Substitute(ast.NodeTransformer):
    """Put expressions in for names, in place (a decorator call's keyword values; see `substitute` for a copy)."""

    def __init__(self, values: Mapping[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.values.get(node.id, node)


def substitute(expr: ast.expr, fn: ast.FunctionDef, call: ast.Call | None) -> ast.expr | None:
    """`expr` with the factory's parameters replaced by the call's argument expressions; None if they do not fit."""
    values = bound_arguments(fn, call)
    if values is None:
        return None
    out = _substituted(expr, values, expr, 0)
    return out if isinstance(out, ast.expr) else None


def bound_arguments(fn: ast.FunctionDef, call: ast.Call | None) -> dict[str, ast.expr] | None:
    """Each parameter of `fn` with the argument expression (or default) `call` gives it; None if they do not fit."""
    if call is None:
        return {}
    params = [a.arg for a in fn.args.args]
    if fn.args.vararg or fn.args.kwarg or len(call.args) > len(params):
        return None
    values = dict(zip(params, call.args, strict=False))
    for kw in call.keywords:
        if kw.arg is None or kw.arg not in params:
            return None
        values[kw.arg] = kw.value
    defaults = dict(zip(params[len(params) - len(fn.args.defaults) :], fn.args.defaults, strict=True))
    for name in params:
        if name not in values:
            if name not in defaults:
                return None
            values[name] = defaults[name]
    return values


MAX_SUBSTITUTED_DEPTH = 200


def _substituted(node: ast.AST, values: Mapping[str, ast.expr], where: ast.expr, depth: int) -> ast.AST | None:
    """A fresh copy of `node` (the factory's own tree stays untouched) with the parameters' names replaced by the
    argument expressions (shared, not copied: the decorator's tree stays untouched too), every copied expression
    pointing at the factory's return (the text a finding shows); None past `MAX_SUBSTITUTED_DEPTH` levels."""
    if isinstance(node, ast.Name) and node.id in values:
        return values[node.id]
    if depth > MAX_SUBSTITUTED_DEPTH:
        return None
    fields: dict[str, object] = {}
    for name, value in node.__dict__.items():
        if isinstance(value, ast.AST):
            inner = _substituted(value, values, where, depth + 1)
            if inner is None:
                return None
            fields[name] = inner
        elif isinstance(value, list):
            items: list[object] = []
            for item in value:
                copy = _substituted(item, values, where, depth + 1) if isinstance(item, ast.AST) else item
                if copy is None:
                    return None
                items.append(copy)
            fields[name] = items
        else:
            fields[name] = value
    # Built without __init__, its fields set as they are: Python 3.13 warns when a node is made without them.
    copied = type(node).__new__(type(node))
    copied.__dict__.update(fields)
    if isinstance(copied, ast.expr):
        ast.copy_location(copied, where)
    return copied


# --- __main__ blocks --------------------------------------------------------------------------------------------------
# A registered file run as a script: `if __name__ == "__main__":` blocks that print a skip and exit 0.
#
# sglang's CI runs each registered file as a script (`run_unittest_files` in python/sglang/test/ci/ci_utils.py
# starts `python3 FILE`, with `-f` on newer trees), so such a block decides whether anything runs on a runner.


def is_main_block(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare) or len(stmt.test.ops) != 1:
        return False
    sides = [stmt.test.left, *stmt.test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return isinstance(stmt.test.ops[0], ast.Eq) and len(names) == 1 and len(mains) == 1


def script_only(guard: Guard) -> bool:
    """A guard that acts only when the file runs as a script (`if __name__ == "__main__":`): under pytest the
    module's `__name__` is never "__main__", so such a block is no guard of a collected test."""
    if guard.kind is GuardKind.MAIN_EXIT:
        return True
    return any(
        isinstance(c, ExprCondition) and not c.negate and is_main_block(ast.If(test=c.expr, body=[], orelse=[]))
        for c in guard.conditions
    )


def exit_zero_call(stmt: ast.stmt) -> bool:
    """`sys.exit(0)`, `sys.exit()`, `exit(0)`, `os._exit(0)`: the script ends with success."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    name = dotted(call.func) or ""
    if name not in ("sys.exit", "exit", "quit", "os._exit"):
        return False
    if not call.args:
        return name != "os._exit"
    arg = call.args[0]
    return isinstance(arg, ast.Constant) and (arg.value == 0 or arg.value is None) and not isinstance(arg.value, bool)


def exits_zero(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and exit_zero_call(body[-1])


def prints_skip(body: Sequence[ast.stmt]) -> bool:
    """A `print(...)` or logging call mentioning a skip, the message CI shows for a skipped script."""
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            name = (dotted(stmt.value.func) or "").rpartition(".")[2]
            if name in ("print", "info", "warning", "warn") and "skip" in ast.dump(stmt.value).lower():
                return True
    return False


def main_exit_guards(
    body: Sequence[ast.stmt], conds: tuple[SkipCondition, ...], path: str, segment: Callable[[ast.AST], str]
) -> list[Guard]:
    """Guards for the skips-and-exits of a `__main__` block: an `if` whose body prints a skip and exits 0,
    or such an exit after a printed skip; code after an exiting `if` runs only when its test is false."""
    out: list[Guard] = []
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.If):
            test = ExprCondition(expr=stmt.test)
            if exits_zero(stmt.body) and prints_skip(stmt.body):
                source = f"if {segment(stmt.test)}: ... sys.exit(0)"
                found = Guard(scope=path, kind=GuardKind.MAIN_EXIT, line=stmt.lineno, source=source, conditions=(*conds, test))
                out.append(found)
                conds = (*conds, ExprCondition(expr=stmt.test, negate=True))
                continue
            out.extend(main_exit_guards(stmt.body, (*conds, test), path, segment))
        elif exit_zero_call(stmt) and prints_skip(body[:index]):
            kind = GuardKind.MAIN_EXIT
            out.append(Guard(scope=path, kind=kind, line=stmt.lineno, source=segment(stmt), conditions=conds or (AlwaysSkips(),)))
            break
    return out


# --- the guard finder -------------------------------------------------------------------------------------------------
# Find skip guards at module, class and test level in a parsed test file.

TEST_FILE = re.compile(r"^(test_.*|.*_test)\.py$")
# Methods whose skips apply to every test of the class.
CLASS_SETUP = frozenset({"setUpClass", "setUp", "asyncSetUp", "setup_class", "setup_method"})
MODULE_SETUP = frozenset({"setUpModule", "setup_module"})
_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


# `from m import skip as bail`: a local name that calls a skip without saying so (a superset of the imports').
# Matched on the lowered text: a case-blind pattern costs ten times more.
_SKIP_ALIAS = re.compile(r"skip\w*[\s\\]+as[\s\\]+(\w+)")
# A bare `return` line may end a test early (silent-pass), so those bodies are walked too.
_EXACT_MARKS = ("return\n", "return\r")


def analyse_source(path: str, text: str) -> FileAnalysis:
    """Parse one file (never import it) and read its registrations, scopes and guards.

    Function bodies that cannot hold a skip are left out of the parse (`matrix.guards.source`)."""
    with reading(text):  # what the binding readers need not look for in this file
        return _analyse_source(path, text)


def _analyse_source(path: str, text: str) -> FileAnalysis:
    is_test = TEST_FILE.match(path.rpartition("/")[2]) is not None
    source = SourceText(text)
    lowered = text.lower()
    words = ["skip", *_SKIP_ALIAS.findall(lowered)]
    source.mark_lines(words, exact=_EXACT_MARKS, lowered=lowered)
    elision = elide(text, source.marked)
    if elision is not None:
        try:
            tree = ast.parse(elision.text, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass  # the whole text decides: parsed below, with its own error if it has one
        else:
            if proven(tree, elision):
                names = collect_module_names(tree, blanked=frozenset(elision.defs))
                missing = [a for a in skip_aliases(names) if a not in words]
                if missing:
                    # An alias the pattern missed marks more lines; a blanked body among them needs the whole parse.
                    source.mark_lines([*words, *missing], exact=_EXACT_MARKS)
                if not (missing and blanked_lines(elision, source.marked)):
                    return _analysis(path, is_test, tree, source, names)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        return FileAnalysis(path=path, is_test_file=is_test, syntax_error=f"SyntaxError: {exc.msg}", error_line=exc.lineno or 1)
    except ValueError as exc:  # source with NUL bytes
        return FileAnalysis(path=path, is_test_file=is_test, syntax_error=str(exc), error_line=1)
    except (RecursionError, MemoryError):
        return FileAnalysis(path=path, is_test_file=is_test, syntax_error="nested too deeply for the parser", error_line=1)
    return analyse_tree(path, text, tree)


def analyse_tree(path: str, text: str, tree: ast.Module) -> FileAnalysis:
    """`analyse_source` for a file the caller has already parsed whole (the tree is only read)."""
    is_test = TEST_FILE.match(path.rpartition("/")[2]) is not None
    with reading(text):
        return _analysis(path, is_test, tree, None, collect_module_names(tree), text=text)


def skip_aliases(names: ModuleNames) -> list[str]:
    """Local names imported as a skip (`skipTest`, `SkipTest`, `pytest.skip`, `importorskip`), lowercased."""
    return [local.lower() for local, target in names.imports if "skip" in target.rpartition(".")[2].lower()]


def _analysis(
    path: str, is_test: bool, tree: ast.Module, source: SourceText | None, names: ModuleNames, *, text: str = ""
) -> FileAnalysis:
    finder = _GuardFinder(path, text, names, source=source)
    try:
        finder.module(tree)
    except _TooLarge as exc:
        return FileAnalysis(path=path, is_test_file=is_test, syntax_error=str(exc), error_line=exc.line, names=names)
    return FileAnalysis(
        path=path,
        is_test_file=is_test,
        registrations=read_registrations(tree, finder.source),
        scopes=tuple(finder.scopes),
        guards=tuple(finder.guards),
        names=names,
        helpers=tuple(finder.helpers),
    )


# Tests one file's classes may inherit from their bases, in all: a chain of classes that each add a test inherits
# n*(n-1)/2 of them (pytest would collect as many tests); past the bound the file is not read, and says so.
MAX_INHERITED = 50_000


class _TooLarge(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(f"its classes inherit more than {MAX_INHERITED} tests from their bases in all; not read")
        self.line = line


@dataclass(kw_only=True)
class _ClassGuards:
    """A class's own guards, kept apart by origin so subclasses can inherit them."""

    marks: list[Guard] = field(default_factory=list)
    setup: dict[str, list[Guard]] = field(default_factory=dict)
    tests: dict[str, tuple[int, list[Guard]]] = field(default_factory=dict)


class _GuardFinder:
    # Read unmarked statements only for how they change the path (see `walk`); tests turn it off to compare.
    spare_unmarked: ClassVar[bool] = True

    def __init__(self, path: str, text: str, names: ModuleNames, source: SourceText | None = None):
        self.path = path
        if source is None:
            # A body can only skip through a name that says "skip" (skipTest, SkipTest, pytest.skip,
            # importorskip) or an import alias of one; bodies without such a line need no walk.
            source = SourceText(text)
            source.mark_lines(["skip", *skip_aliases(names)], exact=_EXACT_MARKS)
        self.source = source
        self.imports = dict(names.imports)
        self.aliases = dict(names.aliases)
        self.scopes: list[TestScope] = []
        self.guards: list[Guard] = []
        self.helpers: list[tuple[str, tuple[Guard, ...]]] = []
        self.classes: dict[str, _ClassGuards] = {}
        self.functions = dict(names.functions)
        self.depth = 0
        self.inherited = 0  # tests the classes read so far took from their bases (MAX_INHERITED)

    # --- naming -------------------------------------------------------------

    def resolved(self, node: ast.expr) -> str | None:
        name = dotted(node)
        return resolve(name, self.imports) if name else None

    def segment(self, node: ast.AST) -> str:
        text = self.source.segment(node)
        flat = " ".join((text or ast.unparse(node)).split())
        # Joining a multi-line call leaves "( " and ", )"; tidy those.
        return flat.replace("( ", "(").replace(", )", ")").replace(" )", ")")

    # --- scopes -------------------------------------------------------------

    def module(self, tree: ast.Module) -> None:
        self.scopes.append(TestScope(kind=ScopeKind.MODULE, nodeid=self.path, line=1, parent=None))
        body = straight_line(tree.body)
        for mark in pytestmark_exprs(body, self.aliases):
            self.guards.extend(self.decorator_guards(mark, self.path))
        self.guards.extend(self.applied_marks(body))
        if self.source.any_marked:
            self.walk(tree.body, (), self.path, module_level=True)
        for stmt in tree.body:
            if is_main_block(stmt):
                assert isinstance(stmt, ast.If)
                self.guards.extend(main_exit_guards(stmt.body, (), self.path, self.segment))
        for stmt in straight_line(tree.body):
            if isinstance(stmt, ast.ClassDef):
                self.class_(stmt)
            elif isinstance(stmt, _FunctionNode):
                if stmt.name in MODULE_SETUP or self.is_autouse(stmt):
                    self.guards.extend(self.body_guards(stmt, self.path))
                elif stmt.name.startswith("test"):
                    nodeid = f"{self.path}::{stmt.name}"
                    self.scopes.append(TestScope(kind=ScopeKind.FUNCTION, nodeid=nodeid, line=stmt.lineno, parent=self.path))
                    self.guards.extend(self.function_guards(stmt, nodeid))
                else:
                    # A helper or fixture that skips: its callers (the pytest collector) apply these guards.
                    found = self.body_guards(stmt, f"{self.path}::{stmt.name}")
                    if found:
                        self.helpers.append((stmt.name, tuple(found)))

    def class_(self, node: ast.ClassDef) -> None:
        nodeid = f"{self.path}::{node.name}"
        own = _ClassGuards()
        own.marks.extend(g for deco in node.decorator_list for g in self.decorator_guards(deco, nodeid))
        for mark in pytestmark_exprs(node.body, self.aliases):
            own.marks.extend(self.decorator_guards(mark, nodeid))
        for stmt in node.body:
            if isinstance(stmt, _FunctionNode):
                if stmt.name in CLASS_SETUP or self.is_autouse(stmt):
                    own.setup[stmt.name] = self.body_guards(stmt, nodeid)
                elif stmt.name.startswith("test"):
                    test_id = f"{nodeid}::{stmt.name}"
                    own.tests[stmt.name] = (stmt.lineno, self.function_guards(stmt, test_id))
        merged = self.inherit(node, own, nodeid)
        self.inherited += len(merged.tests) - len(own.tests)
        if self.inherited > MAX_INHERITED:
            raise _TooLarge(node.lineno)
        self.classes[node.name] = merged
        self.scopes.append(TestScope(kind=ScopeKind.CLASS, nodeid=nodeid, line=node.lineno, parent=self.path))
        self.guards.extend(merged.marks)
        self.guards.extend(g for guards in merged.setup.values() for g in guards)
        for name, (line, guards) in merged.tests.items():
            self.scopes.append(TestScope(kind=ScopeKind.FUNCTION, nodeid=f"{nodeid}::{name}", line=line, parent=nodeid))
            self.guards.extend(guards)

    def inherit(self, node: ast.ClassDef, own: _ClassGuards, nodeid: str) -> _ClassGuards:
        """Add what same-module base classes pass down: marks, setup not overridden, tests not overridden."""
        merged = _ClassGuards(marks=list(own.marks), setup=dict(own.setup), tests=dict(own.tests))
        for base in node.bases:
            parent = self.classes.get(base.id) if isinstance(base, ast.Name) else None
            if parent is None:
                continue
            merged.marks.extend(replace(g, scope=nodeid) for g in parent.marks)
            for name, guards in parent.setup.items():
                merged.setup.setdefault(name, [replace(g, scope=nodeid) for g in guards])
            for name, (line, guards) in parent.tests.items():
                merged.tests.setdefault(name, (line, [replace(g, scope=f"{nodeid}::{name}") for g in guards]))
        return merged

    def is_autouse(self, node: _FunctionNode) -> bool:
        return any(
            isinstance(deco, ast.Call)
            and (self.resolved(deco.func) or "").endswith("fixture")
            and any(kw.arg == "autouse" and _is_true(kw.value) for kw in deco.keywords)
            for deco in node.decorator_list
        )

    # --- guards -------------------------------------------------------------

    def function_guards(self, node: _FunctionNode, nodeid: str) -> list[Guard]:
        found = [g for deco in node.decorator_list for g in self.decorator_guards(deco, nodeid)]
        return found + self.body_guards(node, nodeid)

    def body_guards(self, node: _FunctionNode, nodeid: str) -> list[Guard]:
        collected: list[Guard] = []
        if not self.source.mentions(node):
            return collected
        self.walk(node.body, (), nodeid, module_level=False, sink=collected, test_body=node.name.startswith("test"))
        if not collected:
            return collected
        # Names the function binds (and its parameters) shadow module-level ones in its guards.
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
        local: Bindings = (*((p, None) for p in params), *collect_bindings(node.body))
        return [g.with_local_names(local) for g in collected]

    def decorator_guards(self, deco: ast.expr, nodeid: str, shown: ast.expr | None = None) -> list[Guard]:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = self.resolved(target)
        if name is None:
            return []
        if isinstance(deco, ast.Name) and isinstance(self.aliases.get(deco.id), ast.Call | ast.Attribute):
            # `requires_sm100 = pytest.mark.skipif(...)` then `@requires_sm100`
            bound = self.aliases[deco.id]
            assert bound is not None
            return self.decorator_guards(bound, nodeid, shown or deco)
        found = self.skip_mark(deco, name)
        if found is None:
            return self.factory_guards(deco, nodeid)
        kind, conditions = found
        source = self.segment(deco) if shown is None else f"{self.segment(shown)} = {self.segment(deco)}"
        return [Guard(scope=nodeid, kind=kind, line=(shown or deco).lineno, source=source, conditions=conditions)]

    def factory_guards(self, deco: ast.expr, nodeid: str) -> list[Guard]:
        """A module function used as a decorator (`@hopper_only`) or factory (`@requires_major(9)`) whose
        return is a skip decorator: its condition, with the call's arguments put in for the parameters."""
        call = deco if isinstance(deco, ast.Call) else None
        target = call.func if call is not None else deco
        fn = self.functions.get(target.id) if isinstance(target, ast.Name) else None
        if fn is None or self.depth > MAX_FACTORY_DEPTH:
            return []
        returned = single_return(fn)
        if returned is None:
            return []
        if call is None:
            # `def hopper_only(cls): return unittest.skipUnless(...)(cls)`: the decorator applied to its argument.
            applied = returned.func if isinstance(returned, ast.Call) and len(returned.args) == 1 else None
            if not isinstance(applied, ast.Call):
                return []
            returned = applied
        bound = substitute(returned, fn, call)
        if bound is None:
            return []
        self.depth += 1
        try:
            found = self.decorator_guards(bound, nodeid)
        finally:
            self.depth -= 1
        shown = self.segment(deco)
        return [replace(g, line=deco.lineno, source=f"{shown} -> {g.source}") for g in found]

    def applied_marks(self, body: Sequence[ast.stmt]) -> list[Guard]:
        """`test_x = pytest.mark.skipif(...)(test_x)`: a mark applied by a call to a test or class of the module
        (what the decorator form does) skips it the same way."""
        defined = {s.name for s in body if isinstance(s, _FunctionNode | ast.ClassDef)}
        out: list[Guard] = []
        for stmt in body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            name, value = stmt.targets[0].id, stmt.value
            applied = (
                isinstance(value, ast.Call)
                and len(value.args) == 1
                and not value.keywords
                and isinstance(value.args[0], ast.Name)
                and value.args[0].id == name
            )
            if applied and name in defined and name.startswith(("test", "Test")):
                assert isinstance(value, ast.Call)
                out.extend(replace(g, line=stmt.lineno) for g in self.decorator_guards(value.func, f"{self.path}::{name}"))
        return out

    def skip_mark(self, deco: ast.expr, name: str) -> tuple[GuardKind, tuple[SkipCondition, ...]] | None:
        last = name.rpartition(".")[2]
        call = deco if isinstance(deco, ast.Call) else None
        unittest_like = name.startswith("unittest.") or name in ("skipIf", "skipUnless")
        if unittest_like and last in ("skipIf", "skipUnless") and call is not None:
            cond = _argument(call, 0, "condition")
            if cond is None:
                return None
            kind = GuardKind.SKIP_IF if last == "skipIf" else GuardKind.SKIP_UNLESS
            return kind, (ExprCondition(expr=cond, negate=last == "skipUnless"),)
        if name.startswith("unittest.") and last == "skip":
            return GuardKind.SKIP, (AlwaysSkips(),)
        if name.endswith("mark.skipif"):
            if call is None:
                return GuardKind.MARK_SKIPIF, (AlwaysSkips(),)
            conds = list(call.args) or [kw.value for kw in call.keywords if kw.arg == "condition"]
            if not conds:
                return GuardKind.MARK_SKIPIF, (AlwaysSkips(),)
            parsed = [_string_condition(c) for c in conds]
            if any(isinstance(p, OpaqueCondition) for p in parsed):
                return GuardKind.MARK_SKIPIF, (OpaqueCondition(why="a condition string does not parse"),)
            exprs = [p.expr for p in parsed if isinstance(p, ExprCondition)]
            expr = exprs[0] if len(exprs) == 1 else ast.BoolOp(op=ast.Or(), values=exprs)
            return GuardKind.MARK_SKIPIF, (ExprCondition(expr=expr),)
        if name.endswith("mark.skip"):
            return GuardKind.MARK_SKIP, (AlwaysSkips(),)
        if name.endswith("mark.xfail") and call is not None and any(k.arg == "run" and _is_false(k.value) for k in call.keywords):
            # pytest does not run an xfail(run=False) test where its condition holds: a skip by another name.
            conds = list(call.args) or [kw.value for kw in call.keywords if kw.arg == "condition"]
            if not conds:
                return GuardKind.MARK_XFAIL_NORUN, (AlwaysSkips(),)
            parsed = [_string_condition(c) for c in conds]
            if any(isinstance(p, OpaqueCondition) for p in parsed):
                return GuardKind.MARK_XFAIL_NORUN, (OpaqueCondition(why="a condition string does not parse"),)
            exprs = [p.expr for p in parsed if isinstance(p, ExprCondition)]
            expr = exprs[0] if len(exprs) == 1 else ast.BoolOp(op=ast.Or(), values=exprs)
            return GuardKind.MARK_XFAIL_NORUN, (ExprCondition(expr=expr),)
        return None

    def mark_guards(self, value: ast.expr, nodeid: str) -> list[Guard]:
        marks = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
        return [g for mark in marks for g in self.decorator_guards(mark, nodeid)]

    def walk(
        self,
        body: Sequence[ast.stmt],
        conds: tuple[SkipCondition, ...],
        nodeid: str,
        *,
        module_level: bool,
        sink: list[Guard] | None = None,
        test_body: bool = False,
    ) -> None:
        """Collect skip statements with the `if` path that reaches them (and, in a test body, early returns).

        A statement on no marked line holds no skip statement (see `marked_skip`), so it is only read for how
        it changes the path (an `if` whose branch exits, an exit), unless it is a test body's `if`, `with` or
        `return`, where an early return may hide; outside a test body, once no marked line is left in the
        block, nothing after is read."""
        out = self.guards if sink is None else sink
        marks = self.source.marked
        block_end = (body[-1].end_lineno or body[-1].lineno) if body else 0
        for stmt in body:
            at = bisect.bisect_left(marks, stmt.lineno)
            if (
                self.spare_unmarked
                and not (at < len(marks) and marks[at] <= (stmt.end_lineno or stmt.lineno))
                and not (test_body and isinstance(stmt, ast.If | ast.With | ast.AsyncWith | ast.Return))
            ):
                if not test_body and (at == len(marks) or marks[at] > block_end):
                    return
                if isinstance(stmt, ast.If):
                    body_exits, else_exits = self.exits(stmt.body), self.exits(stmt.orelse)
                    if body_exits and else_exits:
                        return
                    if body_exits:
                        conds = (*conds, ExprCondition(expr=stmt.test, negate=True))
                    elif else_exits:
                        conds = (*conds, ExprCondition(expr=stmt.test))
                    conds = _past(stmt, conds, body_exits, else_exits)
                elif isinstance(stmt, ast.Return | ast.Raise | ast.Continue | ast.Break):
                    return
                elif type(stmt) in _LEAVING_BLOCKS:
                    conds = _past(stmt, conds)
                continue
            found = self.marked_skip(stmt, module_level)
            if found is None and test_body and conds and isinstance(stmt, ast.Return) and stmt.value is None:
                found = (GuardKind.EARLY_RETURN, ())
            if found is not None:
                kind, extra = found
                out.append(
                    Guard(
                        scope=nodeid,
                        kind=kind,
                        line=stmt.lineno,
                        source=self.describe(conds, stmt),
                        conditions=conds + extra,
                    )
                )
            if isinstance(stmt, ast.If):
                test = stmt.test
                self.walk(
                    stmt.body,
                    (*conds, ExprCondition(expr=test)),
                    nodeid,
                    module_level=module_level,
                    sink=out,
                    test_body=test_body,
                )
                negated = ExprCondition(expr=test, negate=True)
                self.walk(stmt.orelse, (*conds, negated), nodeid, module_level=module_level, sink=out, test_body=test_body)
                body_exits, else_exits = self.exits(stmt.body), self.exits(stmt.orelse)
                if body_exits and else_exits:
                    return
                # Code after `if x: return` only runs when x is false.
                if body_exits:
                    conds = (*conds, negated)
                elif else_exits:
                    conds = (*conds, ExprCondition(expr=test))
                conds = _past(stmt, conds, body_exits, else_exits)
            elif isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
                inside = (*conds, OpaqueCondition(why="the skip is inside a loop"))
                self.walk(stmt.body, inside, nodeid, module_level=module_level, sink=out)
                self.walk(stmt.orelse, inside, nodeid, module_level=module_level, sink=out)
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                self.walk(stmt.body, conds, nodeid, module_level=module_level, sink=out, test_body=test_body)
            elif isinstance(stmt, ast.Try | ast.TryStar):
                self.walk(stmt.body, conds, nodeid, module_level=module_level, sink=out)
                for handler in stmt.handlers:
                    handled = (*conds, self.handler_condition(stmt, handler))
                    self.walk(handler.body, handled, nodeid, module_level=module_level, sink=out)
                self.walk([*stmt.orelse, *stmt.finalbody], conds, nodeid, module_level=module_level, sink=out)
            elif isinstance(stmt, ast.Match):
                for case in stmt.cases:
                    inside = (*conds, OpaqueCondition(why="the skip is inside a match case"))
                    self.walk(case.body, inside, nodeid, module_level=module_level, sink=out)
            if self.exits([stmt]):
                return
            if type(stmt) in _LEAVING_BLOCKS:
                conds = _past(stmt, conds)

    def marked_skip(self, stmt: ast.stmt, module_level: bool) -> tuple[GuardKind, tuple[SkipCondition, ...]] | None:
        """`skip_statement`, answered None at once for a statement on no marked line.

        A skip statement names its skip (`skipTest`, `SkipTest`, `pytest.skip`, `importorskip`) in its own
        text, or calls a local name imported as one, and those names are all marked: an unmarked
        statement cannot be one, so the detailed look is spared."""
        if not self.source.mentions(stmt):
            return None
        return self.skip_statement(stmt, module_level)

    def skip_statement(self, stmt: ast.stmt, module_level: bool) -> tuple[GuardKind, tuple[SkipCondition, ...]] | None:
        call: ast.Call | None = None
        if isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign) and isinstance(stmt.value, ast.Call):
            call = stmt.value
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            target = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            if (self.resolved(target) or "").rpartition(".")[2] == "SkipTest":
                return GuardKind.RAISE_SKIPTEST, ()
            return None
        if call is None:
            return None
        name = self.resolved(call.func) or ""
        last = name.rpartition(".")[2]
        if last == "importorskip":
            module = _argument(call, 0, "modname")
            if isinstance(module, ast.Constant) and isinstance(module.value, str):
                minversion = _argument(call, 1, "minversion")
                if minversion is not None:
                    # pytest also skips when the module's `__version__` is below minversion (`_pytest/outcomes.py`,
                    # importorskip): certain where the module is missing, else read from the version installed.
                    missing = ast.UnaryOp(
                        op=ast.Not(), operand=ast.Call(func=ast.Name(id=IMPORTABLE, ctx=ast.Load()), args=[module], keywords=[])
                    )
                    low = ast.Call(func=ast.Name(id=VERSION_BELOW, ctx=ast.Load()), args=[module, minversion], keywords=[])
                    either = ast.copy_location(ast.BoolOp(op=ast.Or(), values=[missing, low]), call)
                    return GuardKind.IMPORTORSKIP, (ExprCondition(expr=ast.fix_missing_locations(either)),)
                return GuardKind.IMPORTORSKIP, (MissingModules(modules=(module.value,)),)
            return GuardKind.IMPORTORSKIP, (OpaqueCondition(why="importorskip of a computed module name"),)
        if not isinstance(stmt, ast.Expr):
            return None
        if last == "skipTest" and not module_level:
            return GuardKind.SKIP_TEST, ()
        if name == "pytest.skip":
            allowed = any(kw.arg == "allow_module_level" and _is_true(kw.value) for kw in call.keywords)
            if not module_level or allowed:
                return GuardKind.PYTEST_SKIP, ()
        return None

    def exits(self, body: Sequence[ast.stmt]) -> bool:
        if not body:
            return False
        last = body[-1]
        if isinstance(last, ast.Return | ast.Raise | ast.Continue | ast.Break):
            return True
        found = self.marked_skip(last, module_level=True)
        return found is not None and found[0] is not GuardKind.IMPORTORSKIP

    def handler_condition(self, node: ast.Try | ast.TryStar, handler: ast.ExceptHandler) -> SkipCondition:
        caught = self.resolved(handler.type) if handler.type is not None else None
        statements = [s for s in node.body if isinstance(s, ast.Import | ast.ImportFrom)]
        imported = tried_modules(statements, keep_relative=True)
        if caught in ("ImportError", "ModuleNotFoundError") and imported and len(statements) == len(node.body):
            return MissingModules(modules=tuple(dict.fromkeys(imported)))
        return OpaqueCondition(why="the skip is in an exception handler")

    def describe(self, conds: tuple[SkipCondition, ...], stmt: ast.stmt) -> str:
        tests = [self.condition_text(c) for c in conds if isinstance(c, ExprCondition)]
        head = f"if {' and '.join(tests)}: " if tests else ""
        return head + self.segment(stmt)

    def condition_text(self, condition: ExprCondition) -> str:
        text = self.segment(condition.expr)
        if not condition.negate:
            return text
        simple = isinstance(condition.expr, ast.Name | ast.Attribute | ast.Call | ast.Subscript)
        return f"not {text}" if simple else f"not ({text})"


def pytestmark_exprs(body: Sequence[ast.stmt], aliases: Mapping[str, ast.expr | None]) -> list[ast.expr]:
    """The marks a block gives `pytestmark`: `pytestmark = [...]` (or a name bound to a list), annotated
    (`pytestmark: list = [...]`), then `pytestmark += [...]`, `.append(m)` and `.extend([...])`, in order."""
    out: list[ast.expr] = []
    for stmt in body:
        value: ast.expr | None = None
        kind = type(stmt)  # what ast.parse builds (no subclasses): one lookup a statement, the common ones fall through
        if (kind is ast.Assign and _names_pytestmark(stmt.targets)) or (  # type: ignore[attr-defined]
            kind is ast.AnnAssign and isinstance(stmt.target, ast.Name) and stmt.target.id == "pytestmark"  # type: ignore[attr-defined]
        ):
            out.clear()
            value = stmt.value  # type: ignore[attr-defined]
        elif kind is ast.AugAssign and isinstance(stmt.target, ast.Name) and stmt.target.id == "pytestmark":  # type: ignore[attr-defined]
            value = stmt.value  # type: ignore[attr-defined]
        elif (
            kind is ast.Expr
            and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute)
            and isinstance(stmt.value.func.value, ast.Name)
            and stmt.value.func.value.id == "pytestmark"
            and stmt.value.func.attr in ("append", "extend")
            and len(stmt.value.args) == 1
        ):
            value = stmt.value.args[0]
            if stmt.value.func.attr == "append":
                out.append(value)
                continue
        if value is None:
            continue
        if isinstance(value, ast.Name) and isinstance(aliases.get(value.id), ast.List | ast.Tuple):
            value = aliases[value.id]  # `pytestmark = MARKS` with `MARKS = [...]` above
            assert value is not None
        out.extend(value.elts if isinstance(value, ast.List | ast.Tuple) else [value])
    return out


def _names_pytestmark(targets: list[ast.expr]) -> bool:
    # A loop, not any() over a generator: this runs once per assignment of every module audited.
    for target in targets:  # noqa: SIM110
        if type(target) is ast.Name and target.id == "pytestmark":
            return True
    return False


def _argument(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((kw.value for kw in call.keywords if kw.arg == keyword), None)


def _is_true(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _string_condition(node: ast.expr) -> ExprCondition | OpaqueCondition:
    """pytest evaluates a string condition as an expression; parse it the same way (never eval)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ExprCondition(expr=ast.parse(node.value.strip(), mode="eval").body)
        except SyntaxError:
            return OpaqueCondition(why="a condition string does not parse")
    return ExprCondition(expr=node)


# --- code past a block that may leave the function ----------------------------------------------------------------
# `for d in devices: if ok(d): return d` then `pytest.skip(...)`: the skip runs only when the loop did not return,
# which the walk does not model; the statements after such a block get an opaque condition (the skip is then
# undetermined, never "unconditional"). An `if` whose branch ends in a return is modelled (its test, negated).

_LEAVING_BLOCKS = frozenset({ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.Match})
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _past(
    stmt: ast.stmt, conds: tuple[SkipCondition, ...], body_exits: bool = False, else_exits: bool = False
) -> tuple[SkipCondition, ...]:
    """`conds` for the statements after `stmt`: with an opaque condition added when a `return` or `raise` inside
    it (not in a nested function or class, and not an `if` branch's last statement, which the walk models) may
    end the function before them."""
    if isinstance(stmt, ast.If):
        inside = [*(stmt.body if not body_exits else ()), *(stmt.orelse if not else_exits else ())]
    else:
        inside = [stmt]
    line = _leaves(inside)
    if line is None:
        return conds
    why = f"reached only when the block at line {stmt.lineno} does not return or raise (line {line})"
    return (*conds, OpaqueCondition(why=why))


def _leaves(statements: list[ast.stmt]) -> int | None:
    """The line of a `return` or `raise` among `statements`, the blocks nested in them included."""
    stack = list(statements)
    seen = 0
    while stack and seen < 100_000:
        node = stack.pop()
        seen += 1
        if isinstance(node, ast.Return | ast.Raise):
            return node.lineno
        if isinstance(node, _NESTED_SCOPES):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(node, name, None)
            if isinstance(inner, list):
                stack.extend(inner)
        if isinstance(node, ast.Try | ast.TryStar):
            stack.extend(s for h in node.handlers for s in h.body)
        elif isinstance(node, ast.Match):
            stack.extend(s for c in node.cases for s in c.body)
    return None
