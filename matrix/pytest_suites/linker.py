"""Imported names followed into the audited project's own files, for the guard evaluator.

A guard that calls `is_sm_at_least_90()` imported from `torchao.utils`, or reads a constant a helper module
of the tests binds, means what that file says. `ProjectModules` finds the file an import names (relative
imports, and absolute ones under the folders pytest puts on `sys.path`, `src/` too), parses it once, and
answers with the function or the bound expression and that file's names, which link onward the same way.
Re-exports (`from .impl import f` in a package `__init__`) are followed `MAX_REEXPORTS` files deep. The
predicate packs are asked first: a name they know (torch, flashinfer's public helpers) is never linked.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import replace

from matrix.guards.model import Linked, ModuleNames
from matrix.guards.source import collect_module_names
from matrix.pytest_suites.skipmarks import ImportTarget, from_imports

MAX_REEXPORTS = 4
# A larger module (a library's kernel dispatch file) is not parsed for a name: that name stays unknown. Parsing
# one costs as much as a dozen test files, and guards read small helper modules.
MAX_MODULE_BYTES = 512 * 1024

Loader = Callable[[str], str | None]
Bases = Callable[[str], tuple[str, ...]]


class ProjectModules:
    """The audited tree's Python files as modules: parsed on first use, each with a linker over its imports."""

    def __init__(self, load: Loader, bases: Bases):
        self.load = load
        self.bases = bases
        self.modules: dict[str, tuple[ast.Module, ModuleNames] | None] = {}

    def attach(self, path: str, tree: ast.Module, names: ModuleNames) -> ModuleNames:
        """`names` of a file the caller parsed, with a linker over its imports."""
        return replace(names, linker=FileLinker(path, tree, self))

    def forget_links(self, also: Iterable[ModuleNames] = ()) -> None:
        """Forget every name linked so far, by these modules and by `also`; their parses stay."""
        for names in (*(m[1] for m in self.modules.values() if m is not None), *also):
            if isinstance(names.linker, FileLinker):
                names.linker.imports = None
                names.linker.found = {}

    def module(self, path: str) -> tuple[ast.Module, ModuleNames] | None:
        if path not in self.modules:
            self.modules[path] = None
            text = self.load(path)
            if text is not None and len(text) <= MAX_MODULE_BYTES:
                try:
                    tree = ast.parse(text, filename=path)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
                if tree is not None:
                    self.modules[path] = (tree, self.attach(path, tree, collect_module_names(tree)))
        return self.modules[path]


class FileLinker:
    """What the names one file imports mean in the project (see the module docstring)."""

    def __init__(self, path: str, tree: ast.Module, project: ProjectModules):
        self.path = path
        self.tree = tree
        self.project = project
        self.imports: dict[str, ImportTarget] | None = None
        self.found: dict[str, Linked | None] = {}

    def link(self, name: str) -> Linked | None:
        if name not in self.found:
            self.found[name] = None  # a cycle of re-exports ends here
            self.found[name] = self._link(name, 0)
        return self.found[name]

    def _targets(self) -> dict[str, ImportTarget]:
        if self.imports is None:
            self.imports = from_imports(self.tree, self.path, self.project.bases(self.path))
        return self.imports

    def _link(self, name: str, depth: int) -> Linked | None:
        head, _, rest = name.partition(".")
        targets = self._targets()
        if not rest:
            target = targets.get(head)
        elif "." not in rest and head + "." in targets:
            target = (targets[head + "."][0], rest)  # `utils.f` / `M.f` for a module imported as a name
        else:
            parts = name.split(".")  # `torchao.utils.f` after `import torchao.utils`
            bases = self.project.bases(self.path)
            module = "/".join(parts[:-1])
            files = tuple(f"{b}/{module}{ext}" if b else f"{module}{ext}" for b in bases for ext in (".py", "/__init__.py"))
            target = (files, parts[-1])
        if target is None or not target[1]:
            return None
        return self.project_definition(target, depth)

    def project_definition(self, target: ImportTarget, depth: int) -> Linked | None:
        files, attr = target
        for where in files:
            found = self.project.module(where)
            if found is None:
                continue
            _tree, names = found
            if attr in names.function_map:
                return Linked(node=names.function_map[attr], names=names, where=f"{where}:{attr}")
            bound = names.alias_map.get(attr)
            if bound is not None:
                return Linked(node=bound, names=names, where=f"{where}:{attr}")
            if depth < MAX_REEXPORTS and isinstance(names.linker, FileLinker) and attr not in names.ambiguous:
                return names.linker._link(attr, depth + 1)
            return None
        return None
