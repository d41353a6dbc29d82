"""One finding record and one registry of finding kinds, shared by every audit (guards, ledger, skip audit, coverage).

A kind is one `KindSpec` entry: its severity, title, help text, SARIF rule text and whether it fails the run. Every
writer (text, JSON, Markdown, GitHub annotations, SARIF) reads the registry; none keeps a table of its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from matrix.core.errors import ConfigError


class Severity(StrEnum):
    """How loud a kind is: errors fail the run, warnings are shown, info only when asked for."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


class Tool(StrEnum):
    """The audit a finding comes from; a kind's name is unique within its tool."""

    GUARDS = "guards"
    LEDGER = "ledger"
    AUDIT = "audit"
    COVERAGE = "coverage"
    PYTEST_AUDIT = "pytest-audit"


@dataclass(frozen=True, kw_only=True)
class KindSpec:
    """Everything the writers say about one kind of finding."""

    tool: Tool
    name: str
    severity: Severity
    title: str  # the heading of its group in text and Markdown
    rule: str  # one sentence: SARIF shortDescription, annotation title context
    help: str  # what it means and how to make it go away (SARIF help, inline)
    fails: bool  # whether an unaccepted finding of this kind fails the run
    label: str = ""  # the word a one-line text listing starts with (default: the name)

    @property
    def key(self) -> tuple[Tool, str]:
        return (self.tool, self.name)

    @property
    def shown_label(self) -> str:
        return self.label or self.name


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One thing an audit found, in the shape every writer reads.

    `path` is relative to the audited root (empty when the finding has no file); `line` 0 means none. `subject`
    may be the file itself (a finding about a whole file): writers then show the path only.
    """

    tool: Tool
    kind: str
    subject: str  # the test, cell, node id, allowlist entry or file the finding is about
    message: str
    path: str = ""
    line: int = 0
    runners: tuple[str, ...] = ()
    hint: str = ""  # what to change so the finding goes away
    detail: str = ""  # supporting evidence shown with the message (the static reason)
    source: str = ""  # the source text the finding points at (a skip guard, a registration call), shown apart
    accepted_by: str = ""  # a baseline or allowlist entry that acknowledges it
    fingerprint: str = ""
    evidence: str = ""  # where the audit read what it judged (a ledger line `FILE:LINE`, an input file)

    @property
    def severity(self) -> Severity:
        """The kind's severity (`KindSpec.severity`): no audit decides it a second time."""
        return (_REGISTRY.get((self.tool, self.kind)) or spec_of(self.tool, self.kind)).severity

    @property
    def spec(self) -> KindSpec:
        return _REGISTRY.get((self.tool, self.kind)) or spec_of(self.tool, self.kind)

    @property
    def failing(self) -> bool:
        # Read for every finding by the gate and each writer: the registry is looked up here, not through `spec`.
        spec = _REGISTRY.get((self.tool, self.kind)) or spec_of(self.tool, self.kind)
        return spec.fails and not self.accepted_by

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.path and self.line else self.path

    @property
    def scope(self) -> str:
        """What the finding is about: its subject, or its file when it concerns the whole file (an empty subject)."""
        return self.subject or self.path


def fingerprint(*parts: str) -> str:
    """A short stable hash of what identifies a finding; line numbers are left out so edits do not churn it."""
    text = "\0".join(parts)
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]


def _build() -> dict[tuple[Tool, str], KindSpec]:
    from matrix.core.kinds import KINDS  # the data imports this module's types; read it on first use

    built: dict[tuple[Tool, str], KindSpec] = {}
    for spec in KINDS:
        if spec.key in built:
            raise ConfigError(f"finding kind {spec.tool.value}/{spec.name} is registered twice")
        built[spec.key] = spec
    return built


_REGISTRY: dict[tuple[Tool, str], KindSpec] = {}


def registry() -> Mapping[tuple[Tool, str], KindSpec]:
    """Every kind, in the order of `matrix.core.kinds.KINDS`."""
    if not _REGISTRY:
        _REGISTRY.update(_build())
    return _REGISTRY


def spec_of(tool: Tool, name: str) -> KindSpec:
    try:
        return registry()[(tool, name)]
    except KeyError:
        raise ConfigError(f"unknown finding kind {tool.value}/{name}") from None


def kinds_of(tool: Tool) -> tuple[KindSpec, ...]:
    """A tool's kinds in registry order (failing kinds first, the order reports list them in)."""
    return tuple(spec for spec in registry().values() if spec.tool is tool)


def worst_first(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; registry order within a severity; stable otherwise."""
    order = {key: i for i, key in enumerate(registry())}
    return sorted(findings, key=lambda f: (not f.failing, f.severity.rank, order.get((f.tool, f.kind), len(order))))
