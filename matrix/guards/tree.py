"""The edge of the guard audit: find and read the files under a path, then audit each one.

Files are parsed in worker processes (ast work is CPU-bound), and each file's findings are cached by
content hash (`matrix.guards.cache`), so a warm run only reads and hashes the tree.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from matrix.core.errors import UsageError
from matrix.core.machine import find_runner
from matrix.core.model import RunnerProfile
from matrix.guards.audit import AuditSettings, FileAudit, audit_file
from matrix.guards.cache import ResultCache, file_key, settings_key
from matrix.guards.finder import TEST_FILE, analyse_source
from matrix.guards.model import FileAnalysis, GuardFinding, GuardFindingKind, GuardReport
from matrix.guards.suites import SuiteMap, check_suite_map, load_suite_map
from matrix.schedule.model import Schedule

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
# Below this many files to parse, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 48


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
        return decode_source(path.read_bytes(), display)
    except OSError as exc:
        return FileAnalysis(path=display, is_test_file=True, syntax_error=f"cannot read: {exc.strerror}", error_line=1)


def decode_source(data: bytes, display: str) -> FileAnalysis | str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FileAnalysis(path=display, is_test_file=True, syntax_error=f"not UTF-8 text ({exc.reason})", error_line=1)


def wanted(name: str, data: bytes) -> bool:
    """Only test-named files and files that register matter; the rest are not parsed."""
    return TEST_FILE.match(name) is not None or b"register_" in data


def audit_source(display: str, data: bytes, settings: AuditSettings) -> FileAudit:
    """One file's findings; a file that exhausts the interpreter's recursion is a finding, never a crash."""
    source = decode_source(data, display)
    try:
        analysis = analyse_source(display, source) if isinstance(source, str) else source
        return audit_file(analysis, settings)
    except RecursionError:
        finding = GuardFinding(
            kind=GuardFindingKind.UNDETERMINED,
            path=display,
            line=1,
            test=display,
            reason="the file is nested too deeply to audit within the recursion budget",
        )
        return FileAudit(findings=(finding,), registered=False, runners=())


_WORKER_SETTINGS: AuditSettings | None = None


def _init_worker(settings: AuditSettings) -> None:
    global _WORKER_SETTINGS  # noqa: PLW0603 - one settings object per worker process, sent once
    _WORKER_SETTINGS = settings
    gc.disable()  # see _collector_paused; a worker lives for one audit


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Parsing allocates millions of acyclic AST nodes; the cyclic collector's passes over them cost about
    a fifth of an audit and free nothing (reference counting does), so it is paused while files are audited."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _audit_in_worker(job: tuple[str, str]) -> FileAudit:
    display, path = job
    assert _WORKER_SETTINGS is not None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        analysis = FileAnalysis(path=display, is_test_file=True, syntax_error=f"cannot read: {exc.strerror}", error_line=1)
        return audit_file(analysis, _WORKER_SETTINGS)
    return audit_source(display, data, _WORKER_SETTINGS)


def default_jobs() -> int:
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _run_parallel(jobs: list[tuple[str, str]], settings: AuditSettings, workers: int) -> list[FileAudit]:
    methods = multiprocessing.get_all_start_methods()
    # fork starts workers without re-importing the package; elsewhere the platform default is used.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    # Small chunks: a worker on a core that other work shares takes fewer of them, instead of holding a
    # quarter of the tree while the other worker idles.
    chunk = max(1, min(8, len(jobs) // (workers * 8)))
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(settings,)) as pool:
        return list(pool.map(_audit_in_worker, jobs, chunksize=chunk))


def audit_tree(
    path: Path,
    runners: Mapping[str, RunnerProfile],
    *,
    suite_map: SuiteMap | None = None,
    known_suites: frozenset[str] | None = None,
    only_runners: Sequence[str] = (),
    installed: Iterable[str] = (),
    schedule: Schedule | None = None,
    jobs: int = 1,
    cache_dir: Path | None = None,
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
        schedule=schedule,
    )
    base = path if path.is_dir() else path.parent
    cache = ResultCache(cache_dir, settings_key(settings) if cache_dir is not None else None)
    results: dict[str, FileAudit | None] = {}
    misses: list[tuple[str, str, str, bytes]] = []
    files = python_files(path)
    for file in files:
        display = file.relative_to(base).as_posix()
        try:
            data = file.read_bytes()
        except OSError as exc:
            results[display] = audit_file(
                FileAnalysis(path=display, is_test_file=True, syntax_error=f"cannot read: {exc.strerror}", error_line=1), settings
            )
            continue
        if not wanted(file.name, data):
            results[display] = None
            continue
        key = file_key(display, data)
        hit, audit = cache.get(key)
        if hit:
            results[display] = audit
        else:
            misses.append((display, str(file), key, data))
    with _collector_paused():
        if jobs > 1 and len(misses) >= PARALLEL_THRESHOLD:
            done = _run_parallel([(display, name) for display, name, _, _ in misses], settings, jobs)
        else:
            done = [audit_source(display, data, settings) for display, _, _, data in misses]
    for (display, _, key, _), audit in zip(misses, done, strict=True):
        results[display] = audit
        cache.put(key, audit)
    cache.save()
    return _report(base, len(files), results, runners)


def _report(
    base: Path, scanned: int, results: Mapping[str, FileAudit | None], runners: Mapping[str, RunnerProfile]
) -> GuardReport:
    findings: list[GuardFinding] = []
    audited: set[str] = set()
    tests = registered = 0
    for display in sorted(results):
        result = results[display]
        if result is None:
            continue
        tests += 1
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
