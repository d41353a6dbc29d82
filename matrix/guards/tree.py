"""The edge of the guard audit: find and read the files under a path, then audit each one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from matrix.core.errors import UsageError
from matrix.core.machine import find_runner
from matrix.core.model import RunnerProfile
from matrix.guards.audit import AuditSettings, audit_file
from matrix.guards.finder import TEST_FILE, analyse_source
from matrix.guards.model import FileAnalysis, GuardFinding, GuardReport
from matrix.guards.suites import SuiteMap, check_suite_map, load_suite_map

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})


def python_files(root: Path) -> list[Path]:
    """Every .py file under `root` (or `root` itself), skipping hidden and cache folders, sorted."""
    if root.is_file():
        return [root]
    found: list[Path] = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        if any(p.startswith(".") or p in _SKIPPED_DIRS for p in parts[:-1]):
            continue
        if path.is_file():
            found.append(path)
    return sorted(found)


def read_source(path: Path, display: str) -> FileAnalysis | str:
    """The file's text, or an unparsable analysis when it cannot be read as UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return FileAnalysis(path=display, is_test_file=True, syntax_error=f"not UTF-8 text ({exc.reason})", error_line=1)
    except OSError as exc:
        return FileAnalysis(path=display, is_test_file=True, syntax_error=f"cannot read: {exc.strerror}", error_line=1)


def audit_tree(
    path: Path,
    runners: Mapping[str, RunnerProfile],
    *,
    suite_map: SuiteMap | None = None,
    known_suites: frozenset[str] | None = None,
    only_runners: Sequence[str] = (),
    installed: Iterable[str] = (),
) -> GuardReport:
    """Audit every registered test file under `path` on the given runner profiles; nothing is imported."""
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    for name in only_runners:
        find_runner(runners, name)
    chosen_map = suite_map if suite_map is not None else load_suite_map()
    check_suite_map(chosen_map, runners)
    settings = AuditSettings(
        runners=runners,
        suite_map=chosen_map,
        known_suites=known_suites,
        only_runners=tuple(only_runners),
        installed=frozenset(installed),
    )
    base = path if path.is_dir() else path.parent
    findings: list[GuardFinding] = []
    audited: set[str] = set()
    scanned = tests = registered = 0
    for file in python_files(path):
        display = file.relative_to(base).as_posix()
        source = read_source(file, display)
        scanned += 1
        if isinstance(source, str):
            # Only test-named files and files that register matter; skip parsing the rest.
            if not TEST_FILE.match(file.name) and "register_" not in source:
                continue
            analysis = analyse_source(display, source)
        else:
            analysis = source
        tests += 1
        result = audit_file(analysis, settings)
        findings.extend(result.findings)
        registered += result.registered
        audited.update(result.runners)
    return GuardReport(
        root=str(base),
        files_scanned=scanned,
        test_files=tests,
        registered_files=registered,
        runners=tuple(name for name in runners if name in audited),
        findings=tuple(findings),
    )
