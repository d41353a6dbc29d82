"""The edge of the guard audit: find and read the files under a path, audit each one, cache the results.

Files are parsed in worker processes (ast work is CPU-bound), and each file's findings are cached by
content hash, so a warm run only reads and hashes the tree.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import OutputError, UsageError
from matrix.core.finding import Finding
from matrix.core.jsonio import canonical, seal_text
from matrix.core.machine import find_runner
from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import decode_python, read_limited, special_kind
from matrix.guards.audit import AuditSettings, FileAudit, SuiteMap, audit_file, check_suite_map, load_suite_map
from matrix.guards.finder import TEST_FILE, analyse_source
from matrix.guards.model import FileAnalysis, GuardFindingKind, GuardReport, finding_fields, guard_finding
from matrix.guards.predicates import PREDICATES

if TYPE_CHECKING:  # the records load with the workflow readers, which a run without workflows never imports
    from matrix.schedule.model import Schedule

# --- the results cache ------------------------------------------------------------------------------------------------
# Per-file results cache keyed by content hash, so an unchanged tree is audited in a fraction of a second.
#
# One JSON file per combination of settings (runner profiles, suite map, workflows, installed modules) and of
# this package's own source, so a change to either starts a fresh cache. Entries are keyed by the file's path
# and a SHA-256 of its bytes, and sealed with a digest of that key and their content; each is checked against
# the schema when read, so an edited or malformed entry is a miss, never a verdict. Only the files of the latest
# run are kept. The cache is an optimisation: a
# missing, unreadable or malformed cache file is ignored, and a failed write never fails the audit.

# /3: entries hold core `Finding` fields (subject, source, message); a /2 file is a clean miss.
# /4: an entry holds its audit as the canonical JSON text the seal is taken over, so a warm run checks a seal by
# hashing that text rather than writing the audit out again; a /3 file is a clean miss.
CACHE_SCHEMA = "specmatrix.guards-cache/4"
ENV_VAR = "SPECMATRIX_CACHE_DIR"
MAX_CACHE_BYTES = 32 * 1024 * 1024  # one entry per audited file, about 1 KB each: sglang's tree is a few MB
_PACKAGE = Path(__file__).parent


def default_cache_dir(env: Mapping[str, str]) -> Path:
    """$SPECMATRIX_CACHE_DIR, else $XDG_CACHE_HOME/specmatrix, else ~/.cache/specmatrix."""
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "specmatrix"


def settings_key(settings: AuditSettings) -> str | None:
    """A hash of everything besides the file that decides its findings; None when that cannot be hashed."""
    if settings.predicates is not PREDICATES:
        return None  # a custom predicate table (tests) has no stable identity
    code = hashlib.sha256()
    for path in sorted(_PACKAGE.glob("*.py")):
        code.update(path.read_bytes())
    # A schedule from the schedule cache is keyed by the digest of the CI files it was read from (its content
    # follows from them); any other by its repr (sglang's 600 entries: 10 ms of repr and hashing a run).
    known = None
    if settings.schedule is not None:
        from matrix.schedule.cache import fingerprint  # imported only by a run with a schedule

        known = fingerprint(settings.schedule)
    parts = (
        sorted((name, repr(p)) for name, p in settings.runners.items()),
        repr(settings.suite_map),
        sorted(settings.known_suites) if settings.known_suites is not None else None,
        settings.only_runners,
        sorted(settings.installed),
        f"read from CI files {known}" if known is not None else repr(settings.schedule),
        code.hexdigest(),
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def file_key(display: str, data: bytes) -> str:
    return hashlib.sha256(display.encode() + b"\0" + data).hexdigest()


def encode(audit: FileAudit | None) -> Any:
    """An entry: the findings as the report writes them (`finding_fields`; tool and severity follow from the kind)."""
    if audit is None:
        return None
    return {
        "findings": [finding_fields(f) for f in audit.findings],
        "registered": audit.registered,
        "runners": list(audit.runners),
    }


def entry_text(audit: FileAudit | None) -> str:
    """The text an entry stores: `encode(audit)` as canonical JSON."""
    return canonical(encode(audit))


def seal(key: str, text: str) -> str:
    """A digest of an entry's text bound to its file key: an entry edited by hand, or moved to another key, no longer matches."""
    return seal_text(CACHE_SCHEMA, key, text)


class BadEntry(Exception):
    """A cache entry that does not match the schema; the file is audited again."""


_FINDING_TEXT = ("path", "test", "guard", "reason", "hint")
_FINDING_KEYS = frozenset({"kind", "line", "runners", *_FINDING_TEXT})
_AUDIT_KEYS = frozenset({"findings", "registered", "runners"})
MAX_ENTRY_FINDINGS = 100_000
_KINDS = {kind.value: kind for kind in GuardFindingKind}


def _names(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise BadEntry(f"{where} must be a list of strings")
    return tuple(raw)


def _finding(raw: Any, display: str) -> Finding:
    if not isinstance(raw, dict) or raw.keys() != _FINDING_KEYS:
        raise BadEntry("a finding must be an object with exactly " + ", ".join(sorted(_FINDING_KEYS)))
    for name in _FINDING_TEXT:
        if not isinstance(raw[name], str):
            raise BadEntry(f"finding {name!r} must be a string")
    line = raw["line"]
    if isinstance(line, bool) or not isinstance(line, int) or not 0 <= line < 2**31:
        raise BadEntry("finding 'line' must be a non-negative integer")
    if raw["path"] != display:
        raise BadEntry("a finding of another file")
    kind = _KINDS.get(raw["kind"])
    if kind is None:
        raise BadEntry(f"unknown finding kind {raw['kind']!r}")
    return guard_finding(
        kind,
        path=raw["path"],
        line=line,
        test=raw["test"],
        runners=_names(raw["runners"], "finding 'runners'"),
        guard=raw["guard"],
        reason=raw["reason"],
        hint=raw["hint"],
    )


def decode(raw: Any, display: str) -> FileAudit | None:
    """An entry checked against the schema field by field; anything else raises `BadEntry`."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.keys() != _AUDIT_KEYS:
        raise BadEntry("an entry must be null or an object with findings, registered and runners")
    findings = raw["findings"]
    if not isinstance(findings, list) or len(findings) > MAX_ENTRY_FINDINGS:
        raise BadEntry("'findings' must be a list")
    if not isinstance(raw["registered"], bool):
        raise BadEntry("'registered' must be true or false")
    return FileAudit(
        findings=tuple(_finding(f, display) for f in findings),
        registered=raw["registered"],
        runners=_names(raw["runners"], "'runners'"),
    )


class ResultCache:
    """Load once, look up by file key, save the entries of this run.

    Each entry is `{"seal": ..., "audit": TEXT}`, TEXT being the audit as canonical JSON (`entry_text`); an entry
    whose seal does not match its key and text, whose text is not JSON, or whose content does not match the schema,
    is a miss: the file is audited again and the entry rewritten.
    """

    def __init__(self, folder: Path | None, key: str | None):
        self.path = folder / f"guards-{key}.json" if folder is not None and key is not None else None
        self.old: dict[str, Any] = {}
        self.new: dict[str, Any] = {}
        if self.path is not None:
            self.old = self._load(self.path)

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            data = read_limited(path, MAX_CACHE_BYTES)
            if len(data) > MAX_CACHE_BYTES:
                return {}
            doc = json.loads(data)
        except (OSError, ValueError, RecursionError):
            return {}
        files = doc.get("files") if isinstance(doc, dict) and doc.get("schema") == CACHE_SCHEMA else None
        return files if isinstance(files, dict) else {}

    def get(self, key: str, display: str) -> tuple[bool, FileAudit | None]:
        """(hit, audit); an entry that is unsealed, edited or off-schema is a miss."""
        entry = self.old.get(key)
        if not isinstance(entry, dict) or set(entry) != {"seal", "audit"}:
            return False, None
        text = entry["audit"]
        if not isinstance(text, str) or entry["seal"] != seal(key, text):
            return False, None
        try:
            audit = decode(json.loads(text), display)
        except (BadEntry, ValueError, RecursionError):
            return False, None
        self.new[key] = entry
        return True, audit

    def put(self, key: str, audit: FileAudit | None, sealed: tuple[str, str] | None = None) -> None:
        """Store an entry; `sealed` is (text, seal) when a worker already wrote them (`entry_text`, `seal`)."""
        if self.path is not None:
            if sealed is None:
                text = entry_text(audit)
                sealed = (text, seal(key, text))
            self.new[key] = {"seal": sealed[1], "audit": sealed[0]}

    def save(self) -> None:
        if self.path is None or self.new == self.old:
            return
        # A read-only or full cache folder costs speed, never the audit.
        with contextlib.suppress(OutputError):
            write_text_atomic(self.path, json.dumps({"schema": CACHE_SCHEMA, "files": self.new}, separators=(",", ":")))


def cache_folder(option: Path | None, disabled: bool, env: Mapping[str, str] | None = None) -> Path | None:
    if disabled:
        return None
    return option if option is not None else default_cache_dir(os.environ if env is None else env)


# --- the tree ---------------------------------------------------------------------------------------------------------
# The edge of the guard audit: find and read the files under a path, then audit each one.
#
# Files are parsed in worker processes (ast work is CPU-bound), and each file's findings are cached by
# content hash (`matrix.guards.tree`), so a warm run only reads and hashes the tree.

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
    found.sort()  # by path components, as Path sorts
    return TreeListing(
        paths=tuple(path for _, path in found),
        linked_dirs=tuple(sorted(linked)),
        relative=tuple("/".join(parts) for parts, _ in found),
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


def read_source(path: Path, display: str) -> FileAnalysis | str:
    """The file's text as Python decodes it, or an unparsable analysis when it cannot be read or decoded."""
    try:
        return decode_source(read_file(path), display)
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
        return audit_file(analysis, settings)
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
) -> GuardReport:
    """Audit every registered test file under `path` on the given runner profiles; nothing is imported."""
    check_root(path)
    if not 1 <= jobs <= MAX_JOBS:
        raise UsageError(f"--jobs {jobs}: give 1 to {MAX_JOBS} worker processes")
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
    listing = list_tree(path)
    files = listing.paths
    if not files:
        raise nothing_read(path, listing)
    with _collector_paused(), _Misses(settings, jobs, sealed=cache.path is not None) as misses:
        for file, display in zip(files, listing.relative, strict=True):
            try:
                data = read_file(file)
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
