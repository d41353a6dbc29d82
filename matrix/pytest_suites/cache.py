"""pytest-audit's results cache: what a run read and worked out, kept for the next run that would read the same.

Two kinds of file in the cache folder, both keyed and sealed:

- the frame, `pytest-audit-frame-KEY.json`: the pytest configuration, declared markers, schedule and CI commands
  as pytest reads them, with every file, folder and probe they were read from (`matrix.pytest_suites.recorded`: workflows,
  the scripts, Makefiles and containers their steps run, declared schedule files, pytest's configuration files,
  paths looked for and absent). KEY covers what is not a file: this package's source and data, the Python and
  installed distributions, the runner profiles, the options (`--assume-installed`, the joined runners, the files
  given). A frame whose recorded files all still fingerprint the same is used without reading the CI again; its
  `run` digest covers its values, so a CI edit that reads to the same schedule keeps the entries valid.
- the entries, `pytest-audit-RUN.cache`: per test file, its audit and what that audit read (the file, its conftest
  chain, the helpers its guards and marks were followed into, the paths looked for: `tracked.py`), each with its
  fingerprint; an entry holds while every one of them does and the CI commands it was judged under are the same.
  A conftest.py's parse status is an entry too.

Everything read back is checked (schema line, size, seal, then every value against its record's annotations,
`matrix.pytest_suites.records`): a corrupt, truncated, foreign or oversized file or entry is a miss, never a result and
never a traceback. Files are written by the one atomic writer, so a concurrent run sees a whole file or the
previous one; only the entries of the latest run are kept, and the folder keeps the newest `KEEP_FILES` files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import json
import os
import site
import sys
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import OutputError
from matrix.core.jsonio import canonical, seal_text
from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import read_limited
from matrix.pytest_suites.audit import FileAudit
from matrix.pytest_suites.collect_errors import BrokenFile
from matrix.pytest_suites.config import PytestConfig
from matrix.pytest_suites.invocation import Invocation
from matrix.pytest_suites.recorded import Seen, Status
from matrix.pytest_suites.records import BadRecord, Codec
from matrix.pytest_suites.undetermined import Cause, UndeterminedTest
from matrix.schedule.model import (
    Schedule,
)

SCHEMA = "specmatrix.pytest-audit-cache/3"  # 3: undetermined tests stored compactly (`compact_undetermined`)
FRAME_SCHEMA = "specmatrix.pytest-audit-frame/2"  # 2: the job environment model, hardware, conftest options
MAX_CACHE_BYTES = 64 * 1024 * 1024  # diffusers' 491 test files: about 1 MB of entries
MAX_ENTRY_BYTES = 4 * 1024 * 1024  # one file's entry (its findings and reads); a larger one is not kept
KEEP_FILES = 16  # of each kind; older ones are removed when a run writes
MAX_FOLDER_BYTES = 256 * 1024 * 1024  # all of them together; the oldest go first
_PACKAGE = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, kw_only=True)
class Frame:
    """What the CI files and pytest's configuration say, read once for every test file."""

    config: PytestConfig
    markers: Mapping[str, str]
    schedule: Schedule
    invocations: tuple[Invocation, ...]


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One test file's audit, the fingerprints of what it read, and the CI commands it was judged under."""

    audit: FileAudit | None  # None: a conftest.py's entry (its parse status only)
    reads: Mapping[str, tuple[str, Status | None]]
    invocations: str  # `invocations_digest` of the commands it was audited under
    broken: BrokenFile | None = None  # pytest fails to import it (does not parse, cannot be read)


DISCOVERY = "\0discovery"  # the key of the discovery entry: no file's path holds a NUL byte


@dataclass(frozen=True, kw_only=True)
class Discovery:
    """What pytest's discovery found (`rules.discover_with_conftests`) and the folders and paths it listed and
    probed to find it."""

    paths: tuple[str, ...]
    walked: tuple[str, ...]
    problems: tuple[tuple[str, str], ...]
    seen: tuple[Seen, ...]


def _strings(raw: Any) -> bool:
    return type(raw) is list and all(type(x) is str for x in raw)


class Stored:
    """An entry as read back: what it read and how it was judged, checked; its audit decoded when asked for."""

    def __init__(self, doc: dict[str, Any]):
        reads = doc["reads"]
        if type(reads) is not list:
            raise BadRecord("'reads' must be a list")
        self.raw_reads: list[Any] = reads  # checked as they are compared (`reads_hold`): most are, once
        self.invocations = doc["inv"]
        broken = doc["broken"]
        if type(self.invocations) is not str:
            raise BadRecord("'inv' must be a string")
        if broken is not None and not (
            type(broken) is list
            and len(broken) == 3
            and type(broken[0]) is str
            and type(broken[1]) is int
            and type(broken[2]) is str
        ):
            raise BadRecord("'broken' must be null or [why, line, problem]")
        self.path = doc["path"]
        self.broken = BrokenFile(path=self.path, why=broken[0], line=broken[1], problem=broken[2]) if broken is not None else None
        self.raw_audit = doc["audit"]
        self.raw_undetermined = doc["undet"]

    @property
    def is_conftest(self) -> bool:
        return self.raw_audit is None

    def audit(self) -> FileAudit | None:
        """The stored audit; None when it does not decode to one (then the file is audited again)."""
        try:
            found = CODEC.decode(self.raw_audit, FileAudit)
            if not isinstance(found, FileAudit):
                return None
            return dataclasses.replace(found, undetermined_tests=expand_undetermined(self.raw_undetermined))
        except BadRecord:
            return None

    def reads_hold(self, holds: Callable[[str, str, Status | None], bool]) -> bool:
        """Whether every path the entry read still gives what it gave (`holds(path, fingerprint, status)`); a read
        that is not `[path, fingerprint, status]` holds nothing."""
        for raw in self.raw_reads:
            if type(raw) is not list or len(raw) != 3 or type(raw[0]) is not str or type(raw[1]) is not str:
                return False
            status = raw[2]
            if status is not None:
                if type(status) is not list or len(status) != 4 or not all(type(n) is int for n in status):
                    return False
                status = (status[0], status[1], status[2], status[3])
            if not holds(raw[0], raw[1], status):
                return False
        return True


def compact_undetermined(tests: Sequence[UndeterminedTest]) -> dict[str, list[Any]]:
    """A file's undetermined tests as stored: each distinct (path, reason, cause, runner, runners) once (`k`), and
    per test its node id, line and the index of its kind (`t`). Most of a file's tests share a few reasons, which
    the records written one by one repeat (nine tenths of the cache on a suite of 17,000 tests)."""
    kinds: dict[tuple[str, str, str, str | None, tuple[str, ...]], int] = {}
    rows: list[Any] = []
    for test in tests:
        kind = (test.path, test.reason, test.cause.value, test.runner, test.runners)
        rows.append([test.test, test.line, kinds.setdefault(kind, len(kinds))])
    return {"k": [[path, reason, cause, runner, list(runners)] for path, reason, cause, runner, runners in kinds], "t": rows}


def expand_undetermined(raw: Any) -> tuple[UndeterminedTest, ...]:
    """`compact_undetermined` read back, every value checked (`BadRecord` otherwise)."""
    if type(raw) is not dict or raw.keys() != {"k", "t"} or type(raw["k"]) is not list or type(raw["t"]) is not list:
        raise BadRecord("'undet' must be {k: [...], t: [...]}")
    kinds: list[tuple[str, str, Cause, str | None, tuple[str, ...]]] = []
    for kind in raw["k"]:
        if not (type(kind) is list and len(kind) == 5 and type(kind[0]) is str and type(kind[1]) is str):
            raise BadRecord("an undetermined kind must be [path, reason, cause, runner, runners]")
        if not (type(kind[2]) is str and (kind[3] is None or type(kind[3]) is str) and _strings(kind[4])):
            raise BadRecord("an undetermined kind must be [path, reason, cause, runner, runners]")
        try:
            cause = Cause(kind[2])
        except ValueError:
            raise BadRecord(f"not a cause: {kind[2]!r}") from None
        kinds.append((kind[0], kind[1], cause, kind[3], tuple(kind[4])))
    out: list[UndeterminedTest] = []
    # Every value is checked here, so each record's fields are set as its __init__ would set them, without it: a
    # frozen dataclass's __init__ costs four times as much, a tenth of a warm run on a suite of 17,000 tests.
    new, count = object.__new__, len(kinds)
    for row in raw["t"]:
        if not (type(row) is list and len(row) == 3 and type(row[0]) is str and type(row[1]) is int and type(row[2]) is int):
            raise BadRecord("an undetermined test must be [test, line, kind]")
        if not 0 <= row[2] < count:
            raise BadRecord("an undetermined test names no kind")
        path, reason, cause, runner, runners = kinds[row[2]]
        test = new(UndeterminedTest)
        test.__dict__.update(test=row[0], path=path, line=row[1], runner=runner, reason=reason, cause=cause, runners=runners)
        out.append(test)
    return tuple(out)


def reachable(roots: Iterable[type]) -> tuple[type, ...]:
    """The dataclasses and enums `roots` hold, field by field (annotations followed through unions, tuples,
    mappings): a field type added to a record later is written and read without being listed here."""
    found: dict[type, None] = {}
    todo = list(roots)
    while todo:
        cls = todo.pop()
        if cls in found or not isinstance(cls, type):
            continue
        if issubclass(cls, enum.Enum):
            found[cls] = None
        elif dataclasses.is_dataclass(cls):
            found[cls] = None
            todo.extend(_types_in(typing.get_type_hints(cls).values()))
    return tuple(found)


def _types_in(hints: Iterable[Any]) -> list[type]:
    out: list[type] = []
    for hint in hints:
        args = typing.get_args(hint)
        if args:
            out.extend(_types_in(args))
        elif isinstance(hint, type):
            out.append(hint)
    return out


CODEC = Codec(reachable((Frame, FileAudit)))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def tool_key(package: Path | None = None) -> str:
    """This package's files (source and data), the Python running it and the distributions installed beside it."""
    package = package or _PACKAGE
    digest = hashlib.sha256(sys.version.encode())
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, package).encode() + b"\0")
            with contextlib.suppress(OSError), open(path, "rb") as handle:
                digest.update(handle.read())
    installed: list[str] = []
    for folder in site.getsitepackages():
        with contextlib.suppress(OSError):
            installed.extend(n for n in os.listdir(folder) if n.endswith(".dist-info"))
    digest.update("\0".join(sorted(installed)).encode())
    return digest.hexdigest()[:32]


def frame_key(
    tool: str,
    root: Path,
    profiles: Mapping[str, RunnerProfile],
    *,
    schedule_files: Iterable[Path],
    buildkite_files: Iterable[Path],
    workflows: bool,
    installed: Iterable[str],
    join: Iterable[str],
) -> str:
    """Everything the frame and every entry depend on that is not a file the run reads."""
    return _digest(
        FRAME_SCHEMA,
        tool,
        str(root.resolve()),
        repr(sorted((name, repr(p)) for name, p in profiles.items())),
        repr([str(p.resolve()) for p in schedule_files]),
        repr([str(p.resolve()) for p in buildkite_files]),
        repr(workflows),
        repr(sorted(installed)),
        repr(tuple(join)),
    )


def invocations_digest(invocations: Iterable[Invocation]) -> str:
    return _digest(canonical(CODEC.encode(tuple(invocations))))


def file_key(path: str) -> str:
    return _digest("file", path)


class ResultCache:
    """The cache folder as one run uses it: its frame, then its entries (`open_entries`), saved at the end."""

    def __init__(self, folder: Path, key: str):
        self.folder = folder
        self.key = key
        self.run = ""
        self.old: dict[str, tuple[str, str]] = {}
        self.new: dict[str, tuple[str, str]] = {}

    # --- the frame --------------------------------------------------------------------------------------------------

    @property
    def frame_path(self) -> Path:
        return self.folder / f"pytest-audit-frame-{self.key}.json"

    def load_frame(self) -> tuple[Frame, tuple[Seen, ...], str] | None:
        """(frame, what it was read from, its run digest) as stored, whatever the files say now; None when absent
        or not trusted."""
        try:
            data = read_limited(self.frame_path, MAX_CACHE_BYTES)
        except OSError:
            return None
        head, newline, body = data.partition(b"\n")
        try:
            header = json.loads(head)
            text = body.decode("ascii")
            if not newline or len(data) > MAX_CACHE_BYTES or not isinstance(header, dict):
                return None
            if header.get("schema") != FRAME_SCHEMA or header.get("seal") != seal_text(FRAME_SCHEMA, self.key, text):
                return None
            doc = json.loads(text)
            frame = CODEC.decode(doc["frame"], Frame)
            seen = tuple(_seen(item) for item in doc["seen"])
            run = doc["run"]
            if not isinstance(run, str):
                return None
        except (ValueError, KeyError, TypeError, RecursionError, BadRecord):
            return None
        return frame, seen, run

    def save_frame(self, frame: Frame, seen: tuple[Seen, ...]) -> str | None:
        """Store a frame read now; its run digest, or None when it cannot be stored (it holds a value the codec
        does not write)."""
        try:
            encoded = CODEC.encode(frame)
        except TypeError:
            return None
        run = _digest(self.key, canonical(encoded))
        doc = {"frame": encoded, "seen": [[s.path, s.listed, s.fingerprint, s.status, s.opened] for s in seen], "run": run}
        text = canonical(doc)
        if len(text) <= MAX_CACHE_BYTES:
            header = canonical({"schema": FRAME_SCHEMA, "seal": seal_text(FRAME_SCHEMA, self.key, text)})
            self._write(self.frame_path, header + "\n" + text)
        return run

    # --- the entries ------------------------------------------------------------------------------------------------

    @property
    def entries_path(self) -> Path:
        return self.folder / f"pytest-audit-{self.run}.cache"

    def open_entries(self, run: str) -> None:
        """Read the entries of the run digest `run` ("": none are kept, the frame could not be)."""
        self.run = run
        if not run:
            return
        try:
            data = read_limited(self.entries_path, MAX_CACHE_BYTES)
        except OSError:
            return
        if len(data) <= MAX_CACHE_BYTES:
            self.old = parse_entries(data)

    def get(self, path: str) -> Stored | None:
        """The stored entry of a test file (or conftest), checked; None when there is none that can be trusted.
        Whether what it read is unchanged is the caller's question."""
        key = file_key(path)
        found = self.old.get(key)
        if found is None or found[0] != seal_text(SCHEMA, f"{self.run}:{key}", found[1]):
            return None
        try:
            doc = json.loads(found[1])
            if type(doc) is not dict or doc.get("path") != path:
                return None
            return Stored(doc)
        except (ValueError, KeyError, TypeError, RecursionError, BadRecord):
            return None

    def get_discovery(self, named: Sequence[str]) -> Discovery | None:
        """The test files and conftest.py files an earlier run of this frame found for the same paths, with what that
        walk listed and probed; None when there is none that can be trusted. Whether the folders are unchanged is the
        caller's question."""
        key = file_key(DISCOVERY)
        found = self.old.get(key)
        if found is None or found[0] != seal_text(SCHEMA, f"{self.run}:{key}", found[1]):
            return None
        try:
            doc = json.loads(found[1])
            if type(doc) is not dict or doc.get("path") != DISCOVERY or doc.get("named") != list(named):
                return None
            paths, walked, problems = doc["paths"], doc["walked"], doc["problems"]
            if not (_strings(paths) and _strings(walked) and type(problems) is list):
                return None
            if not all(type(p) is list and len(p) == 2 and _strings(p) for p in problems):
                return None
            seen = tuple(_seen(item) for item in doc["seen"])
        except (ValueError, KeyError, TypeError, RecursionError, BadRecord):
            return None
        return Discovery(paths=tuple(paths), walked=tuple(walked), problems=tuple((p[0], p[1]) for p in problems), seen=seen)

    def put_discovery(self, named: Sequence[str], found: Discovery) -> None:
        doc = {
            "path": DISCOVERY,
            "named": list(named),
            "paths": list(found.paths),
            "walked": list(found.walked),
            "problems": [list(p) for p in found.problems],
            "seen": [[s.path, s.listed, s.fingerprint, s.status, s.opened] for s in found.seen],
        }
        text = canonical(doc)
        key = file_key(DISCOVERY)
        if len(text) <= MAX_ENTRY_BYTES:
            self.new[key] = (seal_text(SCHEMA, f"{self.run}:{key}", text), text)

    def keep(self, path: str) -> None:
        """The stored entry still holds: write it again as it is."""
        key = file_key(path)
        if key in self.old:
            self.new[key] = self.old[key]

    def put(self, path: str, entry: Entry) -> None:
        key = file_key(path)
        reads = [[p, printed, list(status) if status is not None else None] for p, (printed, status) in entry.reads.items()]
        broken = [entry.broken.why, entry.broken.line, entry.broken.problem] if entry.broken is not None else None
        tests = entry.audit.undetermined_tests if entry.audit is not None else ()
        try:
            audit = CODEC.encode(dataclasses.replace(entry.audit, undetermined_tests=())) if entry.audit is not None else None
        except TypeError:
            return  # a value the codec does not write: audited again next time
        doc = {"path": path, "reads": reads, "inv": entry.invocations, "broken": broken, "audit": audit}
        text = canonical({**doc, "undet": compact_undetermined(tests)})
        if len(text) <= MAX_ENTRY_BYTES:
            self.new[key] = (seal_text(SCHEMA, f"{self.run}:{key}", text), text)

    def save(self) -> None:
        if not self.run:
            return
        if self.new != self.old:
            text = SCHEMA + "\n" + "".join(f"{key} {sealed} {body}\n" for key, (sealed, body) in sorted(self.new.items()))
            if len(text) <= MAX_CACHE_BYTES:
                self._write(self.entries_path, text)
        else:
            with contextlib.suppress(OSError):
                os.utime(self.entries_path)  # used: the newest are the ones kept
        self._evict()

    def _write(self, path: Path, text: str) -> None:
        with contextlib.suppress(OutputError):  # a read-only or full cache folder costs speed, never the audit
            write_text_atomic(path, text)

    def _evict(self) -> None:
        """Keep the newest KEEP_FILES frames and KEEP_FILES entry files (by modification time), and of those the
        newest that together hold at most MAX_FOLDER_BYTES (the ones this run used are the newest)."""
        kept: list[tuple[int, int, Path]] = []
        for pattern in ("pytest-audit-frame-*.json", "pytest-audit-*.cache"):
            try:
                found = sorted(((*_mtime_size(p), p) for p in self.folder.glob(pattern)), reverse=True)
            except OSError:
                return
            kept.extend(found[:KEEP_FILES])
            for *_, stale in found[KEEP_FILES:]:
                with contextlib.suppress(OSError):
                    stale.unlink()
        total = 0
        for _, size, path in sorted(kept, reverse=True):
            total += size
            if total > MAX_FOLDER_BYTES:
                with contextlib.suppress(OSError):
                    path.unlink()


def _mtime_size(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return 0, 0
    return st.st_mtime_ns, st.st_size


def parse_entries(data: bytes) -> dict[str, tuple[str, str]]:
    """key -> (seal, text) of an entries file; another schema, or bytes that are not ASCII, hold none, and a line
    that is not `KEY SEAL TEXT` (a truncated last line) is left out. Nothing here is trusted: `get` checks."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return {}
    if not text.startswith(SCHEMA + "\n"):
        return {}
    out: dict[str, tuple[str, str]] = {}
    for line in text.split("\n")[1:]:
        parts = line.split(" ", 2)
        if len(parts) == 3:
            out[parts[0]] = (parts[1], parts[2])
    return out


def _seen(raw: Any) -> Seen:
    path, listed, fingerprint, status, opened = raw
    if not (isinstance(path, str) and isinstance(listed, bool) and isinstance(fingerprint, str) and isinstance(opened, bool)):
        raise BadRecord("a recorded path must be [path, listed, fingerprint, status, opened]")
    if status is not None and not (isinstance(status, list) and len(status) == 4 and all(type(n) is int for n in status)):
        raise BadRecord("a recorded status must be four integers")
    return Seen(
        path=path,
        listed=listed,
        fingerprint=fingerprint,
        status=tuple(status) if status is not None else None,
        opened=opened,
    )
