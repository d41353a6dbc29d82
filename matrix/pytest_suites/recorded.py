"""What a computation read from the file system, recorded while it ran, and whether the file system still says the same.

`recording()` watches every file the process opens and every folder it lists (Python's audit events `open`,
`os.listdir` and `os.scandir`, which every reader meets whatever function it calls: `open`, `os.open`, pathlib,
`glob`, `os.walk`, tomllib, pytest's ini loader) and every path whose existence or kind it asks (`os.stat` and
`os.lstat`, through which pathlib's `exists`/`is_file`/`is_dir`/`is_symlink` and `os.path` go), and every `os.open`
relative to a folder's descriptor, as the tree reader opens every file (`matrix.core.treefiles`), whose `open` event
names the path without its folder; those three are wrapped for the duration. A reader added later is recorded
without being told about it. The files of the running Python and of this package (imported on first use) are not
inputs and are left out.

`manifest()` fingerprints what was touched: a file opened by its content, a listed folder by its entries (names and
kinds, a symlink's with its target's), a symlink by its target, anything only probed by its kind, a missing path as
missing. `unchanged()` says whether every fingerprint still holds; a path whose status (size, times, inode) is as
recorded, and was already settled when recorded, is trusted without reading it again, as git trusts its index
(racily-clean entries are read).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_HASHED_BYTES = 64 * 1024 * 1024  # a larger file is fingerprinted by its status (no reader reads one)
MAX_PATHS = 200_000  # a recording touching more paths is not kept (`Recorder.overflow`)
MAX_LISTED = 100_000  # entries of one folder fingerprinted; past it, the folder by its status
# A path changed this recently (nanoseconds) before its fingerprint was taken may change again within the same
# timestamp: its status is not trusted later, its content is read again (git's "racily clean").
RACY_NS = 2_000_000_000
_PACKAGE = str(Path(__file__).resolve().parents[1])


class Recorder:
    """The paths touched while it is active: absolute and normalised, each with whether it was listed."""

    def __init__(self, ignore: Sequence[str] = ()):
        self.touched: dict[str, bool] = {}
        self.opened: set[str] = set()  # paths opened (read), not only probed: their content is an input
        self.started_ns = time.time_ns()
        self.overflow = False
        self.ignore = tuple(p.rstrip("/") + "/" for p in (*_runtime_prefixes(), *ignore) if p)

    def note(self, path: Any, *, listed: bool = False, opened: bool = False) -> None:
        if isinstance(path, int) or (path is None and not listed):
            return  # a file descriptor: what it was opened from was recorded then
        try:
            name = os.fsdecode(os.fspath(path if path is not None else "."))
        except (TypeError, ValueError):
            return
        full = os.path.normpath(os.path.join(os.getcwd(), name)) if not name.startswith("/") else os.path.normpath(name)
        if full.endswith(".pyc") or (full + "/").startswith(self.ignore):
            return
        if len(self.touched) >= MAX_PATHS and full not in self.touched:
            self.overflow = True
            return
        self.touched[full] = self.touched.get(full, False) or listed
        if opened:
            self.opened.add(full)


def _runtime_prefixes() -> list[str]:
    import site

    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, _PACKAGE, "/proc", "/dev", "/sys"}
    with contextlib.suppress(AttributeError):
        prefixes.update(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        prefixes.add(site.getusersitepackages())
    return sorted(prefixes)


_ACTIVE: list[Recorder] = []
_HOOKED: list[bool] = []
_SILENT: list[bool] = []  # inside a wrapped call that noted its own path: its audit event names it without its folder


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _ACTIVE or event not in _EVENTS or _SILENT or _importing():
        return
    _ACTIVE[-1].note(args[0], listed=event != "open", opened=event == "open")


_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})


def _importing() -> bool:
    """Whether the import system is at work (a module imported on first use lists `sys.path` folders and opens
    its source): what it reads is code, not an input."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


@contextlib.contextmanager
def recording(ignore: Sequence[str] = (), recorder: Recorder | None = None) -> Iterator[Recorder]:
    """Record the paths the code inside the block touches (one recording at a time, in one thread); `recorder`
    goes on with an earlier recording (what ran between the two blocks is not recorded)."""
    if not _HOOKED:
        sys.addaudithook(_hook)  # for the life of the process: it returns at once while nothing is recorded
        _HOOKED.append(True)
    if recorder is None:
        recorder = Recorder(ignore)
    real_stat, real_lstat = os.stat, os.lstat

    def watched_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        recorder.note(path)
        return real_stat(path, *args, **kwargs)

    def watched_lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        recorder.note(path)
        return real_lstat(path, *args, **kwargs)

    real_open = os.open

    def watched_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if dir_fd is None:
            return real_open(path, flags, mode)
        full = _under(dir_fd, path)
        if full is None:
            recorder.overflow = True  # what was read cannot be told: the recording is not kept
        else:
            recorder.note(full, opened=True)
        _SILENT.append(True)
        try:
            return real_open(path, flags, mode, dir_fd=dir_fd)
        finally:
            _SILENT.pop()

    _ACTIVE.append(recorder)
    os.stat, os.lstat, os.open = watched_stat, watched_lstat, watched_open
    try:
        yield recorder
    finally:
        os.stat, os.lstat, os.open = real_stat, real_lstat, real_open
        _ACTIVE.remove(recorder)


def _under(folder: int, path: Any) -> str | None:
    """The path `path` names relative to the open folder `folder` (Linux: the descriptor's path in /proc; macOS:
    `F_GETPATH`); None when it cannot be told (then the recording is not trusted: `Recorder.overflow`)."""
    try:
        name = os.fsdecode(os.fspath(path))
    except (TypeError, ValueError):
        return None
    try:
        base: str | None = os.readlink(f"/proc/self/fd/{folder}")
    except OSError:
        base = _fd_path(folder)
    return os.path.join(base, name) if base is not None else None


def _fd_path(folder: int) -> str | None:
    import fcntl

    command = getattr(fcntl, "F_GETPATH", None)
    if command is None:
        return None
    try:
        raw = fcntl.fcntl(folder, command, bytes(1024))
    except OSError:
        return None
    return os.fsdecode(raw.split(b"\0", 1)[0]) or None


# --- fingerprints ---------------------------------------------------------------------------------------------------

Status = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


@dataclass(frozen=True, kw_only=True)
class Seen:
    """One path as it was when recorded: its fingerprint, and its status when that may be trusted (else None)."""

    path: str
    listed: bool
    fingerprint: str
    status: Status | None
    opened: bool = True  # False: only probed (its kind is the input, not its content)


def _status(st: os.stat_result) -> Status:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _digest(path: str, size: int) -> str:
    if size > MAX_HASHED_BYTES:
        return f"big:{size}"
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:32]


def _listing(path: str) -> str:
    entries: list[str] = []
    with os.scandir(path) as found:
        for entry in found:
            if len(entries) >= MAX_LISTED:
                return "many"
            try:
                kind = "d" if entry.is_dir() else "f" if entry.is_file() else "o"  # a symlink: its target's kind
                if entry.is_symlink():
                    kind = "l" + kind
            except OSError:
                kind = "?"
            entries.append(f"{kind}{entry.name}")
    return hashlib.sha256("\0".join(sorted(entries)).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def fingerprint(path: str, listed: bool, opened: bool = True) -> tuple[str, Status | None]:
    """(fingerprint, status) of a path now; the status covers the link and its target."""
    try:
        own = os.lstat(path)
    except OSError:
        return "-", None
    parts: list[str] = []
    status = _status(own)
    st = own
    if stat.S_ISLNK(own.st_mode):
        try:
            parts.append("l:" + os.readlink(path))
            st = os.stat(path)
            status = (*_status(st)[:3], own.st_ino ^ (st.st_ino << 1))
        except OSError:
            return "".join(parts) + ":dangling", status
    try:
        if stat.S_ISREG(st.st_mode):
            parts.append("f:" + (_digest(path, st.st_size) if opened else ""))
        elif stat.S_ISDIR(st.st_mode):
            parts.append("d:" + (_listing(path) if listed else ""))
        else:
            parts.append(f"o:{stat.S_IFMT(st.st_mode)}")
    except OSError as exc:
        parts.append(f"unreadable:{exc.errno}")
    return "|".join(parts), status


def manifest(
    touched: Iterable[tuple[str, bool]], *, since_ns: int, opened: Collection[str] | None = None
) -> tuple[Seen, ...] | None:
    """The touched paths fingerprinted now (those not in `opened`, when given, by their kind only); None when one
    changed after `since_ns` (while it was being read: what was read may not be what is fingerprinted now)."""
    out: list[Seen] = []
    now = time.time_ns()
    for path, listed in sorted(touched):
        read = opened is None or path in opened
        fp, status = fingerprint(path, listed, read)
        if fp.endswith(("d:", "f:")):
            status = None  # only probed: its kind is checked again (cheap), its changing times mean nothing
        elif status is not None and status[2] >= since_ns:
            return None
        trusted = status if status is not None and status[2] < now - RACY_NS else None
        out.append(Seen(path=path, listed=listed, fingerprint=fp, status=trusted, opened=read))
    return tuple(out)


def settled(path: Path | str) -> Status | None:
    """A file's status (following links) when it last changed long enough ago to be trusted later, else None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _status(st) if st.st_ctime_ns < time.time_ns() - RACY_NS else None


def status_of(path: Path | str) -> Status | None:
    """A file's status now (following links), None when it cannot be read."""
    try:
        return _status(os.stat(path))
    except OSError:
        return None


def current_status(path: str) -> Status | None:
    """The status `fingerprint` records for a path (link and target), None when it cannot be read."""
    try:
        own = os.lstat(path)
        if not stat.S_ISLNK(own.st_mode):
            return _status(own)
        st = os.stat(path)
    except OSError:
        return None
    return (*_status(st)[:3], own.st_ino ^ (st.st_ino << 1))


def unchanged(seen: Iterable[Seen]) -> bool:
    """Whether every recorded path still has its fingerprint (a trusted status that still holds settles it)."""
    for item in seen:
        if item.status is not None and current_status(item.path) == item.status:
            continue
        if fingerprint(item.path, item.listed, item.opened)[0] != item.fingerprint:
            return False
    return True
