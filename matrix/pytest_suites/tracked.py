"""A collector that records, per test file, every file its collection and audit read or asked about.

The results cache keys a test file's audit by what that audit depends on: the file, its conftest.py files, the
helper modules its guards and marks are followed into, the files an import was looked for in and not found. The
collector shares its parses between files (a conftest is parsed once), so reads are recorded where the collector
answers from a memo too (`Collector.parsed`, `_exists`, `_mentions_skip`, the linker's, the import resolver's and
the project-import answers' modules); and before each file the collector and the auditor forget what they worked
out from other files (`Collector.forget_derived`, `SuiteAuditor.forget_evaluations`, the project-import answers),
so a memo filled for an earlier file cannot hide a read from a later one. A file's dependencies are then exactly
the paths read while it was being tracked.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

from matrix.guards.model import ModuleNames
from matrix.pytest_suites.collect import Collector, _Parsed
from matrix.pytest_suites.config import PytestConfig
from matrix.pytest_suites.imported import ImportResolver
from matrix.pytest_suites.linker import ProjectModules
from matrix.pytest_suites.loader import SourceLoader
from matrix.pytest_suites.packs import PredicatePacks
from matrix.pytest_suites.recorded import Status
from matrix.schedule.environment.project_imports import CheckoutProject, ProjectImports

# A file's dependencies as the cache stores them: path -> (fingerprint, status it may be trusted by).
Reads = dict[str, tuple[str, Status | None]]


class TrackedCollector(Collector):
    """`Collector` over a fingerprinting `SourceLoader`, noting every path it answers about."""

    def __init__(
        self,
        load: SourceLoader,
        config: PytestConfig,
        packs: PredicatePacks,
        declared_markers: Mapping[str, str] | None = None,
    ):
        # What the collector reads to start (the checkout's own name: `pyproject.toml`, `setup.py`) is every file's.
        self.base_reads: set[str] = set()
        load.reads = self.base_reads
        super().__init__(load, config, packs, declared_markers)
        load.reads = None
        self.source = load
        self.modules = _NotedModules(load, self._bases)
        self.imported = _NotedImports(self._definitions, self._bases, load.note)
        self.project = _NotedProject(load, self.project.project)
        self.reads_of: dict[str, set[str]] = {}

    def track(self, path: str) -> None:
        """From now on, every read is `path`'s (until another file is tracked)."""
        self.forget_derived()
        self.project.answers.clear()  # an answer follows the checkout's modules: their reads are this file's too
        self.source.reads = self.reads_of.setdefault(path, set(self.base_reads))

    def untrack(self) -> None:
        self.source.reads = None

    def reads(self, path: str) -> Reads:
        """The fingerprints of what `path`'s collection and audit read."""
        return {p: self.source.fingerprint(p) for p in sorted(self.reads_of.get(path, ()))}

    def parsed(self, path: str) -> _Parsed | None:
        self.source.note(path)
        return super().parsed(path)

    def _exists(self, path: str) -> bool:
        self.source.note(path)
        return super()._exists(path)

    def _mentions_skip(self, path: str) -> bool:
        self.source.note(path)
        return super()._mentions_skip(path)


class _NotedProject(ProjectImports):
    def __init__(self, load: SourceLoader, project: CheckoutProject):
        super().__init__(load, project)
        self.source = load

    def tree(self, path: str) -> ast.Module | None:
        self.source.note(path)
        return super().tree(path)


class _NotedModules(ProjectModules):
    def __init__(self, load: SourceLoader, bases: Callable[[str], tuple[str, ...]]):
        super().__init__(load, bases)
        self.source = load

    def module(self, path: str) -> tuple[ast.Module, ModuleNames] | None:
        self.source.note(path)
        return super().module(path)


class _NotedImports(ImportResolver):
    def __init__(
        self,
        parse: Callable[[str], tuple[ast.Module, ModuleNames] | None],
        bases: Callable[[str], tuple[str, ...]],
        note: Callable[[str], None],
    ):
        super().__init__(parse, bases)
        self.note = note

    def _module(self, path: str) -> tuple[dict[str, ast.stmt], dict[str, ast.ClassDef], bool] | None:
        self.note(path)
        return super()._module(path)
