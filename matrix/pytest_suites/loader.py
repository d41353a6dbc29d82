"""The one reader of a checkout's Python files for the pytest audit: resolved inside the tree, bounded, decoded as
the interpreter decodes them, each read once, and (for the results cache) fingerprinted."""

from __future__ import annotations

import errno
import hashlib
import os
import posixpath
import stat
import time
from pathlib import Path
from typing import Any

from matrix.core.textfiles import READ_FILES, BadPathError, OutsideTreeError, SpecialFileError, decode_python, read_open_file
from matrix.core.treefiles import TreeFiles
from matrix.pytest_suites.recorded import RACY_NS, Status
from matrix.schedule.load import MAX_SOURCE_BYTES

_UNSEEN: Any = object()


def _settled(status: Status) -> bool:
    return status[2] < time.time_ns() - RACY_NS


_MISSING = f"error:{errno.ENOENT}"  # the fingerprint of a path nothing is at
# Why a file that is there was not read, when the OS refuses it (permissions): pytest's import of it fails.
UNREADABLE = "cannot be read"
# The texts a SourceLoader keeps (characters); past it files are read again when asked again.
MAX_KEPT_CHARS = 64 * 1024 * 1024


class SourceLoader:
    """Repository-relative path -> Python source text as the interpreter decodes it (BOM, coding cookie), or None;
    read through the root's descriptor (`TreeFiles`): symlinks resolved and a target outside the checkout refused.
    Why a file was not read is kept, by path only.

    With `fingerprints`, what each path gave is kept as a fingerprint (a digest of the bytes read, or why nothing
    was), with the file's status before it was read; while `reads` is a set, every path asked for (or noted by a
    collector answering from its own memo, `note`) is added to it: the results cache keys a test file's audit by
    the fingerprints of the paths its collection and audit read."""

    def __init__(self, root: Path, *, fingerprints: bool = False):
        self.root = root.resolve()
        self.base = str(self.root)
        self.problems: dict[str, str] = {}
        self.files = TreeFiles(self.root)
        # Each answer, kept: the collector asks for a file's text to parse it, to see that it exists and whether
        # it says "skip", and the linker for a module; reading, resolving and decoding it once is enough.
        self.texts: dict[str, str | None] = {}
        self.kept = 0
        self.fingerprints = fingerprints
        self.prints: dict[str, tuple[str, Status | None]] = {}
        self.reads: set[str] | None = None
        self.statuses: dict[str, Status | None] = {}
        self.held: dict[tuple[str, str, Status | None], bool] = {}
        self.containers: dict[str, Status | None] = {}  # folder -> the status of it or the nearest that exists

    def __call__(self, path: str) -> str | None:
        if self.reads is not None:
            self.reads.add(path)
        if path in self.texts:
            return self.texts[path]
        text = self._load(path)
        if self.kept < MAX_KEPT_CHARS:
            self.texts[path] = text
            self.kept += len(text) if text is not None else 0
        return text

    def note(self, path: str) -> None:
        """A path the collector answered about from its own memo: read for the file being tracked all the same."""
        if self.reads is not None:
            self.reads.add(path)

    def fingerprint(self, path: str) -> tuple[str, Status | None]:
        """What `path` gives now: (fingerprint, status when it may be trusted later)."""
        if path not in self.prints:
            if path in self.texts or self.kept >= MAX_KEPT_CHARS:
                self.fingerprints = True
                self._load(path)  # read again only to fingerprint it
            else:
                self(path)
        return self.prints.get(path, ("?", None))

    def _load(self, path: str) -> str | None:
        try:
            fd, st = self.files.open(path)
            data = read_open_file(fd, st, MAX_SOURCE_BYTES)
        except OutsideTreeError:
            self._refused(path, "outside", "a symlink to a file outside the audited tree; not read")
            return None
        except SpecialFileError as exc:
            self._refused(path, f"special:{exc.kind}", f"is {exc.kind}, not a regular file; not read")
            return None
        except BadPathError:
            self._refused(path, "nul", "its path holds a NUL byte; not read")
            return None
        except (FileNotFoundError, NotADirectoryError) as exc:
            # Nothing there: what can change that is the nearest folder that exists (an entry added, a link moved).
            folder = self._container(path) if exc.errno == errno.ENOENT and self.fingerprints else None
            self._refused(path, f"error:{exc.errno}", None, folder if folder is not None and _settled(folder) else None)
            return None
        except OSError as exc:
            # pytest fails on a file it cannot read (a conftest or test file without read permission): named.
            self._refused(path, f"error:{exc.errno}", f"{UNREADABLE} ({exc.strerror or type(exc).__name__})")
            return None
        if self.fingerprints:
            status = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            self.prints[path] = ("h:" + hashlib.sha256(data).hexdigest()[:32], status if _settled(status) else None)
        if len(data) > MAX_SOURCE_BYTES:
            self.problems[path] = f"larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB; not read"
            return None
        try:
            return decode_python(data)
        except (ValueError, SyntaxError):
            self.problems[path] = "not Python source text (its encoding does not decode)"
            return None

    def _refused(self, path: str, fingerprint: str, problem: str | None, status: Status | None = None) -> None:
        if self.fingerprints:
            self.prints[path] = (fingerprint, status)
        if problem is not None:
            self.problems[path] = problem

    def holds(self, path: str, fingerprint: str, status: Status | None) -> bool:
        """Whether `path` still gives `fingerprint`: a trusted status that still holds settles it without a read.
        Answered once per question (many entries read the same conftest.py): the files are not read again."""
        key = (path, fingerprint, status)
        found = self.held.get(key)
        if found is None:
            found = self.held[key] = (
                status is not None and (self._container(path) if fingerprint == _MISSING else self._status(path)) == status
            ) or self.fingerprint(path)[0] == fingerprint
        return found

    def _status(self, path: str) -> Status | None:
        now = self.statuses.get(path, _UNSEEN)
        if now is _UNSEEN:
            try:
                st = os.stat(os.path.join(self.base, path))
            except (OSError, ValueError):
                now = None
            else:
                now = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                if stat.S_ISREG(st.st_mode):
                    READ_FILES.note(st, path)  # what the stored answer was read from: no output may replace it
            self.statuses[path] = now
        return now  # type: ignore[no-any-return]

    def _container(self, path: str) -> Status | None:
        """The status of the nearest folder above a missing path that exists: while its times are unchanged,
        nothing was added to it, so the path is still missing (and resolves as it did)."""
        folder = posixpath.dirname(path)
        found = self.containers.get(folder, _UNSEEN)
        if found is _UNSEEN:
            found = self._status(folder)
            if found is None and folder:
                found = self._container(folder)
            self.containers[folder] = found
        return found  # type: ignore[no-any-return]

    def problem(self, path: str) -> str | None:
        return self.problems.get(path)
