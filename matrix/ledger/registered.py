"""The edge that reads the suite: which files are registered for which runners, and the static guard findings."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from matrix.core.finding import Finding
from matrix.core.profile import RunnerProfile
from matrix.core.treefiles import TreeFiles
from matrix.guards.finder import TEST_FILE
from matrix.guards.model import FileAnalysis
from matrix.guards.source import read_registrations
from matrix.registered_suite.audit import AuditSettings, SuiteMap, registration_findings
from matrix.registered_suite.tree import audit_tree, list_tree, read_source


@dataclass(frozen=True, kw_only=True)
class RegisteredFile:
    """A file some registration sends to `runners` (relative to the suite root, as the guard audit names it)."""

    path: str
    line: int
    suites: tuple[str, ...]
    runners: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SuiteView:
    root: str
    files: tuple[RegisteredFile, ...]
    static: tuple[Finding, ...]


def registered_files(root: Path, runners: Mapping[str, RunnerProfile], suite_map: SuiteMap) -> tuple[RegisteredFile, ...]:
    """Every file under `root` with a registration that runs on at least one profile (disabled, unscheduled and
    unmapped registrations are left out, exactly as the guard audit leaves them out)."""
    base = root if root.is_dir() else root.parent
    settings = AuditSettings(runners=runners, suite_map=suite_map)
    out: list[RegisteredFile] = []
    with TreeFiles(base) as files:
        for display in list_tree(root).relative:
            found = _registered(display, read_source(files, display), settings)
            if found is not None:
                out.append(found)
    return tuple(out)


def _registered(display: str, text: FileAnalysis | str, settings: AuditSettings) -> RegisteredFile | None:
    """The file's registrations that run on a profile, or None."""
    name = display.rpartition("/")[2]
    if not isinstance(text, str) or (not TEST_FILE.match(name) and "register_" not in text):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the static audit reports it as unparsable
    registrations = read_registrations(tree, text)
    if not registrations:
        return None
    analysis = FileAnalysis(path=display, is_test_file=True, registrations=registrations)
    _, active = registration_findings(analysis, settings)
    if not active:
        return None
    suites = tuple(dict.fromkeys(r.suite for r in registrations if r.suite))
    return RegisteredFile(path=display, line=registrations[0].line, suites=suites, runners=active)


def read_suite(root: Path, runners: Mapping[str, RunnerProfile], suite_map: SuiteMap) -> SuiteView:
    """Registrations plus the static audit of the same tree (its findings settle against what ran)."""
    report = audit_tree(root, runners, suite_map=suite_map)
    return SuiteView(root=report.root, files=registered_files(root, runners, suite_map), static=report.findings)
