"""pytest's collection rules, mirrored statically: which folders, files, classes and functions are tests.

Every rule cites pytest's documentation ("Changing standard (Python) test discovery", docs/en/example/pythoncollection
and docs/en/explanation/goodpractices "Conventions for Python test discovery") and the code that implements it
(pytest 9, `_pytest/main.py`, `_pytest/python.py`, `_pytest/unittest.py`). Where a rule depends on what only an
import would show (a base class from another module, a name bound under a condition), the test is kept with a
doubt, so the audit calls it undetermined instead of guessing.
"""

from __future__ import annotations

import ast
import copy
import fnmatch
import glob
import os
import posixpath
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from matrix.guards.model import ModuleNames, dotted
from matrix.guards.source import resolve
from matrix.pytest_suites.classes import Hierarchy, TooLargeToRead
from matrix.pytest_suites.config import MAX_DEPTH, MAX_FILES, PytestConfig
from matrix.pytest_suites.imported import ImportedDef, plain

_Function = ast.FunctionDef | ast.AsyncFunctionDef
# Classes nested in classes: Python's tokenizer allows 100 levels of indentation (MAXINDENT), so no deeper class exists.
MAX_CLASS_DEPTH = 100
# Tests one module may define (before parametrize): pytest has no bound; past it the module is not read.
MAX_TESTS = 250_000


def fnmatch_ex(pattern: str, path: str) -> bool:
    """pytest's `_pytest.pathlib.fnmatch_ex`: a pattern without `/` matches the base name, one with `/` the
    whole path (with `*/` in front), `*` crossing folders. Used for `python_files` and `norecursedirs`."""
    if "/" not in pattern:
        return fnmatch.fnmatchcase(posixpath.basename(path), pattern)
    return fnmatch.fnmatchcase(path, pattern if pattern.startswith("/") else f"*/{pattern}")


def is_test_file(path: str, config: PytestConfig) -> bool:
    """`python_files` ("test_*.py *_test.py" by default), matched with fnmatch_ex on the path (`_pytest/python.py`,
    path_matches_patterns); only `.py` files are Python modules to pytest."""
    return path.endswith(".py") and any(fnmatch_ex(p, "/" + path) for p in config.python_files)


def ignored_dir(path: str, name: str, config: PytestConfig, is_venv: bool) -> bool:
    """pytest_ignore_collect for a folder met while recursing (`_pytest/main.py`): `__pycache__`, a virtualenv
    (pyvenv.cfg or conda-meta/history), or a `norecursedirs` pattern matched with fnmatch_ex on the path."""
    if name == "__pycache__" or is_venv:
        return True
    return any(fnmatch_ex(p, "/" + path) for p in config.norecursedirs)


def matches_name(name: str, patterns: Sequence[str]) -> bool:
    """`python_classes` / `python_functions`: a pattern with a glob character is matched with fnmatch, anything
    else is a prefix (`_pytest/python.py`, PyCollector._matches_prefix_or_glob_option)."""
    return any(fnmatch.fnmatch(name, p) if any(c in p for c in "*?[") else name.startswith(p) for p in patterns)


def testpath_args(root: Path, config: PytestConfig) -> tuple[str, ...]:
    """`testpaths` as pytest expands them when a command names no path and runs in the rootdir: each entry
    glob-expanded (recursive `**`) relative to the rootdir, sorted (`Config._decide_args`); entries matching
    nothing are dropped; none at all means the rootdir itself. Entries leading outside the checkout are dropped."""
    base = root.resolve()
    found: list[str] = []
    for entry in config.testpaths:
        pattern = posixpath.normpath(posixpath.join(config.rootdir, entry))
        if pattern.startswith(("/", "..")):
            continue
        for hit in sorted(_bounded_glob(root, pattern)):
            if (root / hit).resolve().is_relative_to(base):
                found.append(posixpath.normpath(hit))
    return tuple(found) or (config.rootdir,)


def _bounded_glob(root: Path, pattern: str) -> Iterator[str]:
    for count, hit in enumerate(glob.iglob(pattern, root_dir=root, recursive=True)):
        if count >= MAX_FILES:
            return
        yield hit


# Folders listed in one discovery: past it the walk stops and says so (a tree of a million empty folders).
MAX_FOLDERS = 200_000
UNLISTED = "cannot be listed"  # a folder the OS refuses to list: pytest fails on it (a collection error)


def discover(
    root: Path, config: PytestConfig, named: Sequence[str] = (), problems: list[tuple[str, str]] | None = None
) -> tuple[str, ...]:
    """The checkout's test files: those under `testpaths` (or the rootdir) and under the paths CI commands name
    (`named`, repository-relative), recursing as pytest does. Symlinked folders are not entered; a symlinked
    test file is listed (the reader refuses one whose target is outside). A folder that cannot be listed (pytest
    fails on it: a collection error) and a walk stopped at a bound are added to `problems` as (path, why)."""
    return discover_with_conftests(root, config, named, problems)[0]


def discover_with_conftests(
    root: Path, config: PytestConfig, named: Sequence[str] = (), problems: list[tuple[str, str]] | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`discover`'s test files, and the conftest.py files of every folder that walk enters (pytest imports the
    conftest of each folder it recurses into, whether or not the folder holds a test file)."""
    base = root.resolve()
    found: list[str] = []
    conftests: list[str] = []
    budget = [MAX_FOLDERS]
    seen: list[tuple[str, str]] = []
    extra = sorted({posixpath.normpath(n.split("::")[0]) for n in named if not n.startswith(("/", ".."))})
    for start in dict.fromkeys([*testpath_args(root, config), *extra]):
        where = root / start
        if not os.path.lexists(where):
            continue  # nothing there to list (a schedule may name thousands of paths that no checkout has)
        if not where.resolve().is_relative_to(base):
            continue
        if where.is_file():
            if start.endswith(".py"):
                found.append(posixpath.normpath(start))  # an explicit path is collected whatever its name
            continue
        _walk(root, start, config, found=found, conftests=conftests, budget=budget, problems=seen)
    if problems is not None:
        problems.extend(dict.fromkeys(seen))  # a folder under two starting points is walked twice, said once
    return tuple(sorted(set(found))), tuple(sorted(set(conftests)))


def _walk(
    root: Path,
    start: str,
    config: PytestConfig,
    *,
    found: list[str],
    conftests: list[str],
    budget: list[int],
    problems: list[tuple[str, str]],
) -> None:
    """pytest's recursion into `start`, as a stack of folders (no recursion, however deep the tree)."""
    stack = [(start, 0)]
    while stack:
        folder, depth = stack.pop()
        if len(found) >= MAX_FILES or budget[0] <= 0 or depth > MAX_DEPTH:
            why = f"more than {MAX_FILES} test files" if len(found) >= MAX_FILES else "a bound on the folders walked"
            problems.append((folder, f"not listed: {why}; the tests below it are not audited"))
            return
        budget[0] -= 1
        try:
            entries = sorted(os.scandir(root / folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            problems.append((folder, f"{UNLISTED} ({exc.strerror or type(exc).__name__})"))
            continue
        below: list[tuple[str, int]] = []
        for entry in entries:
            relative = entry.name if folder in (".", "") else f"{folder}/{entry.name}"
            if entry.is_symlink():
                # A linked test file is kept (pytest collects it); one leading outside the checkout is refused when read.
                if is_test_file(relative, config) and not Path(entry.path).is_dir():
                    found.append(relative)
                continue
            if entry.is_dir(follow_symlinks=False):
                venv = os.path.isfile(os.path.join(entry.path, "pyvenv.cfg")) or os.path.isfile(
                    os.path.join(entry.path, "conda-meta", "history")
                )
                if not ignored_dir(relative, entry.name, config, venv):
                    below.append((relative, depth + 1))
            elif entry.name == "conftest.py" and entry.is_file():
                conftests.append(relative)
            elif entry.is_file() and is_test_file(relative, config):
                found.append(relative)
        stack.extend(reversed(below))  # in name order, as the recursion went


# --- classes and functions -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class FoundTest:
    """A test function of a module: its definition, the classes it sits in (outermost first, the class it was
    collected through last; for an inherited method its defining class is `owner`), and doubts about it."""

    node: _Function
    classes: tuple[ast.ClassDef, ...] = ()
    owner: ast.ClassDef | None = None
    doubts: tuple[str, ...] = ()
    # Marks applied by assignment after the definition (`test_w = pytest.mark.slow(test_w)`).
    applied: tuple[ast.expr, ...] = ()
    # Defined in another module with marks or calls not read here: which markers it carries is unknown.
    opaque: bool = False

    @property
    def name(self) -> str:
        return "::".join([*(c.name for c in self.classes), self.node.name])


@dataclass
class _Module:
    names: ModuleNames
    config: PytestConfig
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    foreign: dict[int, ImportedDef] = field(default_factory=dict)  # imported classes (by id) and their origin
    hierarchy: Hierarchy = field(init=False)

    def __post_init__(self) -> None:
        self.hierarchy = Hierarchy(self.classes, self.names)  # reads `classes` as it grows


def _dunder_test(body: Sequence[ast.stmt]) -> bool | None:
    """The literal value of `__test__ = X` in a body (the last one); None when not set or not literal."""
    value: bool | None = None
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__test__" for t in stmt.targets):
            value = bool(stmt.value.value) if isinstance(stmt.value, ast.Constant) else None
    return value


def is_fixture(node: _Function, names: ModuleNames) -> bool:
    """Whether `node` carries pytest's fixture decorator (`istestfunction`: such a function is not a test, whatever
    its name)."""
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if resolve(dotted(target) or "", names.import_map).endswith("fixture"):
            return True
    return False


def _wrapped_mark(value: ast.expr, name: str) -> ast.expr | None:
    """`pytest.mark.slow(test_w)` or `pytest.mark.skipif(c, reason=r)(test_w)`: the mark applied to `name`."""
    if (
        isinstance(value, ast.Call)
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Name)
        and value.args[0].id == name
    ):
        return value.func
    return None


Imports = Callable[[ast.ImportFrom], dict[str, ImportedDef] | None]


def module_tests(tree: ast.Module, names: ModuleNames, config: PytestConfig, imported: Imports | None = None) -> list[FoundTest]:
    """The tests of a module in pytest's order of definition, with their classes and doubts (`imported` follows
    an import of a test function or class, or of a test class's base, to its definition)."""
    # Module-level `__test__ = False` (PyCollector.collect: `if not getattr(self.obj, "__test__", True)`).
    if _dunder_test(tree.body) is False:
        return []
    module = _Module(names=names, config=config)
    count = 0
    bound: dict[str, list[FoundTest]] = {}
    order: list[str] = []
    for stmt, condition in _statements(tree.body, 0):
        if isinstance(stmt, ast.ClassDef):
            module.classes[stmt.name] = stmt
            found = _class_tests(module, stmt, (), 0)
            found = [_inherited(module, t) for t in found] if module.foreign else found
        elif isinstance(stmt, _Function):
            found = _function_test(module, stmt, ())
        elif isinstance(stmt, ast.ImportFrom):
            _rebind(stmt, bound)
            defs = imported(stmt) if imported is not None and _may_bind_tests(stmt, config, tree) else None
            groups = _resolved(module, defs) if defs is not None else [(t.node.name, [t]) for t in _imported_tests(stmt, config)]
            for key, tests in groups:
                if key not in bound:
                    order.append(key)
                bound[key] = [replace(t, doubts=(*t.doubts, condition)) for t in tests] if condition else tests
            continue
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.Delete):
            _rebind(stmt, bound)
            continue
        else:
            continue
        if condition:
            found = [replace(t, doubts=(*t.doubts, condition)) for t in found]
        count += len(found)
        if count > MAX_TESTS:
            raise TooLargeToRead(f"more than {MAX_TESTS} tests in one module; the module is not read")
        if stmt.name not in bound:
            order.append(stmt.name)
        elif condition:
            found = [*bound[stmt.name], *found]  # the other branch's definition may be the one that exists
        bound[stmt.name] = found
    return [t for n in order for t in bound.get(n, [])]


def _imported_tests(stmt: ast.ImportFrom, config: PytestConfig) -> list[FoundTest]:
    """A function imported under a test name is a test of this module too (pytest collects the module's
    `__dict__`); what it is (a function, its marks and guards) is not read, so it is kept with a doubt."""
    out: list[FoundTest] = []
    for alias in stmt.names:
        local = alias.asname or alias.name
        if alias.name == "*" or not matches_name(local, config.python_functions):
            continue
        node = ast.FunctionDef(
            name=local,
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=[ast.Pass()],
            decorator_list=[],
            lineno=stmt.lineno,
            col_offset=stmt.col_offset,
        )
        where = "." * stmt.level + (stmt.module or "")
        out.append(
            FoundTest(node=node, doubts=(f"{local} is imported from {where} (line {stmt.lineno}): not read",), opaque=True)
        )
    return out


def _may_bind_tests(stmt: ast.ImportFrom, config: PytestConfig, tree: ast.Module) -> bool:
    """An import worth following: a star, a test name, or a base of one of the module's classes."""
    bases = {dotted(b) for c in tree.body if isinstance(c, ast.ClassDef) for b in c.bases}
    return any(
        a.name == "*"
        or matches_name(a.asname or a.name, config.python_functions)
        or matches_name(a.asname or a.name, config.python_classes)
        or (a.asname or a.name) in bases
        for a in stmt.names
    )


def _resolved(module: _Module, defs: dict[str, ImportedDef]) -> list[tuple[str, list[FoundTest]]]:
    """The tests an import binds, each defined in its own module; an imported class is also a base the module's
    classes may name."""
    out: list[tuple[str, list[FoundTest]]] = []
    for local, imported in defs.items():
        node = imported.node
        if isinstance(node, ast.ClassDef):
            if local != node.name:
                node = copy.copy(node)
                node.name = local
            module.classes[local] = node
            module.foreign[id(node)] = imported
            home = _Module(names=imported.names, config=module.config, classes={**imported.classes, local: node})
            chain = home.hierarchy.info(node).marked  # the classes whose marks `plain` judges
            found = [_judged(t, imported, (*chain, *t.classes[1:])) for t in _class_tests(home, node, (), 0)]
        elif matches_name(local, module.config.python_functions) and not is_fixture(node, imported.names):
            function = copy.copy(node)
            function.name = local
            found = [_judged(FoundTest(node=function), imported, ())]
        else:
            continue
        out.append((local, found))
    return out


def _judged(test: FoundTest, imported: ImportedDef, chain: Sequence[ast.ClassDef]) -> FoundTest:
    """A test defined in another module: read here when it carries nothing of its own there (see imported.py);
    otherwise its marks, guards and body are not read, and it is kept with a doubt."""
    bare = tuple(_bare_class(c) for c in test.classes)
    if plain(imported, test.node, tuple(chain)):
        return replace(test, classes=bare)
    function = copy.copy(test.node)
    function.decorator_list, function.body = [], [ast.Pass()]
    doubt = f"{test.node.name} is defined in {imported.origin} with marks, calls or module-level skips not read here"
    return replace(test, node=function, classes=bare, doubts=(*test.doubts, doubt), opaque=True)


def _bare_class(node: ast.ClassDef) -> ast.ClassDef:
    # Its bases name classes of another module; its marks are judged by `plain`: the collector reads neither.
    out = copy.copy(node)
    out.bases, out.decorator_list = [], []
    out.body = [s for s in node.body if not isinstance(s, ast.Assign | ast.AnnAssign | ast.AugAssign)]
    return out


def _inherited(module: _Module, test: FoundTest) -> FoundTest:
    """A method a module's class inherits from an imported class: judged as that class's own tests are."""
    imported = module.foreign.get(id(test.owner)) if test.owner is not None else None
    if imported is None:
        return test
    assert test.owner is not None
    judged = _judged(replace(test, classes=(test.owner,)), imported, (test.owner,))
    return replace(judged, classes=test.classes)


def _rebind(stmt: ast.Assign | ast.AnnAssign | ast.Delete | ast.ImportFrom, bound: dict[str, list[FoundTest]]) -> None:
    """A later statement binding a test's name: a mark applied by call keeps it (with the mark), `del` or any
    other value removes it (the module's `__dict__` holds the last binding)."""
    if isinstance(stmt, ast.Delete):
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                bound.pop(target.id, None)
        return
    if isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            local = alias.asname or alias.name
            if local in bound:
                bound.pop(local)
        return
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    value = stmt.value
    for target in targets:
        if not isinstance(target, ast.Name) or target.id not in bound:
            continue
        mark = _wrapped_mark(value, target.id) if value is not None else None
        if mark is None:
            bound.pop(target.id)
        else:
            bound[target.id] = [replace(t, applied=(*t.applied, mark)) for t in bound[target.id]]


def _statements(body: Sequence[ast.stmt], depth: int) -> Iterator[tuple[ast.stmt, str]]:
    """Module statements with the doubt of a definition made under a condition (`if`, `try`, `with`, `for`):
    whether the name exists depends on what runs at import."""
    for stmt in body:
        if isinstance(stmt, ast.If | ast.Try | ast.With | ast.For | ast.While) and depth < 4:
            if isinstance(stmt, ast.If):
                why = f"defined under `if {_short(stmt.test)}` (line {stmt.lineno}): exists only when that holds"
            else:
                why = f"defined inside a `{type(stmt).__name__.lower()}` block (line {stmt.lineno}): exists only when it runs"
            blocks: list[list[ast.stmt]] = [getattr(stmt, "body", []), getattr(stmt, "orelse", [])]
            blocks += [h.body for h in getattr(stmt, "handlers", [])] + [getattr(stmt, "finalbody", [])]
            for block in blocks:
                for inner, _ in _statements(block, depth + 1):
                    yield inner, why
        else:
            yield stmt, ""


def _short(node: ast.expr) -> str:
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        return "(a condition)"
    return text if len(text) <= 60 else text[:57] + "..."


def _function_test(module: _Module, node: _Function, classes: tuple[ast.ClassDef, ...]) -> list[FoundTest]:
    """`python_functions` ("test" prefix by default), not a fixture, and not `__test__ = False` set on it
    (`_pytest/python.py`, istestfunction and pytest_pycollect_makeitem)."""
    if not matches_name(node.name, module.config.python_functions) or is_fixture(node, module.names):
        return []
    return [FoundTest(node=node, classes=classes)]


def _class_tests(module: _Module, node: ast.ClassDef, outer: tuple[ast.ClassDef, ...], depth: int) -> list[FoundTest]:
    """The tests of a class. A class is collected when it matches `python_classes` or sets `__test__ = True`,
    or is a unittest TestCase; not when it has `__init__`/`__new__` (pytest warns and skips it) or sets
    `__test__ = False`. Its methods are looked up over its bases (inherited ones from any base, `Test` or not, at
    any depth: `classes.Hierarchy`); inner classes matching `python_classes` are collected too (`_pytest/python.py`,
    Class.collect)."""
    if depth > MAX_CLASS_DEPTH:
        return []
    info = module.hierarchy.info(node)
    testcase = info.testcase
    named = matches_name(node.name, module.config.python_classes) or info.flag is True
    doubts: tuple[str, ...] = ()
    if testcase is None and not named:
        # Not a test class by name; it is one if a base from elsewhere is a TestCase: its test* methods are kept, doubted.
        testcase = True
        bases = ", ".join(dotted(b) or "?" for b in node.bases)
        doubts = (f"class {node.name} is collected only if a base ({bases}, not read) is a unittest.TestCase",)
    if info.flag is False or not (testcase or named):
        return []
    if not testcase and info.init:
        return []
    classes = (*outer, node)
    out: list[FoundTest] = []
    for name, member in info.members.items():
        if member is None:
            continue
        stmt, owner = member.node, member.owner
        if isinstance(stmt, ast.ClassDef):
            if owner is node and not testcase:
                out.extend(_class_tests(module, stmt, classes, depth + 1))
            continue
        why = doubts
        if name in info.conflicts:
            why = (*doubts, f"{name} is defined by more than one base of {node.name}: which one Python's MRO picks is not read")
        if testcase:
            # unittest's loader: methods named test* (TestLoader.testMethodPrefix), python_functions unused.
            if name.startswith("test"):
                out.append(FoundTest(node=stmt, classes=classes, owner=owner, doubts=why))
        else:
            out.extend(
                FoundTest(node=t.node, classes=classes, owner=owner, doubts=why) for t in _function_test(module, stmt, classes)
            )
    return out
