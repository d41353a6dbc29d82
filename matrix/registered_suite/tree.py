"""The edge of the guard audit: find and read the files under a path, audit each one, cache the results.

Files are parsed in worker processes (ast work is CPU-bound), and each file's findings are cached by
content hash, so a warm run only reads and hashes the tree.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.errors import UsageError
from matrix.core.finding import Finding
from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import OutsideTreeError, decode_python, read_limited, special_kind
from matrix.core.treefiles import TreeFiles
from matrix.guards.finder import TEST_FILE, analyse_source
from matrix.guards.model import FileAnalysis, GuardFindingKind, GuardReport, guard_finding
from matrix.registered_suite.audit import AuditSettings, FileAudit, SuiteMap, audit_file, check_suite_map, load_suite_map
from matrix.registered_suite.cache import ResultCache, entry_text, file_key, seal, settings_key
from matrix.registered_suite.intent import MatrixIntent

if TYPE_CHECKING:  # the records load with the workflow readers, which a run without workflows never imports
    from matrix.schedule.model import Schedule

# --- the tree ---------------------------------------------------------------------------------------------------------
# The edge of the guard audit: find and read the files under a path, then audit each one.
#
# Files are parsed in worker processes (ast work is CPU-bound), and each file's findings are cached by
# content hash (`matrix.registered_suite.cache`), so a warm run only reads and hashes the tree.

_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
# Below this many files to parse, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 48


# sglang's largest registered test file is about 200 KB (test/registered/unit/function_call/test_function_call_parser.py,
# main of 2026-07); a bigger one is an unparsable finding, so parsing one file stays within about a second.
MAX_SOURCE_BYTES = 512 * 1024
MAX_JOBS = 64  # worker processes; more only cost memory


@dataclass(frozen=True, kw_only=True)
class TreeListing:
    """The .py files under a root, and the symlinked folders the walk did not enter (a loop or an escape).

    `paths` holds each file's path as the walk spelled it, `relative` its path below the root, `/`-separated (the
    file's own name for a file root); `files` makes `Path`s of them when asked (an audit reads by the strings)."""

    paths: tuple[str, ...]
    linked_dirs: tuple[str, ...] = ()
    relative: tuple[str, ...] = ()
    # Files that are symlinks (by their walk path): read only when the target lies inside the root.
    linked_files: frozenset[str] = frozenset()

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(Path(p) for p in self.paths)


def check_root(path: Path, what: str = "") -> None:
    """A root to read must be a folder or a regular file: a FIFO, a device or a socket is refused by name."""
    label = f"{what}{path}"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{label}: no such file or directory") from None
    except OSError as exc:
        raise UsageError(f"{label}: cannot read: {exc.strerror or exc}") from None
    kind = special_kind(st.st_mode)
    if kind is not None and kind != "a directory":
        raise UsageError(f"{label}: is {kind}, not a folder or a Python file")


def list_tree(root: Path) -> TreeListing:
    """Every .py file under `root` (or `root` itself), skipping hidden and cache folders, sorted.

    The walk keeps a stack of folders (no recursion, however deep the tree) and reads each one with one
    `os.scandir`, whose entries know their type without a `stat` per file. A folder it cannot read is left out,
    as `os.walk` leaves it; a symlinked folder is not entered but named in `linked_dirs`."""
    if root.is_file():
        return TreeListing(paths=(str(root),), relative=(root.name,))
    found: list[tuple[tuple[str, ...], str]] = []
    linked: list[str] = []
    linked_files: set[str] = set()
    stack: list[tuple[str, tuple[str, ...]]] = [(os.fspath(root), ())]
    while stack:
        folder, parts = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False  # as os.walk counts it
            if is_dir:
                if name.startswith(".") or name in _SKIPPED_DIRS:
                    continue
                if entry.is_symlink():
                    linked.append("/".join((*parts, name)))
                else:
                    stack.append((entry.path, (*parts, name)))
            elif name.endswith(".py") and entry.is_file():
                found.append(((*parts, name), entry.path))
                if entry.is_symlink():
                    linked_files.add(entry.path)
    found.sort()  # by path components, as Path sorts
    return TreeListing(
        paths=tuple(path for _, path in found),
        linked_dirs=tuple(sorted(linked)),
        relative=tuple("/".join(parts) for parts, _ in found),
        linked_files=frozenset(linked_files),
    )


def python_files(root: Path) -> list[Path]:
    """Every .py file under `root` (or `root` itself), skipping hidden and cache folders, sorted."""
    return list(list_tree(root).files)


def tree_inputs(root: Path, targets: Iterable[Path | None]) -> tuple[Path, ...]:
    """The files under `root` an audit reads that one of `targets` would land on (the tree is walked only then)."""
    base = root.resolve()
    near = [t for t in targets if t is not None and (t.resolve() == base or base in t.resolve().parents)]
    if not near:
        return ()
    listing = list_tree(root)
    return tuple(f for f in listing.files if any(f.resolve() == t.resolve() for t in near))


def nothing_read(root: Path, listing: TreeListing) -> UsageError:
    """The error for a root under which no Python file was read: 0 files is never a clean audit."""
    why = ""
    if listing.linked_dirs:
        shown = ", ".join(listing.linked_dirs[:3]) + (
            f" and {len(listing.linked_dirs) - 3} more" if len(listing.linked_dirs) > 3 else ""
        )
        why = f"; symlinked folders are not followed ({shown}): name the link's target instead"
    return UsageError(f"{root}: no Python file read (0 files){why}")


def read_file(path: Path | str) -> bytes:
    """An audited file's bytes, at most MAX_SOURCE_BYTES + 1 (a FIFO or device planted in the tree is refused)."""
    return read_limited(path, MAX_SOURCE_BYTES)


def unreadable(display: str, exc: OSError) -> FileAnalysis:
    return FileAnalysis(path=display, is_test_file=True, syntax_error=f"cannot read: {exc.strerror or exc}", error_line=1)


def outside_tree(display: str) -> FileAnalysis:
    problem = "a symlink to a file outside the audited tree; not read"
    return FileAnalysis(path=display, is_test_file=True, syntax_error=problem, error_line=1)


def read_source(tree: TreeFiles, display: str) -> FileAnalysis | str:
    """The text of the tree's file `display` as Python decodes it, or an unparsable analysis when it cannot be read
    (a link outside the tree included) or decoded."""
    try:
        return decode_source(tree.read(display, MAX_SOURCE_BYTES), display)
    except OutsideTreeError:
        return outside_tree(display)
    except OSError as exc:
        return unreadable(display, exc)


def decode_source(data: bytes, display: str) -> FileAnalysis | str:
    """The source as Python decodes it (BOM, coding cookie), or an unparsable analysis saying why it cannot be."""
    if len(data) > MAX_SOURCE_BYTES:
        problem = f"larger than {MAX_SOURCE_BYTES // 1024} KiB; not audited"
        return FileAnalysis(path=display, is_test_file=True, syntax_error=problem, error_line=1)
    try:
        return decode_python(data)
    except UnicodeDecodeError as exc:
        encoding = "UTF-8" if exc.encoding.lower().replace("_", "-").startswith("utf-8") else exc.encoding
        problem = f"not {encoding} text ({exc.reason} at byte {exc.start})"
    except (SyntaxError, ValueError) as exc:
        # detect_encoding refuses a first line that is not UTF-8 before any cookie is seen: name the byte then.
        try:
            data.decode("utf-8")
            problem = f"undecodable source ({getattr(exc, 'msg', None) or exc})"
        except UnicodeDecodeError as bad:
            problem = f"not UTF-8 text ({bad.reason} at byte {bad.start})"
    return FileAnalysis(path=display, is_test_file=True, syntax_error=problem, error_line=1)


def wanted(name: str, data: bytes) -> bool:
    """Only test-named files and files that register matter; the rest are not parsed."""
    return TEST_FILE.match(name) is not None or b"register_" in data


def audit_source(display: str, data: bytes, settings: AuditSettings) -> FileAudit:
    """One file's findings; a file that exhausts the interpreter's recursion is a finding, never a crash."""
    source = decode_source(data, display)
    try:
        analysis = analyse_source(display, source) if isinstance(source, str) else source
        return audit_file(analysis, settings, source if isinstance(source, str) else None)
    except RecursionError:
        finding = guard_finding(
            GuardFindingKind.UNDETERMINED,
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


# One file to audit: its display path, its bytes (as hashed for the cache key) and that key, or "" when the
# results are not cached (nothing to seal).
_Job = tuple[str, bytes, str]


def _audit_in_worker(chunk: list[_Job]) -> list[tuple[FileAudit, tuple[str, str] | None]]:
    """Audit a chunk of files; each result comes with its cache entry's text and seal, so the main process only
    stores them."""
    assert _WORKER_SETTINGS is not None
    out: list[tuple[FileAudit, tuple[str, str] | None]] = []
    for display, data, key in chunk:
        audit = audit_source(display, data, _WORKER_SETTINGS)
        if key:
            text = entry_text(audit)
            out.append((audit, (text, seal(key, text))))
        else:
            out.append((audit, None))
    return out


def default_jobs() -> int:
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


class _Misses:
    """The files the cache does not answer, audited as they are found.

    Once `PARALLEL_THRESHOLD` files miss (and `workers` > 1), worker processes start and take the misses in
    small chunks while the main process is still reading and hashing the rest of the tree; below that, the
    files are audited in this process when the listing ends. Results come back in the order files were added."""

    def __init__(self, settings: AuditSettings, workers: int, sealed: bool):
        self.settings = settings
        self.workers = workers
        self.sealed = sealed
        # Small chunks: a worker on a core that other work shares takes fewer of them, instead of holding a
        # quarter of the tree while the other worker idles.
        self.chunk = max(1, min(8, PARALLEL_THRESHOLD // max(1, workers)))
        self.pending: list[_Job] = []
        self.keys: list[tuple[str, str]] = []  # (display, key) of every miss, in order
        self.futures: list[Any] = []
        self.pool: Any = None

    def add(self, display: str, data: bytes, key: str) -> None:
        self.pending.append((display, data, key if self.sealed else ""))
        self.keys.append((display, key))
        if self.pool is None and (self.workers < 2 or len(self.pending) < PARALLEL_THRESHOLD):
            return
        if self.pool is None:
            self.pool = _start_pool(self.settings, self.workers)
        while len(self.pending) >= self.chunk:
            self._submit(self.pending[: self.chunk])
            del self.pending[: self.chunk]

    def __enter__(self) -> _Misses:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            # On an error or an interrupt the chunks not started are dropped, not audited.
            self.pool.shutdown(cancel_futures=exc[0] is not None)

    def _submit(self, chunk: list[_Job]) -> None:
        self.futures.append(self.pool.submit(_audit_in_worker, chunk))

    def results(self) -> Iterator[tuple[str, str, FileAudit, tuple[str, str] | None]]:
        """(display, key, audit, (entry text, seal)) of every miss; the last is None when this process audited the
        file (or nothing is cached)."""
        if self.pool is None:
            audits = [(audit_source(display, data, self.settings), None) for display, data, _ in self.pending]
        else:
            if self.pending:
                self._submit(self.pending)
            audits = [result for future in self.futures for result in future.result()]
        self.pending = []
        for (display, key), (audit, sealed) in zip(self.keys, audits, strict=True):
            yield display, key, audit, sealed


def _start_pool(settings: AuditSettings, workers: int) -> Any:
    # Imported here: a warm run (every file cached) starts no worker and need not load them.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    # fork starts workers without re-importing the package; elsewhere the platform default is used.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(settings,))


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
    intent: MatrixIntent | None = None,
) -> GuardReport:
    """Audit every registered test file under `path` on the given runner profiles; nothing is imported."""
    check_root(path)
    if not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs {jobs}: give 1 to {MAX_JOBS} worker processes")
    if only_runners:
        from matrix.core.machine import find_runner  # only a run that names runners looks them up by name

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
        # The built-in matrix unless told otherwise: it is read only when a skip is judged.
        intent=intent if intent is not None else MatrixIntent.from_paths(),
    )
    base = path if path.is_dir() else path.parent
    cache = ResultCache(cache_dir, settings_key(settings) if cache_dir is not None else None)
    results: dict[str, FileAudit | None] = {}
    listing = list_tree(path)
    files = listing.paths
    if not files:
        raise nothing_read(path, listing)
    with _collector_paused(), _Misses(settings, jobs, sealed=cache.path is not None) as misses, TreeFiles(base) as tree:
        for display in listing.relative:
            try:
                # Walked from the root's descriptor: a link (or a folder swapped for one since the listing) whose
                # target lies outside the root is refused by its path in the tree.
                data = tree.read(display, MAX_SOURCE_BYTES)
            except OutsideTreeError:
                results[display] = audit_file(outside_tree(display), settings)
                continue
            except OSError as exc:
                results[display] = audit_file(unreadable(display, exc), settings)
                continue
            if not wanted(display.rpartition("/")[2], data):
                results[display] = None
                continue
            key = file_key(display, data)
            hit, audit = cache.get(key, display)
            if hit:
                results[display] = audit
            else:
                results[display] = None  # keeps the listing's order; the audit lands below
                misses.add(display, data, key)
        for display, key, fresh, sealed in misses.results():
            results[display] = fresh
            cache.put(key, fresh, sealed)
    cache.save()
    return _report(base, len(files), results, runners)


def _report(
    base: Path, scanned: int, results: Mapping[str, FileAudit | None], runners: Mapping[str, RunnerProfile]
) -> GuardReport:
    findings: list[Finding] = []
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
