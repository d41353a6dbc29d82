"""Static pytest collection: the tests of a file and every skip guard that applies to each; never imports.

For a test the guards are: the guard audit's own (pytestmark, skipif marks and aliases of them, pytest.skip in
the body, autouse fixtures, importorskip, module-level skips); the skips of the conftest.py files above it
(autouse fixtures, module-level skips); the skips of the fixtures it requests by parameter name (its module
first, then the conftest files above it, and the fixtures those request, bounded); the skips of helpers its
body calls at top level (module functions, or functions imported from another file of the tree); marker
conditions (a conftest hook that turns `@pytest.mark.NAME` into a skip, read from the hook when simple,
otherwise declared); decorator factories of the predicate packs (`multi_gpu_test(num_gpus=2)`); and skip marks
imported from another file of the tree (`from .utils import requires_sm100`), followed through re-exports, bounded.

A parametrized test whose cases skip per value (a `pytest.param(..., marks=...)` skip, or a body guard reading a
parameter) becomes one item per case (`test_f[case-id]`) when its values are literal (see params.py); otherwise,
or past the cap, it stays one item, with a note when the cases would have differed.
"""

from __future__ import annotations

import ast
import functools
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from matrix.guards.env_writes import written_names
from matrix.guards.evaluate import MAX_CASES_SEARCHED, cases_to_search
from matrix.guards.finder import Substitute, analyse_source, analyse_tree, pytestmark_exprs, script_only
from matrix.guards.model import (
    CaseSearch,
    ExprCondition,
    FileAnalysis,
    Guard,
    GuardKind,
    ModuleNames,
    OpaqueCondition,
    dotted,
)
from matrix.guards.source import resolve
from matrix.pytest_suites.calls import Callee, CallMemo, called_guards
from matrix.pytest_suites.classes import Hierarchy, TooLargeToRead
from matrix.pytest_suites.config import PytestConfig
from matrix.pytest_suites.decorators import (
    NO_MARK_DECORATORS,
    RUNNING_DECORATORS,
    runs_by_table,
    runs_what_it_wraps,
    skip_decorator_condition,
)
from matrix.pytest_suites.imported import ImportResolver
from matrix.pytest_suites.linker import ProjectModules
from matrix.pytest_suites.markers import ALL_TESTS, MarkerRule, read_marker_hooks
from matrix.pytest_suites.packs import PredicatePacks
from matrix.pytest_suites.params import Parametrized, bind_case, case_layers, read_parametrize, reads_parameters
from matrix.pytest_suites.rules import is_fixture, module_tests
from matrix.pytest_suites.select import ConftestIgnores
from matrix.pytest_suites.skipmarks import (
    ImportTarget,
    factory_mark_guard,
    fixture_param_guard,
    from_imports,
    mark_guard,
    sys_path_dirs,
    usefixtures,
)
from matrix.pytest_suites.unittest_ids import mentions_self_id, test_id, with_test_id
from matrix.schedule.environment.conftest_options import DeclaredOption, declared_options
from matrix.schedule.environment.project_imports import ProjectImports, checkout_project

MAX_FIXTURE_DEPTH = 4
# Files a skip mark may be imported through (`from .marks import x` where marks.py re-exports it).
MAX_IMPORT_DEPTH = 4
# How a function skips in its own text (`pytest.skip(`, `importorskip(`, `skipTest`, `SkipTest`, a skip mark):
# a file without any is not parsed to follow a call (a word such as `skip_softmax` in a library is no skip).
# Spelled so that every branch starts with a letter the engine can skip to (with a leading `\b` it tries every
# position: seven times slower over flashinfer's tree); the few files it lets through besides (`should_skip(`)
# are only parsed.
_SKIP_CALL = re.compile(r"skip(?:Test|\s*\()|SkipTest|mark\.skip")
# `_resolve_mark`'s answer for a chain of imports past MAX_IMPORT_DEPTH: the mark is unknown, not absent.
_TOO_DEEP = ast.Constant(value="<mark imported too deeply>")
_Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True, kw_only=True)
class AppliedGuard:
    """A guard, the names of the file it was written in (to evaluate it), and how it reaches the test."""

    guard: Guard
    names: ModuleNames
    via: str = ""
    # The file names a capability-call helper of the packs (`has_device_capability(90)`): rewrite before evaluating.
    calls: bool = False
    # A conftest hook's condition that reads a pytest option: evaluated with the command's option values.
    options: bool = False
    # A conftest hook that deselects the test when the guard holds, instead of skipping it.
    deselects: bool = False


@dataclass(frozen=True, kw_only=True)
class TestItem:
    nodeid: str
    path: str
    line: int
    markers: frozenset[str]
    guards: tuple[AppliedGuard, ...]
    # Why the test may not exist or not be read as pytest sees it (a definition under a condition, a base class
    # from elsewhere): the audit never calls such a test certain to run.
    doubts: tuple[str, ...] = ()
    # The test's pytest name may carry a parameter id this item does not show (`test_f[...]`): a `-k` word
    # could match it.
    hidden_id: bool = False
    # A decorator or pytestmark entry in its scope is not read as a mark or a plain decorator: it may add markers
    # (`-m`, `-k` words this item does not list may match).
    opaque_marks: bool = False


@dataclass(frozen=True, kw_only=True)
class TestFile:
    path: str
    tests: tuple[TestItem, ...]
    error: str | None = None
    notes: tuple[str, ...] = ()
    conftest_ignores: tuple[ConftestIgnores, ...] = ()
    # Environment variables the test process sets itself before or while this file runs (`env_writes`).
    env_written: frozenset[str] = frozenset()
    # The options its conftest files declare (`pytest_addoption`), which their hooks may read.
    options: tuple[DeclaredOption, ...] = ()


@dataclass(kw_only=True)
class _Parsed:
    analysis: FileAnalysis
    tree: ast.Module | None
    fixtures: dict[str, _Function] = field(default_factory=dict)
    helpers: dict[str, tuple[Guard, ...]] = field(default_factory=dict)
    calls: bool = False
    # The text may name a `marks=` keyword (NFKC folds non-ASCII identifiers, so non-ASCII text always may).
    marks: bool = True
    imports: dict[str, ImportTarget] | None = None
    defs: dict[str, _Function] | None = None
    callees: dict[str, Callee] | None = None
    hierarchy: Hierarchy | None = None  # the file's classes, each read once (`classes.Hierarchy`)


Loader = Callable[[str], str | None]


class Collector:
    """Collects test files of one tree; parsed files (conftest, helpers) are cached across files."""

    def __init__(
        self,
        load: Loader,
        config: PytestConfig,
        packs: PredicatePacks,
        declared_markers: Mapping[str, str] | None = None,
    ):
        self.load = load
        # The checkout's own modules, for guards that import them (read on demand, kept for the audit).
        self.project = ProjectImports(load, checkout_project(load, config.pythonpath))
        # Why a file was not read (set by the edge that owns the loader), shown instead of a generic line.
        self.problem: Callable[[str], str | None] = lambda _: None
        self.config = config
        self.packs = packs
        self.declared = {
            marker: MarkerRule(
                marker=marker,
                condition=ast.parse(text, mode="eval").body,
                source=f"declared: {marker} skips when {text}",
                origin="declared",
            )
            for marker, text in (declared_markers or {}).items()
        }
        self.cache: dict[str, _Parsed | None] = {}
        self.marker_rules: dict[str, tuple[MarkerRule, ...]] = {}
        self.present: dict[str, bool] = {}
        self.skip_text: dict[str, bool] = {}
        self.callees: dict[tuple[str, str], Callee | None] = {}
        self.call_memo: CallMemo = {}
        self.modules = ProjectModules(load, self._bases)
        self.ignores: dict[str, ConftestIgnores] = {}
        self.writes: dict[str, frozenset[str]] = {}
        self.options: dict[str, tuple[DeclaredOption, ...]] = {}
        self.imported = ImportResolver(self._definitions, self._bases)

    def forget_derived(self) -> None:
        """Drop what was worked out from other files (imports resolved, calls followed, names linked), keeping each
        file's own parse: the results cache records per test file what its collection read, and a memo filled for
        an earlier file would hide those reads (`matrix.pytest_suites.tracked`). A memo added here that holds
        what one file derived from another must be dropped here too."""
        self.callees.clear()
        names = []
        for parsed in self.cache.values():
            if parsed is not None:
                parsed.imports = None
                names.append(parsed.analysis.names)
        self.modules.forget_links(names)

    # --- files ----------------------------------------------------------------------------------------------

    def parsed(self, path: str) -> _Parsed | None:
        if path in self.cache:
            return self.cache[path]
        text = self.load(path)
        result: _Parsed | None = None
        if text is not None:
            tree: ast.Module | None = None
            try:
                tree = ast.parse(text, filename=path)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
            analysis = analyse_tree(path, text, tree) if tree is not None else analyse_source(path, text)
            if tree is not None:
                analysis = replace(analysis, names=self.modules.attach(path, tree, analysis.names))
            calls = any(name in text for name in self.packs.calls)
            marks = "marks" in text or not text.isascii()
            result = _Parsed(analysis=analysis, tree=tree, helpers=dict(analysis.helpers), calls=calls, marks=marks)
            if tree is not None:
                result.fixtures = {s.name: s for s in tree.body if isinstance(s, _Function) and is_fixture(s, analysis.names)}
        self.cache[path] = result
        return result

    def _definitions(self, path: str) -> tuple[ast.Module, ModuleNames] | None:
        parsed = self.parsed(path)
        return (parsed.tree, parsed.analysis.names) if parsed is not None and parsed.tree is not None else None

    def _bases(self, path: str) -> tuple[str, ...]:
        return sys_path_dirs(path, self.conftests(path), self._exists)

    def _exists(self, path: str) -> bool:
        found = self.present.get(path)
        if found is None:
            found = self.present[path] = (path in self.cache and self.cache[path] is not None) or self.load(path) is not None
        return found

    def conftests(self, path: str) -> list[str]:
        """conftest.py files from the root down to the test's folder, nearest last."""
        return [c for c in self.conftest_chain(path) if self.parsed(c) is not None]

    @staticmethod
    def conftest_chain(path: str) -> tuple[str, ...]:
        """Where conftest.py files may sit for a test file, root first."""
        return _conftest_chain(posixpath.dirname(path))

    def markers_for(self, path: str) -> dict[str, tuple[MarkerRule, ...]]:
        """Marker rules in force for a test file: hooks read from its conftests (every conftest's hooks run),
        then declared ones, which replace what was read for their marker."""
        rules: dict[str, tuple[MarkerRule, ...]] = {}
        for conftest in self.conftests(path):
            if conftest not in self.marker_rules:
                parsed = self.parsed(conftest)
                tree = parsed.tree if parsed is not None else None
                self.marker_rules[conftest] = read_marker_hooks(tree, conftest) if tree is not None else ()
            for rule in self.marker_rules[conftest]:
                rules[rule.marker] = (*rules.get(rule.marker, ()), rule)
        rules.update({marker: (rule,) for marker, rule in self.declared.items()})
        return rules

    # --- tests ----------------------------------------------------------------------------------------------

    def collect(self, path: str) -> TestFile:
        parsed = self.parsed(path)
        if parsed is None:
            why = self.problem(path) or "cannot be read (missing, over 4 MiB or not Python source)"
            return TestFile(path=path, tests=(), error=why)
        if parsed.tree is None or parsed.analysis.syntax_error is not None:  # the latter: past the finder's bounds
            return TestFile(path=path, tests=(), error=parsed.analysis.syntax_error or "does not parse")
        names = parsed.analysis.names
        own = [g for g in parsed.analysis.guards if not script_only(g)]
        by_scope: dict[str, list[Guard]] = {}
        for guard in own:
            by_scope.setdefault(guard.scope, []).append(guard)
        inherited: list[AppliedGuard] = []
        for conftest in self.conftests(path):
            c = self.parsed(conftest)
            assert c is not None
            inherited.extend(
                AppliedGuard(guard=g, names=c.analysis.names, via=conftest)
                for g in c.analysis.guards
                if g.scope == conftest and not script_only(g)
            )
        refused = [(c, self.problem(c)) for c in self.conftest_chain(path)]
        file_doubts = tuple(f"{conftest}: {problem}" for conftest, problem in refused if problem is not None)
        rules = self.markers_for(path)
        module_exprs = _pytestmark(parsed.tree.body, names)
        module_marks = _marks_of(module_exprs, names)
        tests: list[TestItem] = []
        notes: list[str] = []
        try:
            found_tests = module_tests(parsed.tree, names, self.config, functools.partial(self.imported, path))
        except TooLargeToRead as exc:
            return TestFile(path=path, tests=(), error=str(exc))
        for found in found_tests:
            node = found.node
            nodeid = f"{path}::{found.name}"
            top = found.classes[0] if found.classes else None
            nested = len(found.classes) > 1
            scopes = [path] + ([f"{path}::{top.name}"] if top is not None else [])
            if not nested:
                scopes.append(nodeid)
            guards = [AppliedGuard(guard=g, names=names) for s in scopes for g in by_scope.get(s, ())]
            guards.extend(inherited)
            marks = set(module_marks)
            exprs = list(module_exprs)
            local_exprs: list[ast.expr] = []
            for depth, cls in enumerate(found.classes):
                class_exprs = [
                    e for c in self._class_chain(parsed, cls) for e in (*c.decorator_list, *_pytestmark(c.body, names))
                ]
                marks |= _marks_of(class_exprs, names)
                # The guard finder reads the outermost class (and its same-module bases); inner ones are read here.
                (local_exprs if depth else exprs).extend(class_exprs)
            marks |= _marks_of([*node.decorator_list, *found.applied], names)
            if nested:
                local_exprs.extend(node.decorator_list)
            else:
                exprs.extend(node.decorator_list)
            local_exprs.extend(found.applied)
            for expr in exprs:
                guards.extend(self._mark_guards(path, parsed, expr, nodeid, marks, local=False))
            for expr in local_exprs:
                guards.extend(self._mark_guards(path, parsed, expr, nodeid, marks, local=True))
            guards.extend(
                _marker_guard(r, m, nodeid, node.lineno, names) for m in [*sorted(marks), ALL_TESTS] for r in rules.get(m, ())
            )
            class_decorators = [d for c in found.classes for klass in self._class_chain(parsed, c) for d in klass.decorator_list]
            guards.extend(self._decorator_rules([*class_decorators, *node.decorator_list], nodeid, names, _defs(parsed)))
            read_lines = {g.guard.line for g in guards if g.guard.scope == path or g.guard.scope.startswith(f"{path}::")}
            for cls in found.classes:
                for klass in self._class_chain(parsed, cls):
                    guards.extend(self._unread_decorators(path, parsed, klass.decorator_list, nodeid, read_lines))
            guards.extend(self._unread_decorators(path, parsed, node.decorator_list, nodeid, read_lines))
            guards.extend(self._fixture_guards(path, parsed, node, set(), 0, used=usefixtures([*exprs, *local_exprs], names)))
            guards.extend(self._helper_guards(path, parsed, node))
            guards = [replace(g, calls=True) if self._mentions_calls(g) else g for g in guards]
            if any(mentions_self_id(g.guard) for g in guards):
                ident = test_id(nodeid, node.decorator_list, self._exists("__init__.py"))
                if ident is not None:
                    guards = [replace(g, guard=with_test_id(g.guard, ident)) if mentions_self_id(g.guard) else g for g in guards]
            doubts = [*file_doubts, *found.doubts]
            if nested and _calls_skip(node):
                doubts.append("a test of an inner class whose body calls a skip: its body is not read")
            item = TestItem(
                nodeid=nodeid,
                path=path,
                line=node.lineno,
                markers=frozenset(marks),
                guards=tuple(guards),
                doubts=tuple(doubts),
                hidden_id=self._may_have_id(path, parsed, node, exprs, local_exprs),
                opaque_marks=found.opaque or any(self._opaque(path, parsed, e) for e in (*exprs, *local_exprs)),
            )
            param = read_parametrize(node.decorator_list, names, may_mark=parsed.marks)
            tests.extend(
                self._cases(path, parsed, item, param, rules=rules, notes=notes, decorators=node.decorator_list)
                if param is not None
                else (item,)
            )
        return TestFile(
            path=path,
            tests=tuple(tests),
            notes=tuple(notes),
            conftest_ignores=self.conftest_ignores(path),
            env_written=self.env_written(path),
            options=self.declared_options(path),
        )

    def declared_options(self, path: str) -> tuple[DeclaredOption, ...]:
        """The options the conftest files above a test file declare in `pytest_addoption` (read as the invocation reads
        them: `matrix.schedule.environment.conftest_options`)."""
        out: list[DeclaredOption] = []
        for conftest in self.conftests(path):
            found = self.options.get(conftest)
            if found is None:
                found = self.options[conftest] = declared_options(self.load(conftest) or "")
            out.extend(found)
        return tuple(out)

    def env_written(self, path: str) -> frozenset[str]:
        """The variables the file, its conftest files and pytest-env's `env` option set (`env_writes`)."""
        found = set(self.config.env_set)
        for source in (*self.conftests(path), path):
            names = self.writes.get(source)
            if names is None:
                text = self.load(source)
                names = self.writes[source] = written_names(text) if text is not None else frozenset()
            found.update(names)
        return frozenset(found)

    def conftest_ignores(self, path: str) -> tuple[ConftestIgnores, ...]:
        """Every conftest file above a test file, with its `collect_ignore` / `collect_ignore_glob`."""
        out: list[ConftestIgnores] = []
        for conftest in self.conftests(path):
            c = self.parsed(conftest)
            if c is None or c.tree is None:
                continue
            found = self.ignores.get(conftest)
            if found is None:
                folder = posixpath.dirname(conftest) or "."
                found = self.ignores[conftest] = read_collect_ignore(c.tree, folder) or ConftestIgnores(folder=folder)
            out.append(found)
        return tuple(out)

    # --- marks from elsewhere, parametrized cases ------------------------------------------------------------

    def _imports(self, path: str, parsed: _Parsed) -> dict[str, ImportTarget]:
        if parsed.imports is None:
            parsed.imports = from_imports(parsed.tree, path, self._bases(path)) if parsed.tree is not None else {}
        return parsed.imports

    def _resolve_mark(
        self, path: str, parsed: _Parsed, expr: ast.expr, depth: int, *, local: bool
    ) -> tuple[ast.expr, _Parsed] | None:
        """The mark expression a name stands for and the file binding it; a name imported from another file
        of the tree is followed there (re-exports too, bounded). Not local: only marks from other files."""
        names = parsed.analysis.names
        target: ImportTarget | None = None
        if isinstance(expr, ast.Name):
            bound = names.alias_map.get(expr.id)
            if bound is not None:
                if not (local or depth):
                    return None  # the guard finder reads the file's own aliases
                if isinstance(bound, ast.Name | ast.Attribute) and depth < MAX_IMPORT_DEPTH:
                    return self._resolve_mark(path, parsed, bound, depth + 1, local=True)
                return bound, parsed
            target = self._imports(path, parsed).get(expr.id)
        elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            module = self._imports(path, parsed).get(expr.value.id + ".")
            target = (module[0], expr.attr) if module is not None else None
        if target is None:
            return (expr, parsed) if local or depth else None
        if depth >= MAX_IMPORT_DEPTH:
            return _TOO_DEEP, parsed
        files, name = target
        for where in files:
            other = self.parsed(where)
            if other is not None and other.tree is not None and name:
                return self._resolve_mark(where, other, ast.Name(id=name, ctx=ast.Load()), depth + 1, local=True)
        return None

    def _mark_guards(
        self, path: str, parsed: _Parsed, expr: ast.expr, scope: str, marks: set[str], *, local: bool
    ) -> list[AppliedGuard]:
        """The skip a mark expression makes (its marker name added to `marks` when it is not a skip)."""
        found = self._resolve_mark(path, parsed, expr, 0, local=local)
        if found is None:
            return []
        mark, owner = found
        names = owner.analysis.names
        if mark is _TOO_DEEP:
            why = f"a mark imported through more than {MAX_IMPORT_DEPTH} files"
            deep = Guard(
                scope=scope,
                kind=GuardKind.MARK_SKIPIF,
                line=getattr(expr, "lineno", 1),
                source=ast.unparse(expr),
                conditions=(OpaqueCondition(why=why),),
            )
            return [AppliedGuard(guard=deep, names=names, via=why)]
        if isinstance(mark, ast.List | ast.Tuple) and mark is not expr:
            # `pytestmark = MARKS` with MARKS a list in another file: each of its marks.
            return [g for e in mark.elts for g in self._mark_guards(owner.analysis.path, owner, e, scope, marks, local=True)]
        shown = ast.unparse(expr) if mark is expr else f"{ast.unparse(expr)} = {ast.unparse(mark)}"
        guard = mark_guard(mark, names, scope, shown) or factory_mark_guard(mark, names, scope, shown)
        if guard is None:
            marker = _mark_name(mark, names)
            if marker is not None:
                marks.add(marker)
            return []
        via = "" if owner is parsed else f"mark imported from {owner.analysis.path}"
        return [AppliedGuard(guard=replace(guard, line=getattr(expr, "lineno", 1)), names=names, via=via, calls=owner.calls)]

    def _cases(
        self,
        path: str,
        parsed: _Parsed,
        item: TestItem,
        param: Parametrized,
        *,
        rules: Mapping[str, tuple[MarkerRule, ...]],
        notes: list[str],
        decorators: list[ast.expr],
    ) -> list[TestItem]:
        """One item per parametrized case when the cases skip per value and are literal; else the item, its guards
        that read parameters searched over the cases together (`CaseSearch`)."""
        # An early return on a parameter is the test's own branching (a silent-pass check), not a per-case skip.
        reading = {
            id(g)
            for g in item.guards
            if g.guard.scope == item.nodeid
            and g.guard.kind is not GuardKind.EARLY_RETURN
            and reads_parameters(g.guard, param.argnames)
        }
        if not reading and not param.marked:
            return [item]
        if not param.cases:
            if param.note is not None:
                notes.append(f"{item.nodeid}: {param.note}; audited as one item")
            layers = None if param.marked or not reading else case_layers(decorators, parsed.analysis.names)
            searched = [g for g in item.guards if id(g) in reading]
            if layers is None or any(g.calls or g.options or g.deselects or g.names is not searched[0].names for g in searched):
                return [item]
            first = searched[0].guard
            search = CaseSearch(guards=tuple(g.guard for g in searched), layers=layers)
            if cases_to_search(search) > MAX_CASES_SEARCHED:
                return [item]  # past the search's budget: the guards are judged one by one, as written
            whole = Guard(scope=first.scope, kind=first.kind, line=first.line, source=first.source, conditions=(search,))
            kept = [g for g in item.guards if id(g) not in reading]
            return [replace(item, guards=(*kept, replace(searched[0], guard=whole)))]
        memo: dict[tuple[int, str], Guard] = {}
        names = parsed.analysis.names
        out: list[TestItem] = []
        for case in param.cases:
            nodeid = f"{item.nodeid}[{case.id}]"
            values = dict(case.values)
            guards = [replace(g, guard=bind_case(g.guard, values, memo)) if id(g) in reading else g for g in item.guards]
            marks = set(item.markers)
            for mark in case.marks:
                guards.extend(self._mark_guards(path, parsed, mark, nodeid, marks, local=True))
            guards.extend(
                _marker_guard(r, m, nodeid, item.line, names) for m in sorted(marks - item.markers) for r in rules.get(m, ())
            )
            out.append(replace(item, nodeid=nodeid, markers=frozenset(marks), guards=tuple(guards)))
        return out

    def _mentions_calls(self, applied: AppliedGuard) -> bool:
        if not self.packs.calls:
            return False
        owner = self.cache.get(applied.guard.scope.split("::")[0])
        return owner is None or owner.calls

    def _opaque(self, path: str, parsed: _Parsed, expr: ast.expr) -> bool:
        """A decorator or mark entry that may carry markers this reading does not see."""
        names = parsed.analysis.names
        if _marks_of([expr], names):
            return False
        target = expr.func if isinstance(expr, ast.Call) else expr
        if resolve(dotted(target) or "", names.import_map) in NO_MARK_DECORATORS:
            return False
        found = self._resolve_mark(path, parsed, target, 0, local=True)
        if found is not None and found[0] is not target:
            return not _marks_of([found[0]], found[1].analysis.names)
        return True

    def _class_chain(self, parsed: _Parsed, cls: ast.ClassDef) -> tuple[ast.ClassDef, ...]:
        """The classes of `cls`'s hierarchy (itself and its same-module bases, at any depth) that carry decorators
        or a `pytestmark`: pytest collects marks over the MRO (pytest >= 7.2). Read once per class of the file."""
        if parsed.hierarchy is None:
            assert parsed.tree is not None
            classes = {c.name: c for c in parsed.tree.body if isinstance(c, ast.ClassDef)}
            parsed.hierarchy = Hierarchy(classes, parsed.analysis.names)
        return parsed.hierarchy.info(cls).marked

    def _may_have_id(self, path: str, parsed: _Parsed, node: _Function, *groups: Sequence[ast.expr]) -> bool:
        """Whether pytest may add a parameter id to the test's name: a parametrize mark anywhere in scope, a
        requested fixture of the tree with `params=`, or a `pytest_generate_tests` hook in its module or conftests."""
        names = parsed.analysis.names
        if any(_mark_name(e, names) == "parametrize" for g in (*groups, node.decorator_list) for e in g):
            return True
        for conftest in [path, *self.conftests(path)]:
            c = self.parsed(conftest)
            if c is not None and c.tree is not None and "pytest_generate_tests" in _defs(c):
                return True
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            found = self._fixture(path, parsed, arg.arg)
            if found is not None and any(
                isinstance(d, ast.Call) and any(k.arg == "params" for k in d.keywords) for d in found[2].decorator_list
            ):
                return True
        return False

    def _decorator_rules(
        self, decorators: Sequence[ast.expr], nodeid: str, names: ModuleNames, defs: Mapping[str, _Function]
    ) -> list[AppliedGuard]:
        """The guards of the pack decorators on a test and its classes: a factory by its own name
        (`multi_gpu_test(num_gpus=2)`), a decorator by the dotted name its import resolves to (torch's
        `skipIfNoQNNPACK`, which skips a test or, on a class, all of its tests); and the module's own decorators of
        torch's skip shape (`skip_decorator_condition`), by their condition."""
        out: list[AppliedGuard] = []
        for deco in decorators:
            own = self._own_skip(deco, names, defs)
            if own is not None:
                guard = Guard(
                    scope=nodeid,
                    kind=GuardKind.MARK_SKIPIF,
                    line=deco.lineno,
                    source=f"@{ast.unparse(deco)} -> skips when {ast.unparse(own)}"[:300],
                    conditions=(ExprCondition(expr=own),),
                )
                out.append(AppliedGuard(guard=guard, names=names, via=f"decorator {ast.unparse(deco)}"))
                continue
            text = dotted(deco.func if isinstance(deco, ast.Call) else deco) or ""
            last = text.rpartition(".")[2]
            rule = self.packs.decorators.get(resolve(text, names.import_map)) if text else None
            if rule is None and isinstance(deco, ast.Call):
                rule = self.packs.decorators.get(last)
            if rule is None:
                continue
            expr = ast.parse(rule.skips_when, mode="eval").body
            values = {kw.arg: kw.value for kw in deco.keywords if kw.arg is not None} if isinstance(deco, ast.Call) else {}
            bound = Substitute(values).visit(expr)  # a decorator call's literal keyword values for the pack's names
            guard = Guard(
                scope=nodeid,
                kind=GuardKind.MARK_SKIPIF,
                line=deco.lineno,
                source=f"{ast.unparse(deco)} -> skips when {rule.skips_when}",
                conditions=(ExprCondition(expr=bound),),
            )
            out.append(AppliedGuard(guard=guard, names=names, via=f"decorator {last}"))
        return out

    @staticmethod
    def _own_skip(deco: ast.expr, names: ModuleNames, defs: Mapping[str, _Function]) -> ast.expr | None:
        """The skip condition of a decorator the test's module defines in torch's skip shape, else None."""
        if not isinstance(deco, ast.Name) or deco.id not in defs or deco.id in names.ambiguous or deco.id in names.alias_map:
            return None
        return skip_decorator_condition(defs[deco.id], lambda text: resolve(text, names.import_map))

    def _unread_decorators(
        self, path: str, parsed: _Parsed, decorators: Sequence[ast.expr], nodeid: str, read_lines: set[int]
    ) -> list[AppliedGuard]:
        """An undetermined guard for each decorator that is not read as a mark, a skip or a harmless wrapper."""
        out: list[AppliedGuard] = []
        for deco in decorators:
            if deco.lineno in read_lines:
                continue  # the guard finder or a pack read it as a skip
            why = self._decorator_doubt(path, parsed, deco, 0)
            if why is None:
                continue
            guard = Guard(
                scope=nodeid,
                kind=GuardKind.MARK_SKIPIF,
                line=deco.lineno,
                source=f"@{ast.unparse(deco)}"[:200],
                conditions=(OpaqueCondition(why=why),),
            )
            out.append(AppliedGuard(guard=guard, names=parsed.analysis.names, via="an unread decorator"))
        return out

    def _decorator_doubt(self, path: str, parsed: _Parsed, deco: ast.expr, depth: int) -> str | None:
        """None when a decorator is a mark, a skip read elsewhere or certainly runs its test; else why not."""
        names = parsed.analysis.names
        if _marks_of([deco], names):
            return None
        target = deco.func if isinstance(deco, ast.Call) else deco
        text = dotted(target)
        shown = ast.unparse(deco)[:120]
        if text is None:
            return f"decorator {shown} is not read"
        full = resolve(text, names.import_map)
        last = full.rpartition(".")[2]
        if full in RUNNING_DECORATORS or text in RUNNING_DECORATORS or last in self.packs.decorators:
            return None
        if depth == 0 and full in self.packs.decorators:
            return None  # a pack's decorator, imported by the test's own module: read as its guard
        if runs_by_table(full, deco):
            return None
        if full.startswith("unittest.") and last in ("skip", "skipIf", "skipUnless", "expectedFailure"):
            return None
        if depth >= MAX_IMPORT_DEPTH:
            return f"decorator {shown} is imported through more than {MAX_IMPORT_DEPTH} files"
        if isinstance(target, ast.Name) and target.id in _defs(parsed):
            if runs_what_it_wraps(_defs(parsed)[target.id]):
                return None
            if depth == 0 and self._own_skip(deco, names, _defs(parsed)) is not None:
                return None  # read as its guard
            return f"decorator {shown} ({path}) is not read: it may skip or return something else"
        if isinstance(target, ast.Name) and names.alias_map.get(target.id) is not None:
            bound = names.alias_map[target.id]
            assert bound is not None
            return self._decorator_doubt(path, parsed, bound, depth + 1)
        imported: ImportTarget | None = None
        if isinstance(target, ast.Name):
            imported = self._imports(path, parsed).get(target.id)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            module = self._imports(path, parsed).get(target.value.id + ".")
            imported = (module[0], target.attr) if module is not None else None
        if imported is not None and imported[1]:
            for where in imported[0]:
                other = self.parsed(where)
                if other is not None and other.tree is not None:
                    inner = ast.Name(id=imported[1], ctx=ast.Load(), lineno=deco.lineno, col_offset=0)
                    found = self._decorator_doubt(where, other, inner, depth + 1)
                    return None if found is None else f"decorator {shown}: {found}"
        return f"decorator {shown} ({full}) is not defined in the project and no pack knows it"

    def _fixture_guards(
        self, path: str, parsed: _Parsed, node: _Function, seen: set[str], depth: int, *, used: Sequence[str] = ()
    ) -> list[AppliedGuard]:
        if depth > MAX_FIXTURE_DEPTH:
            return []
        out: list[AppliedGuard] = []
        requested = [*used, *(a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs))]
        for name in requested:
            if name in seen or name in ("self", "cls", "request"):
                continue
            seen.add(name)
            found = self._fixture(path, parsed, name)
            if found is None:
                continue
            where, owner, fixture = found
            out.extend(
                AppliedGuard(guard=g, names=owner.analysis.names, via=f"fixture {name} ({where})")
                for g in owner.helpers.get(name, ())
            )
            via = f"fixture {name} ({where})"
            param = fixture_param_guard(fixture, owner.analysis.names, f"{where}::{name}")
            if param is not None:
                out.append(AppliedGuard(guard=param, names=owner.analysis.names, via=via))
            out.extend(
                AppliedGuard(guard=g, names=n, via=f"{via} -> {v}")
                for g, n, v in called_guards(where, fixture.body, self._callee)
            )
            out.extend(self._fixture_guards(where, owner, fixture, seen, depth + 1))
        return out

    def _fixture(self, path: str, parsed: _Parsed, name: str) -> tuple[str, _Parsed, _Function] | None:
        if name in parsed.fixtures:
            return path, parsed, parsed.fixtures[name]
        for conftest in reversed(self.conftests(path)):
            c = self.parsed(conftest)
            if c is not None and name in c.fixtures:
                return conftest, c, c.fixtures[name]
        return None

    def _helper_guards(self, path: str, parsed: _Parsed, node: _Function) -> list[AppliedGuard]:
        """Skips of the functions the body calls, bounded (see calls.py)."""
        found = called_guards(path, node.body, self._callee, self.call_memo)
        return [AppliedGuard(guard=g, names=names, via=f"helper {via}") for g, names, via in found]

    def _callee(self, path: str, func: ast.expr) -> Callee | None:
        """The function a call in `path` reaches: a def of the file, or one imported from another file of the tree."""
        key = (path, dotted(func) or "")
        if key not in self.callees:
            self.callees[key] = self._find_callee(path, func) if key[1] else None
        return self.callees[key]

    def _find_callee(self, path: str, func: ast.expr) -> Callee | None:
        parsed = self.parsed(path)
        if parsed is None or parsed.tree is None:
            return None
        target: ImportTarget | None = None
        if isinstance(func, ast.Name):
            if func.id in _defs(parsed):
                return _callee_in(path, parsed, func.id)
            target = self._imports(path, parsed).get(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            module = self._imports(path, parsed).get(func.value.id + ".")
            target = (module[0], func.attr) if module is not None else None
        if target is None or not target[1]:
            return None
        for where in target[0]:
            if not self._mentions_skip(where):
                # A file that never says "skip" cannot skip (the guard finder's own test): not parsed for a call.
                if self._exists(where):
                    return None
                continue
            other = self.parsed(where)
            if other is not None and target[1] in _defs(other):
                return _callee_in(where, other, target[1])
        return None

    def _mentions_skip(self, path: str) -> bool:
        found = self.skip_text.get(path)
        if found is None:
            # Read from the text alone, even for a file parsed already: the answer must not depend on which files
            # were collected before this one (the results cache holds each file's audit as its own reads give it).
            text = self.load(path)
            # Every form of the pattern holds "skip" or "Skip": a plain search rules most files out.
            found = text is not None and ("skip" in text or "Skip" in text) and _SKIP_CALL.search(text) is not None
            self.skip_text[path] = found
        return found


def _defs(parsed: _Parsed) -> dict[str, _Function]:
    if parsed.defs is None:
        body = parsed.tree.body if parsed.tree is not None else []
        parsed.defs = {s.name: s for s in body if isinstance(s, _Function)}
    return parsed.defs


def _callee_in(path: str, parsed: _Parsed, name: str) -> Callee | None:
    if parsed.callees is None:
        by_scope: dict[str, list[Guard]] = {}
        for g in parsed.analysis.guards:
            by_scope.setdefault(g.scope, []).append(g)
        parsed.callees = {
            n: Callee(
                path=path,
                function=fn,
                guards=tuple(by_scope.get(f"{path}::{n}", ())) or parsed.helpers.get(n, ()),
                names=parsed.analysis.names,
            )
            for n, fn in _defs(parsed).items()
        }
    return parsed.callees.get(name)


@functools.lru_cache(maxsize=4096)
def _conftest_chain(folder: str) -> tuple[str, ...]:
    parts = folder.split("/") if folder else []
    return ("conftest.py", *(posixpath.join(*parts[: i + 1], "conftest.py") for i in range(len(parts))))


_IGNORE_NAMES = ("collect_ignore", "collect_ignore_glob")


def read_collect_ignore(tree: ast.Module, folder: str) -> ConftestIgnores | None:
    """A conftest's module-level `collect_ignore` lists when written as literals; any other binding of either
    name (a computed value, `+=`, `.append(...)`, a binding under a condition) is named as unread."""
    values: dict[str, tuple[str, ...]] = {}
    unread: set[str] = set()
    for stmt in tree.body:
        for node in ast.walk(stmt) if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else ():
            target = None
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                target = next((t.id for t in targets if isinstance(t, ast.Name) and t.id in _IGNORE_NAMES), None)
                if target is None:
                    continue
                literal = _strings(node.value) if isinstance(node, ast.Assign) and node is stmt else None
                if literal is None:
                    unread.add(target)
                else:
                    values[target] = literal
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in _IGNORE_NAMES:
                unread.add(node.value.id)
    if not values and not unread:
        return None
    return ConftestIgnores(
        folder=folder,
        ignore=values.get("collect_ignore"),
        ignore_glob=values.get("collect_ignore_glob"),
        unread=tuple(sorted(unread)),
    )


def _strings(node: ast.expr | None) -> tuple[str, ...] | None:
    if isinstance(node, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return tuple(str(e.value) for e in node.elts)  # type: ignore[attr-defined]
    return None


def _marker_guard(rule: MarkerRule, marker: str, nodeid: str, line: int, names: ModuleNames) -> AppliedGuard:
    guard = Guard(
        scope=nodeid,
        kind=GuardKind.MARK_SKIP,
        line=line,
        source=rule.source,
        conditions=(ExprCondition(expr=rule.condition),),
        local_names=rule.bindings,
    )
    via = f"marker {marker}" if marker != ALL_TESTS else "a conftest hook"
    return AppliedGuard(guard=guard, names=rule.names or names, via=via, options=rule.options, deselects=rule.deselects)


def _mark_name(node: ast.expr, names: ModuleNames) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    name = resolve(dotted(target) or "", names.import_map)
    head, sep, last = name.rpartition(".mark.")
    return last if sep and head.endswith("pytest") and "." not in last else None


def _marks_of(exprs: Sequence[ast.expr], names: ModuleNames) -> set[str]:
    """Marker names of mark expressions: `pytest.mark.X`, `pytest.mark.X(...)`, a module alias of one
    (`slow = pytest.mark.slow; @slow`), and lists of these (`pytestmark = [a, b]`, `pytestmark = MARKS`)."""
    out: set[str] = set()
    aliases = names.alias_map
    pending = [(e, 0) for e in exprs]
    while pending:
        expr, depth = pending.pop()
        if isinstance(expr, ast.List | ast.Tuple) and depth < 4:
            pending.extend((e, depth + 1) for e in expr.elts[:64])
            continue
        head = expr.func if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) else expr
        if isinstance(head, ast.Name) and head.id in aliases and depth < 4:
            bound = aliases[head.id]
            if bound is not None:
                pending.append((bound, depth + 1))
            continue
        found = _mark_name(expr, names)
        if found is not None:
            out.add(found)
    return out


def _calls_skip(node: _Function) -> bool:
    return any(
        isinstance(n, ast.Call) and (dotted(n.func) or "").rpartition(".")[2] in ("skip", "importorskip", "exit")
        for n in ast.walk(node)
    )


def _pytestmark(body: Sequence[ast.stmt], names: ModuleNames | None = None) -> list[ast.expr]:
    return pytestmark_exprs(body, names.alias_map if names is not None else {})
