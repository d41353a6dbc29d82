"""Planning the items: which cells a run and each test cover, and the items pytest runs for them.

- node ids: read matrix cells back out of pytest node ids (the xdist controller never sees items, only ids);
- selection: `--matrix-select` (with `@FILE`) and `@pytest.mark.matrix(select=...)`;
- the static plan of a module that never got collected (a module-level skip or import error), from its source:
  pytest never imports past a module-level `pytest.skip(..., allow_module_level=True)` or `importorskip`, so its
  matrix tests are never parametrized. Reading the source finds them: test functions and methods (named by
  `python_functions` / `python_classes`) that take `matrix_cell`, directly or through a fixture defined in the same
  module, with the selects of their `pytest.mark.matrix` marks (function, class, `pytestmark`);
- edge: the values `matrix_cell` is parametrized with; expected skips carry the rule's skip mark;
- edge: run a unittest.TestCase method for one matrix cell, so class-level guards are audited per cell.
  sglang's attention tests are TestCase classes guarded with `@unittest.skipIf(...)`. pytest cannot parametrize
  TestCase methods, so a matrix test calls `run_unittest_case(TestX, "test_decode", matrix_cell)`: the method reads
  `self.matrix_cell`; a class or method skip becomes a pytest skip that names the class, which the audit then
  judges against the matrix. Give the class `__test__ = False` so pytest does not also collect it as a plain,
  cell-less unittest class.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import unittest
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import pytest

from matrix.core.errors import SelectorError, UsageError
from matrix.core.model import Cell, Expectation, Outcome
from matrix.core.selectors import Selector


def strip_params(nodeid: str) -> str:
    """`path::Class::test_f[params]` -> `path::Class::test_f`."""
    return nodeid.partition("[")[0]


class CellIdIndex:
    """Finds the cell id inside a node id's parameter part, however pytest joined it with other params."""

    def __init__(self, cell_ids: Iterable[str]) -> None:
        self._ids = frozenset(cell_ids)
        widths = {i.count("-") + 1 for i in self._ids} or {1}
        self._widths = tuple(sorted(widths, reverse=True))

    def __contains__(self, cell_id: object) -> bool:
        return cell_id in self._ids

    def cell_in(self, nodeid: str) -> str | None:
        """The cell id parametrizing `nodeid`, or None when it is not a matrix item."""
        start = nodeid.find("[")
        if start < 0 or not nodeid.endswith("]"):
            return None
        params = nodeid[start + 1 : -1]
        if params in self._ids:
            return params
        # Other parametrizations are joined with '-', which cell ids also use: try every window of parts.
        parts = params.split("-")
        for width in self._widths:
            for first in range(len(parts) - width + 1):
                candidate = "-".join(parts[first : first + width])
                if candidate in self._ids:
                    return candidate
        return None


_GLOB_CHARS = frozenset("*?[")


def expand_select_args(raw: Sequence[str], read_text: Callable[[str], str]) -> tuple[str, ...]:
    """`@FILE` becomes one selector made of the file's lines (alternatives); `#` comments and blank lines drop."""
    out: list[str] = []
    for arg in raw:
        if not arg.startswith("@"):
            out.append(arg)
            continue
        path = arg[1:]
        try:
            text = read_text(path)
        except OSError as exc:
            raise UsageError(f"--matrix-select {arg}: cannot read {path}: {exc.strerror}") from None
        words = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        joined = " ".join(w for w in words if w)
        if not joined:
            raise UsageError(f"--matrix-select {arg}: {path} lists no selector")
        out.append(joined)
    return tuple(out)


def _is_glob(pattern: str) -> bool:
    return not _GLOB_CHARS.isdisjoint(pattern)


class CellChooser:
    """Evaluates selectors over one matrix's cells; exact ids are set lookups, so 5,000-id shard files stay fast."""

    def __init__(self, cells: Sequence[Cell]) -> None:
        self._cells = tuple(cells)
        self._ids = tuple(c.id for c in cells)
        self._id_set = frozenset(self._ids)
        self._cache: dict[str, frozenset[str]] = {}

    def _matching(self, pattern: str) -> Sequence[str]:
        if not _is_glob(pattern):
            return (pattern,) if pattern in self._id_set else ()
        regex = re.compile(fnmatch.translate(pattern))
        return [i for i in self._ids if regex.match(i)]

    def chosen(self, text: str) -> frozenset[str]:
        """Ids one selector keeps; an include word matching no cell raises the selector's own error with a hint."""
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        selector = Selector.parse(text)
        keep: set[str] = set()
        for word, patterns in selector.include:
            hit = False
            for pattern in patterns:
                found = self._matching(pattern)
                if found:
                    hit = True
                    keep.update(found)
            if not hit:
                Selector.parse(word).filter(self._cells)  # raises SelectorError with the nearest ids
        for pattern in selector.exclude:
            keep.difference_update(self._matching(pattern))
        if not keep:
            # Its includes match, its excludes remove them all: a selector that keeps nothing is a mistake, not an empty run.
            raise SelectorError(f"selector {text!r} excludes every cell it includes")
        result = frozenset(keep)
        self._cache[text] = result
        return result

    def chosen_all(self, texts: Sequence[str]) -> frozenset[str]:
        """Ids kept by every selector in turn (none given: every cell)."""
        result = self._id_set
        for number, text in enumerate(texts):
            result = result & self.chosen(text)
            if not result:
                earlier = ", ".join(repr(t) for t in texts[:number])
                raise SelectorError(f"selectors contradict: {text!r} keeps no cell that {earlier} keep(s)")
        return result

    def in_order(self, ids: frozenset[str]) -> tuple[Cell, ...]:
        """The chosen cells in matrix order, so ids and reports are stable."""
        if len(ids) == len(self._ids):
            return self._cells
        return tuple(c for c in self._cells if c.id in ids)


MATRIX_FIXTURE = "matrix_cell"


@dataclass(frozen=True, kw_only=True)
class StaticTest:
    """A matrix test found in source: `name` is `test_f` or `TestC::test_f`."""

    name: str
    selects: tuple[str, ...]
    literal: bool  # False when some select was not a string literal (it is then ignored: over-report, never hide)


def pytest_collects(name: str, patterns: Sequence[str]) -> bool:
    """pytest's rule for python_functions / python_classes: a prefix, or a glob when it has glob characters."""
    return any(name.startswith(p) or (any(ch in p for ch in "*?[") and fnmatch.fnmatch(name, p)) for p in patterns)


def _is_matrix_mark(node: ast.expr) -> bool:
    if not isinstance(node, ast.Attribute) or node.attr != "matrix":
        return False
    owner = node.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (isinstance(owner, ast.Name) and owner.id == "mark")


def _mark_selects(exprs: Sequence[ast.expr]) -> tuple[list[str], bool]:
    selects: list[str] = []
    literal = True
    for expr in exprs:
        if not (isinstance(expr, ast.Call) and _is_matrix_mark(expr.func)):
            continue
        arg = next((k.value for k in expr.keywords if k.arg == "select"), expr.args[0] if expr.args else None)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            selects.append(arg.value)
        elif arg is not None:
            literal = False
    return selects, literal


def _pytestmark(body: Sequence[ast.stmt]) -> list[ast.expr]:
    out: list[ast.expr] = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets):
            value = stmt.value
            out.extend(value.elts if isinstance(value, ast.List | ast.Tuple) else [value])
    return out


def _arg_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = func.args
    return {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}


def _fixture_name(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for dec in func.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if (isinstance(target, ast.Attribute) and target.attr == "fixture") or (
            isinstance(target, ast.Name) and target.id == "fixture"
        ):
            if isinstance(dec, ast.Call):
                for k in dec.keywords:
                    if k.arg == "name" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str):
                        return k.value.value
            return func.name
    return None


def _matrix_fixtures(tree: ast.Module) -> set[str]:
    """Fixtures of this module that need matrix_cell, transitively."""
    fixtures: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (name := _fixture_name(node)) is not None:
            fixtures[name] = _arg_names(node)
    needs = {MATRIX_FIXTURE}
    changed = True
    while changed:
        changed = False
        for name, args in fixtures.items():
            if name not in needs and args & needs:
                needs.add(name)
                changed = True
    return needs


def matrix_tests(source: str, *, functions: Sequence[str] = ("test",), classes: Sequence[str] = ("Test",)) -> list[StaticTest]:
    """The matrix tests a module's source defines; a module that does not parse has none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    needs = _matrix_fixtures(tree)
    found: list[StaticTest] = []
    module_selects, module_literal = _mark_selects(_pytestmark(tree.body))

    def visit(body: Sequence[ast.stmt], prefix: str, selects: list[str], literal: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and pytest_collects(node.name, classes):
                own, own_literal = _mark_selects([*node.decorator_list, *_pytestmark(node.body)])
                visit(node.body, f"{prefix}{node.name}::", selects + own, literal and own_literal)
            elif (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and pytest_collects(node.name, functions)
                and _fixture_name(node) is None
                and _arg_names(node) & needs
            ):
                own, own_literal = _mark_selects(node.decorator_list)
                found.append(StaticTest(name=f"{prefix}{node.name}", selects=(*selects, *own), literal=literal and own_literal))

    visit(tree.body, "", module_selects, module_literal)
    return found


SKIP_PREFIX = "specmatrix: "


def skip_reason(exp: Expectation) -> str:
    """`specmatrix: [rule-id] reason (detail)`: the rule that makes this cell an expected skip."""
    return SKIP_PREFIX + exp.reason


class CellParameters:
    """Argument values and ids for `metafunc.parametrize`, built once per cell and shared by every test."""

    def __init__(self, cells: Sequence[Cell], expectations: Mapping[str, Expectation], *, run_expected_skips: bool) -> None:
        self._values: dict[str, object] = {}
        for cell in cells:
            exp = expectations[cell.id]
            if exp.outcome is Outcome.SKIP and not run_expected_skips:
                self._values[cell.id] = pytest.param(cell, marks=pytest.mark.skip(reason=skip_reason(exp)), id=cell.id)
            else:
                self._values[cell.id] = cell

    def for_cells(self, cells: Sequence[Cell]) -> tuple[list[object], list[str]]:
        return [self._values[c.id] for c in cells], [c.id for c in cells]


def _skip_why(case_class: type[unittest.TestCase], method: object) -> str | None:
    for owner in (case_class, method):
        if getattr(owner, "__unittest_skip__", False):
            return str(getattr(owner, "__unittest_skip_why__", "") or "skipped")
    return None


def run_unittest_case(case_class: type[unittest.TestCase], method_name: str, cell: Cell) -> None:
    """setUpClass, setUp, the method, tearDown, cleanups, tearDownClass; failures and skips propagate to pytest."""
    why = _skip_why(case_class, getattr(case_class, method_name))
    if why is not None:
        pytest.skip(f"{case_class.__qualname__}.{method_name}: {why}")
    case = case_class(method_name)
    case.matrix_cell = cell  # type: ignore[attr-defined]
    case_class.setUpClass()
    try:
        case.setUp()
        try:
            getattr(case, method_name)()
        finally:
            case.tearDown()
            case.doCleanups()
    finally:
        case_class.tearDownClass()
        case_class.doClassCleanups()
