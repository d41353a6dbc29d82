"""Whether a module of the audited checkout imports on a job: the checkout's own packages, read without importing
them; pure (files come from a loader).

A module of the checkout (`pkg.sub.mod`, with `pkg/__init__.py` at the checkout's root or under `src/`) imports
where the job installs the project (its distribution named by the root `pyproject.toml` or a literal `setup.py`
name) or where pytest puts its folder on `sys.path` (the `pythonpath` option), when its file and its packages'
`__init__.py` files exist and every import they run when imported is importable there: an import of the checkout
is followed (bounded), any other is answered by the job's environment, and one that is not known leaves the answer
unknown. A `from m import name` needs `name` bound in `m` or a submodule file. Imports inside functions, under
`if TYPE_CHECKING:` and in a `try` whose handler catches `ImportError` do not count.

Only `ImportError`-class failures are modelled: module code that raises anything else at import is taken not to
(it would break collection of the test file as well). The answer is True or unknown, never False: a module the
reading cannot show importable stays unknown, and the environment's own answer is kept."""

from __future__ import annotations

import ast
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from matrix.schedule.environment.distributions import ModuleAnswer, module_answer
from matrix.schedule.environment.model import JobEnvironment, normalized

Loader = Callable[[str], str | None]
MAX_MODULES = 600  # modules of the checkout one answer follows
MAX_NAMES = 64  # names one `from m import ...` checks
_HANDLED = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
_SETUP_NAME = re.compile(r"""\bname\s*=\s*["']([A-Za-z0-9._-]+)["']""")


@dataclass(frozen=True, kw_only=True)
class CheckoutProject:
    """What the checkout says of itself: its distribution name ("" when not literal), the folders its top-level
    packages live in (repository-relative), and the folders pytest adds to `sys.path`."""

    distribution: str = ""
    package_roots: tuple[str, ...] = (".", "src")
    pythonpath: tuple[str, ...] = ()


def checkout_project(load: Loader, pythonpath: Sequence[str] = ()) -> CheckoutProject:
    """The checkout's distribution name from `pyproject.toml` (`[project] name`), else a literal `setup.py` name."""
    name = ""
    text = load("pyproject.toml")
    if text is not None:
        try:
            project = tomllib.loads(text).get("project", {})
        except tomllib.TOMLDecodeError:
            project = {}
        found = project.get("name") if isinstance(project, dict) else None
        name = found if isinstance(found, str) else ""
    if not name:
        setup = load("setup.py")
        names = set(_SETUP_NAME.findall(setup or ""))
        name = names.pop() if len(names) == 1 else ""
    return CheckoutProject(distribution=normalized(name) if name else "", pythonpath=tuple(pythonpath))


class ProjectImports:
    """Answers `import module` for the checkout's own modules on one job's environment (see the module docstring);
    parsed files and answers are kept for the whole audit."""

    def __init__(self, load: Loader, project: CheckoutProject):
        self.load = load
        self.project = project
        self.trees: dict[str, ast.Module | None] = {}
        self.answers: dict[tuple[str, tuple[str, ...], int], ModuleAnswer | None] = {}
        self.implications: dict[tuple[str, ...], frozenset[str]] = {}

    def answer(self, module: str, environment: JobEnvironment | None, names: tuple[str, ...] = ()) -> ModuleAnswer | None:
        """True (importable, with the reason) or unknown; None when `module` is not the checkout's own."""
        key = (module, names, id(environment))
        if key not in self.answers:
            self.answers[key] = self._answer(module, environment, names)
        return self.answers[key]

    def _answer(self, module: str, environment: JobEnvironment | None, names: tuple[str, ...]) -> ModuleAnswer | None:
        top = module.split(".", maxsplit=1)[0]
        root = next((r for r in self._roots(environment) if self._file(r, top) is not None), None)
        if root is None:
            if any(self._file(r, top) is not None for r in self.project.package_roots):
                return ModuleAnswer(
                    importable=None,
                    why=f"whether {module} imports: the job is not known to install the project "
                    f"({self.project.distribution or 'its name is not read'}) and pytest's pythonpath does not hold it",
                )
            return None
        failure = _Walk(self, root, environment).run(module, names)
        if failure is not None:
            return ModuleAnswer(importable=None, why=f"whether {module} imports: {failure}")
        where = "the job installs the project" if root in self.project.package_roots and self._installed(environment) else ""
        how = where or f"pytest's pythonpath holds {root}"
        return ModuleAnswer(
            importable=True,
            why=f"{module} imports: {how}, and what its files import is there (import errors only are modelled)",
        )

    def implied(self, modules: tuple[str, ...]) -> frozenset[str]:
        """Every module importing `modules` certainly imports: themselves, and for each of the checkout's own (and
        each of its packages' `__init__.py`), the imports of its top-level statements, followed (bounded)."""
        if modules not in self.implications:
            self.implications[modules] = self._implied(modules)
        return self.implications[modules]

    def _implied(self, modules: tuple[str, ...]) -> frozenset[str]:
        out: set[str] = set()
        stack = list(modules)
        while stack and len(out) < MAX_MODULES:
            module = stack.pop()
            parts = module.split(".")
            for i in range(1, len(parts) + 1):
                name = ".".join(parts[:i])
                if name in out:
                    continue
                out.add(name)
                path = next(
                    (f for r in (*self.project.pythonpath, *self.project.package_roots) if (f := self._file(r, name))), None
                )
                tree = self.tree(path) if path is not None else None
                if tree is None or path is None:
                    continue
                package = name if path.endswith("/__init__.py") else name.rpartition(".")[0]
                for stmt in tree.body:
                    if isinstance(stmt, ast.Import):
                        stack.extend(alias.name for alias in stmt.names)
                    elif isinstance(stmt, ast.ImportFrom) and (base := _absolute(stmt, package)):
                        stack.append(base)
                    elif _may_skip(stmt):
                        break  # what follows a module-level skip runs only where it did not skip
        return frozenset(out)

    def _roots(self, environment: JobEnvironment | None) -> list[str]:
        roots = [posixpath.normpath(p) for p in self.project.pythonpath]
        if self._installed(environment):
            roots += [r for r in self.project.package_roots if r not in roots]
        return roots

    def editable(self, environment: JobEnvironment | None) -> bool:
        """Whether the job installs the project in editable mode (`pip install -e .`)."""
        found = environment.get(self.project.distribution) if environment is not None and self.project.distribution else None
        return found is not None and any(w in ("-e", "--editable") or w.startswith("--editable=") for w in found.command.split())

    def _installed(self, environment: JobEnvironment | None) -> bool:
        name = self.project.distribution
        return bool(name) and environment is not None and environment.get(name) is not None

    def _file(self, root: str, module: str) -> str | None:
        """The file that `module` is under `root`: its package's `__init__.py`, else its `.py`; None if neither."""
        base = posixpath.normpath(posixpath.join(root, *module.split(".")))
        for path in (f"{base}/__init__.py", f"{base}.py"):
            if self.tree(path) is not None:
                return path
        return None

    def tree(self, path: str) -> ast.Module | None:
        """The module's outline (`_outline`): what an import of it runs, without function bodies."""
        if path not in self.trees:
            text = self.load(path)
            try:
                self.trees[path] = _outline(ast.parse(text)) if text is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self.trees[path] = None
        return self.trees[path]


class _Walk:
    """One answer's walk over the checkout's modules an import runs."""

    def __init__(self, owner: ProjectImports, root: str, environment: JobEnvironment | None):
        self.owner = owner
        # Namespace folders are reached where Python imports the checkout's own folders: pytest's pythonpath, or an
        # editable install (a regular install copies only the packages the build lists).
        self.namespaces = root not in owner.project.package_roots or owner.editable(environment)
        self.root = root
        self.environment = environment
        self.seen: set[str] = set()
        self.stack: list[str] = []

    def run(self, module: str, names: tuple[str, ...]) -> str | None:
        """None when `from module import names` (or `import module`) succeeds, else why it is not known to."""
        why = self._import(module)
        if why is None and names:
            why = self._names(module, names)
        while why is None and self.stack:
            why = self._module(self.stack.pop())
        return why

    def _import(self, module: str) -> str | None:
        """Queue `module` and its packages (an import runs every parent's `__init__.py`)."""
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name in self.seen:
                continue
            if len(self.seen) >= MAX_MODULES:
                return f"more than {MAX_MODULES} modules of the checkout to follow"
            if self.owner._file(self.root, name) is None:
                if i < len(parts) and self.namespaces and self.owner._file(self.root, module) is not None:
                    # A folder without `__init__.py` inside a package, on the way to a file that exists: a namespace
                    # package (PEP 420), found through its parent's `__path__` from the checkout's folders.
                    self.seen.add(name)
                    continue
                return f"{name} has no file under {self.root} (a namespace package or a built module is not read)"
            self.seen.add(name)
            self.stack.append(name)
        return None

    def _module(self, module: str) -> str | None:
        path = self.owner._file(self.root, module)
        tree = self.owner.tree(path) if path is not None else None
        if tree is None or path is None:
            return f"{module} does not parse"
        package = module if path.endswith("/__init__.py") else module.rpartition(".")[0]
        for stmt in _run_at_import(tree.body):
            why = self._statement(stmt, package, path)
            if why is not None:
                return why
        return None

    def _statement(self, stmt: ast.Import | ast.ImportFrom, package: str, path: str) -> str | None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                why = self._any(alias.name, path)
                if why is not None:
                    return why
            return None
        base = _absolute(stmt, package)
        if base is None:
            return f"{path}:{stmt.lineno}: a relative import above the checkout's package"
        top = base.split(".", maxsplit=1)[0]
        if self.owner._file(self.root, top) is None:
            return self._any(base, path)  # another distribution's module: its names are not checked
        why = self._import(base)
        if why is not None:
            return why
        wanted = tuple(a.name for a in stmt.names)
        return None if wanted == ("*",) else self._names(base, wanted)

    def _any(self, module: str, path: str) -> str | None:
        top = module.split(".", maxsplit=1)[0]
        if self.owner._file(self.root, top) is not None:
            return self._import(module)
        found = module_answer(self.environment, module)
        if found.importable is True:
            return None
        return f"{path} imports {module}: {found.why}"

    def _names(self, module: str, names: tuple[str, ...]) -> str | None:
        """Each name bound in `module` (a definition, assignment or import at its top level, or what a star import
        of the checkout gives it) or a submodule file."""
        path = self.owner._file(self.root, module)
        tree = self.owner.tree(path) if path is not None else None
        if tree is None or path is None:
            return f"{module} does not parse"
        bound, open_ended = self._exports(module, path, tree, 0, all_names=True)
        for name in names[:MAX_NAMES]:
            if name in bound:
                continue
            if path.endswith("/__init__.py") and self.owner._file(self.root, f"{module}.{name}"):
                why = self._import(f"{module}.{name}")
                if why is not None:
                    return why
                continue
            why = "a star import or module __getattr__ may bind it" if open_ended else "it is not bound there"
            return f"{name} of {module}: {why}"
        return None if len(names) <= MAX_NAMES else f"more than {MAX_NAMES} names imported from {module}"

    def _exports(self, module: str, path: str, tree: ast.Module, depth: int, *, all_names: bool) -> tuple[set[str], bool]:
        """The names `module` binds (`all_names`) or gives a star import (its literal `__all__`, else its public
        names), and whether more may be bound than the reading sees (a star import it cannot follow, a module
        `__getattr__`)."""
        bound, stars, getattr_ = _bound(tree.body)
        open_ended = getattr_
        package = module if path.endswith("/__init__.py") else module.rpartition(".")[0]
        for star in stars:
            base = _absolute(star, package)
            target = self.owner._file(self.root, base) if base is not None else None
            inner = self.owner.tree(target) if target is not None else None
            if base is None or target is None or inner is None or depth >= 8:
                open_ended = True
                continue
            if self._import(base) is not None:
                open_ended = True
                continue
            names, more = self._exports(base, target, inner, depth + 1, all_names=False)
            bound |= names
            open_ended = open_ended or more
        if not all_names:
            listed = _all_list(tree.body)
            bound = set(listed) if listed is not None else {n for n in bound if not n.startswith("_")}
        return bound, open_ended


_SKIPPING_CALLS = frozenset({"skip", "importorskip", "skipTest", "exit", "SkipTest"})


def _may_skip(stmt: ast.stmt) -> bool:
    """A module-level statement that may end the import early (a `raise`, a call named like a skip), outside
    function bodies: the reading of `matrix.guards.source.may_skip_at_import`, which this layer cannot import."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if last in _SKIPPING_CALLS:
                return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _absolute(stmt: ast.ImportFrom, package: str) -> str | None:
    """The module a `from` import names, relative imports resolved against the importing module's package."""
    if not stmt.level:
        return stmt.module or ""
    parts = package.split(".") if package else []
    if stmt.level - 1 > len(parts) - 1:
        return None
    base = parts[: len(parts) - (stmt.level - 1)]
    return ".".join([*base, stmt.module] if stmt.module else base) or None


def _outline(tree: ast.Module) -> ast.Module:
    """`tree` with every function's body (methods too) replaced by `pass`: nothing here reads a function body, and
    the checkout's modules are kept for the whole audit (flashinfer's package: 160 MB of syntax tree, nine tenths
    of it in function bodies). Decorators, defaults and everything an import runs stay."""
    stack: list[list[ast.stmt]] = [tree.body]
    while stack:
        for stmt in stack.pop():
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                stmt.body = [ast.Pass(lineno=stmt.lineno, col_offset=stmt.col_offset)]
                continue
            for field in ("body", "orelse", "finalbody"):
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    stack.append(block)
            for handler in getattr(stmt, "handlers", ()):
                stack.append(handler.body)
            for case in getattr(stmt, "cases", ()):
                stack.append(case.body)
    return tree


def _run_at_import(body: Sequence[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module's body runs when it is imported: both arms of an `if` (but not `if TYPE_CHECKING:`),
    class bodies, `with` blocks, `try` bodies unless a handler catches import errors, and handlers, `else`,
    `finally`; never function bodies."""
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            yield stmt
        elif isinstance(stmt, ast.If):
            test = stmt.test
            if not (
                isinstance(test, ast.Name | ast.Attribute)
                and (getattr(test, "id", "") or getattr(test, "attr", "")) == "TYPE_CHECKING"
            ):
                yield from _run_at_import(stmt.body)
            yield from _run_at_import(stmt.orelse)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            caught = {_name(h.type) for h in stmt.handlers}
            if not (caught & _HANDLED or None in caught):
                yield from _run_at_import(stmt.body)
            for handler in stmt.handlers:
                yield from _run_at_import(handler.body)
            yield from _run_at_import(stmt.orelse)
            yield from _run_at_import(stmt.finalbody)
        elif isinstance(stmt, ast.ClassDef | ast.With | ast.For | ast.While):
            yield from _run_at_import(stmt.body)


def _name(node: ast.expr | None) -> str | None:
    """A handler's exception class name (the last part), "tuple" parts each; None for a bare `except:`."""
    if node is None:
        return None
    if isinstance(node, ast.Tuple):
        names = [_name(e) for e in node.elts]
        return next((n for n in names if n in _HANDLED), "tuple")
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else "?"


def _bound(body: Sequence[ast.stmt]) -> tuple[set[str], list[ast.ImportFrom], bool]:
    """The names a module's top level binds (in any branch of its compound statements), its star imports, and
    whether it defines a module `__getattr__`."""
    bound: set[str] = set()
    stars: list[ast.ImportFrom] = []
    getattr_ = False
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(stmt.name)
            getattr_ = getattr_ or stmt.name == "__getattr__"
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                if alias.name == "*" and isinstance(stmt, ast.ImportFrom):
                    stars.append(stmt)
                elif alias.name != "*":
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
            targets: list[ast.AST] = (
                list(stmt.targets)
                if isinstance(stmt, ast.Assign)
                else [stmt.target]
                if isinstance(stmt, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor)
                else [i.optional_vars for i in stmt.items if i.optional_vars is not None]
            )
            bound.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        if isinstance(stmt, ast.If | ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith | ast.Try | ast.TryStar):
            blocks = [getattr(stmt, "body", []), getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
            blocks += [h.body for h in getattr(stmt, "handlers", [])]
            for block in blocks:
                inner, more, flag = _bound(block)
                bound |= inner
                stars += more
                getattr_ = getattr_ or flag
    return bound, stars, getattr_


def _all_list(body: Sequence[ast.stmt]) -> list[str] | None:
    """A module's `__all__` when it is one literal list or tuple of strings assigned once, else None."""
    found = [
        s for s in body if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in s.targets)
    ]
    changed = any(
        isinstance(s, ast.AugAssign | ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == "__all__" for s in body
    )
    if len(found) != 1 or changed or not isinstance(found[0].value, ast.List | ast.Tuple):
        return None
    values = [e.value for e in found[0].value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return values if len(values) == len(found[0].value.elts) else None
