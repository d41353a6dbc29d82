"""Frozen records of the static guard audit: registrations, test scopes, guards; its findings are core `Finding`s.

Also `dotted`, the name an attribute chain spells, which every reader of guards (and the evaluator's texts) shares."""

from __future__ import annotations

import ast
import functools
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from matrix.core.errors import EXIT_FINDINGS, EXIT_OK
from matrix.core.finding import Finding, Tool, spec_of


class Platform(StrEnum):
    """The hardware family a `register_<platform>_ci` call targets."""

    CUDA = "cuda"
    CPU = "cpu"
    AMD = "amd"
    NPU = "npu"
    XPU = "xpu"
    MUSA = "musa"
    MLX = "mlx"
    OTHER = "other"


# Runner profiles describe CUDA machines and GPU-less hosts; nothing else can be evaluated.
IN_SCOPE_PLATFORMS = frozenset({Platform.CUDA, Platform.CPU})


@dataclass(frozen=True, kw_only=True)
class Registration:
    """One `register_*_ci(...)` call, read from the syntax tree."""

    function: str
    platform: Platform
    line: int
    source: str
    suite: str | None = None
    stage: str | None = None
    runner_config: str | None = None
    nightly: bool = False
    disabled: str | None = None
    est_time: float | None = None
    problem: str | None = None


class ScopeKind(StrEnum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"


@dataclass(frozen=True, kw_only=True)
class TestScope:
    """A module, class or test function; `nodeid` is pytest-style (`path::Class::test`)."""

    kind: ScopeKind
    nodeid: str
    line: int
    parent: str | None


class GuardKind(StrEnum):
    SKIP_IF = "unittest.skipIf"
    SKIP_UNLESS = "unittest.skipUnless"
    SKIP = "unittest.skip"
    MARK_SKIPIF = "pytest.mark.skipif"
    MARK_SKIP = "pytest.mark.skip"
    MARK_XFAIL_NORUN = "pytest.mark.xfail(run=False)"
    PYTEST_SKIP = "pytest.skip"
    SKIP_TEST = "skipTest"
    RAISE_SKIPTEST = "raise SkipTest"
    IMPORTORSKIP = "pytest.importorskip"
    MAIN_EXIT = "sys.exit(0) in __main__"
    # Not a skip: `if is_in_ci(): return` in a test body; the test passes having tested nothing (silent-pass).
    EARLY_RETURN = "return in a test body"
    # Not a skip either: every assertion of a test under an `if` on the CI environment (`matrix.registered_suite.gated`).
    GATED_ASSERTIONS = "assertions under an if"


@dataclass(frozen=True, kw_only=True)
class ExprCondition:
    """The guard skips when `expr` is true (false when `negate`)."""

    expr: ast.expr
    negate: bool = False


@dataclass(frozen=True, kw_only=True)
class MissingModules:
    """The guard skips when one of `modules` cannot be imported."""

    modules: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class OpaqueCondition:
    """A condition the audit cannot read (a loop, an exception handler)."""

    why: str


@dataclass(frozen=True, kw_only=True)
class AlwaysSkips:
    """An unconditional skip."""


Bindings = tuple[tuple[str, ast.expr | None], ...]
# Per parametrize decorator: its argument names and the value expressions of each of its rows.
CaseLayers = tuple[tuple[tuple[str, ...], tuple[tuple[ast.expr, ...], ...]], ...]


@dataclass(frozen=True, kw_only=True)
class CaseSearch:
    """The guards of a parametrized test that read its parameters, over cases too many to list as items (the product
    of `layers`): it skips when every case meets a guard that skips, and not when one case meets none."""

    guards: tuple[Guard, ...]
    layers: CaseLayers


SkipCondition = ExprCondition | MissingModules | OpaqueCondition | AlwaysSkips | CaseSearch


@dataclass(frozen=True, kw_only=True)
class Guard:
    """A skip at `scope`; it fires when every condition holds (the `if` path leading to it)."""

    scope: str
    kind: GuardKind
    line: int
    source: str
    conditions: tuple[SkipCondition, ...]
    local_names: Bindings = ()

    def with_local_names(self, local: Bindings) -> Guard:
        """This guard with its function's bindings; built directly, as `dataclasses.replace` reads every field's
        metadata and runs once per guard of every test (a field added above belongs here too)."""
        return Guard(
            scope=self.scope, kind=self.kind, line=self.line, source=self.source, conditions=self.conditions, local_names=local
        )


def dotted(node: ast.expr) -> str | None:
    """`torch.cuda.is_available` for an attribute chain over a name, else None (what guard names are made of)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


@dataclass(frozen=True, kw_only=True)
class Linked:
    """A name another file of the audited project defines: its function or bound expression, that file's names."""

    node: ast.FunctionDef | ast.expr
    names: ModuleNames
    where: str


class Linker(Protocol):
    """Finds what an imported name means in the audited project's own files (None when it is not there)."""

    def link(self, name: str) -> Linked | None: ...


@dataclass(frozen=True, kw_only=True)
class ModuleNames:
    """What module-level names mean: import targets, aliases of guard expressions, local definitions."""

    imports: tuple[tuple[str, str], ...] = ()
    aliases: Bindings = ()
    defined: frozenset[str] = frozenset()
    # Module-level functions the evaluator may step into (helpers, local predicates, decorator factories).
    functions: tuple[tuple[str, ast.FunctionDef], ...] = ()
    # Names bound more than one way (an import and a fallback assignment): their value is unknown.
    ambiguous: frozenset[str] = frozenset()
    # Modules the file's own top-level statements import (absolute names): importing the file ran them, so a test
    # of it runs only where they import.
    certain_imports: tuple[str, ...] = ()
    # Follows imported names into the audited project's files (the pytest audit sets it; None: imports only).
    linker: Linker | None = field(default=None, compare=False, hash=False, repr=False)

    # Built once per file, read by every evaluation of every guard on every runner.
    @functools.cached_property
    def import_map(self) -> dict[str, str]:
        return dict(self.imports)

    @functools.cached_property
    def alias_map(self) -> dict[str, ast.expr | None]:
        return dict(self.aliases)

    @functools.cached_property
    def function_map(self) -> dict[str, ast.FunctionDef]:
        return dict(self.functions)


@dataclass(frozen=True, kw_only=True)
class FileAnalysis:
    """Everything the audit needs from one source file; built without importing it."""

    path: str
    is_test_file: bool
    registrations: tuple[Registration, ...] = ()
    scopes: tuple[TestScope, ...] = ()
    guards: tuple[Guard, ...] = ()
    names: ModuleNames = ModuleNames()
    # Module-level functions that are neither tests nor setup (helpers, fixtures) and skip: name -> guards.
    helpers: tuple[tuple[str, tuple[Guard, ...]], ...] = ()
    syntax_error: str | None = None
    error_line: int = 0


class GuardFindingKind(StrEnum):
    SILENT_SKIP = "silent-skip"
    SILENT_PASS = "silent-pass"
    EXIT_CODE_DROPPED = "exit-code-dropped"
    NEVER_RUNS = "never-runs"
    DISABLED_BY_SKIP = "disabled-by-skip"
    UNSCHEDULED = "unscheduled"
    UNKNOWN_LABEL = "unknown-label"
    UNPARSABLE = "unparsable"
    DISABLED = "disabled"
    UNDETERMINED = "undetermined"
    UNMAPPED = "unmapped"
    OUT_OF_SCOPE = "out-of-scope"
    UNREGISTERED = "unregistered"
    SKIP_ONLY_REGISTRATION = "skip-only-registration"
    BY_DESIGN_SKIP = "by-design-skip"
    DEAD_REGISTRATION = "dead-registration"


# What each kind means, how loud it is and whether it fails: matrix/core/kinds.py (one entry per kind).
FAILING_KINDS = frozenset(k for k in GuardFindingKind if spec_of(Tool.GUARDS, k.value).fails)


def guard_finding(
    kind: GuardFindingKind,
    *,
    path: str,
    line: int,
    test: str,
    runners: tuple[str, ...] = (),
    guard: str = "",
    reason: str = "",
    hint: str = "",
    tool: Tool = Tool.GUARDS,
) -> Finding:
    """A guard audit finding: `test` is the node id, or the file's path when it concerns the whole file.

    The test becomes the subject (empty for the whole file), the guard's source text the source, the reason the message.
    `tool` is the audit judging (the pytest audit judges with the guard kinds it registers under its own name).
    """
    return Finding(
        tool=tool,
        kind=kind.value,
        subject="" if test == path else test,
        message=reason,
        path=path,
        line=line,
        runners=runners,
        hint=hint,
        source=guard,
    )


def finding_fields(finding: Finding) -> dict[str, object]:
    """A guard finding as the plain JSON values of `specmatrix.guards/1` (test, guard and reason by their own names)."""
    return {
        "kind": finding.kind,
        "path": finding.path,
        "line": finding.line,
        "test": finding.scope,
        "runners": list(finding.runners),
        "guard": finding.source,
        "reason": finding.message,
        "hint": finding.hint,
    }


@dataclass(frozen=True, kw_only=True)
class GuardReport:
    """The audit of one tree: what was read and what was found."""

    root: str
    files_scanned: int
    test_files: int
    registered_files: int
    runners: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.failing)

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.failing else EXIT_OK

    def counts(self) -> dict[GuardFindingKind, int]:
        found = Counter(f.kind for f in self.findings)
        return {kind: found[kind.value] for kind in GuardFindingKind}

    def of_kind(self, kind: GuardFindingKind) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind == kind)
