"""Read a user-named file: a missing, unreadable, special, oversized or undecodable file is one error line of the caller's kind.

Every input specmatrix reads goes through `read_bytes`: it opens without blocking (a FIFO with no writer, a
terminal) and refuses anything but a regular file before reading a byte. Python sources are decoded the way the
interpreter decodes them (`decode_python`: a UTF-8 BOM, a PEP 263 coding cookie), in this one place, so the guard
audit, the ledger and the plugin read the same text the test process ran.

Files of an audited tree are read through `matrix.core.treefiles.TreeFiles` (from a descriptor of the tree's root,
links resolved by hand). Every file read here or there is noted in `READ_FILES`, the one list of what an audit read,
which the command line checks each output path against.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import tokenize
from pathlib import Path

from matrix.core.errors import SpecmatrixError

MAX_TEXT_BYTES = 256 * 1024 * 1024  # reports of 20,000 cells are about 10 MiB; matrix and runner files a few KiB

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO", "a directory", ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


class SpecialFileError(OSError):
    """Raised by `open_regular` for a path that is not a regular file (its `kind` says what it is)."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"is {kind}, not a regular file")
        self.kind = kind


def open_regular(path: Path | str) -> int:
    """A read-only descriptor on a regular file; never blocks (O_NONBLOCK) and refuses FIFOs, devices, folders."""
    return open_regular_file(path)[0]


def open_regular_file(path: Path | str) -> tuple[int, os.stat_result]:
    """`open_regular` with the file's stat (taken on the open descriptor)."""
    check_path_text(os.fspath(path), "its path")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        kind = special_kind(st.st_mode)
        if kind is not None:
            raise SpecialFileError(kind)
    except BaseException:
        os.close(fd)
        raise
    READ_FILES.note(st, str(path))
    return fd, st


def read_limited(path: Path | str, limit: int) -> bytes:
    """The bytes of a regular file, at most `limit + 1` of them (so the caller can tell an oversized one)."""
    fd, st = open_regular_file(path)
    return read_open_file(fd, st, limit)


def read_open_file(fd: int, st: os.stat_result, limit: int) -> bytes:
    """Read an open file (closed here) whole, at most `limit + 1` bytes.

    Read with `os.read` in pieces sized by the file's own size (plus one byte): a buffered reader asked for
    `limit + 1` bytes allocates that much for every small file. A first read that returns exactly the size
    `fstat` gave ends the read (a file growing meanwhile is read as it was); a file whose size says nothing
    (`/proc`) is read on to its end."""
    try:
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, max(st.st_size + 1 - total, 65536)))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total == st.st_size and len(chunks) == 1:
                break  # the whole file as its size says, in one read: no second read to see the end
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class OutsideTreeError(OSError):
    """Raised by `resolve_in_tree` for a path whose target (symlinks resolved) lies outside the audited root."""


def resolve_in_tree(root: Path, relative: str) -> Path:
    """`root/relative` with every symlink resolved; `OutsideTreeError` when it (or a folder on the way) leaves
    `root`, `..` and absolute paths included. The error names `relative` only: what lies outside is never shown."""
    check_path_text(relative, "its path")
    if relative.startswith("/") or ".." in relative.split("/"):
        raise OutsideTreeError(f"{relative}: outside the audited tree")
    base = root.resolve()
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise OutsideTreeError(f"{relative}: a symlink to a file outside the audited tree; refusing to read it")
    return target


class BadPathError(OSError):
    """Raised for a path no file can have (a NUL byte in it): read as a file that cannot be read, never a crash."""


def check_path_text(text: str, what: str) -> None:
    """`BadPathError` when `text` holds a NUL byte (the OS refuses such a path; Python raises ValueError)."""
    if "\0" in text:
        raise BadPathError(errno.EINVAL, f"{what} holds a NUL byte")


class ReadFiles:
    """The files an audit read from the trees it audits, by identity (device, inode): an output path is checked
    against it, whatever the path's spelling (a symlink, `..`, a hard link). Readers note what they open."""

    def __init__(self) -> None:
        self.files: dict[tuple[int, int], str] = {}

    def note(self, st: os.stat_result, label: str) -> None:
        if len(self.files) < MAX_NOTED:
            self.files.setdefault((st.st_dev, st.st_ino), label)

    def note_path(self, path: Path | str, label: str | None = None) -> None:
        """Note a file another process reads for this audit (a worker), by its path now."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return
        if stat.S_ISREG(st.st_mode):
            self.note(st, label if label is not None else str(path))

    def read_as(self, path: Path | str) -> str | None:
        """The label of the read file `path` names (following symlinks), else None."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        return self.files.get((st.st_dev, st.st_ino))

    def clear(self) -> None:
        self.files.clear()


MAX_NOTED = 1_000_000
READ_FILES = ReadFiles()


def read_bytes(path: Path, error: type[SpecmatrixError], label: str | None = None, *, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The file's bytes, or `error("<label>: ...")` when it is missing, special or larger than `limit`."""
    where = label if label is not None else str(path)
    try:
        data = read_limited(path, limit)
    except SpecialFileError as exc:
        raise error(f"{where}: is {exc.kind}, not a regular file; refusing to read it") from None
    except OSError as exc:
        raise error(f"{where}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{where}: larger than {size_text(limit)}; refusing to read it")
    return data


def size_text(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


def read_text(path: Path, error: type[SpecmatrixError], label: str | None = None, *, limit: int = MAX_TEXT_BYTES) -> str:
    """The file's UTF-8 text, or `error("<label>: cannot read: ...")`; label defaults to the path."""
    where = label if label is not None else str(path)
    data = read_bytes(path, error, label, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start})") from None


def decode_python(data: bytes) -> str:
    """Source bytes decoded as the interpreter decodes them (BOM, coding cookie, else UTF-8), BOM dropped.

    Raises `ValueError` (`UnicodeDecodeError` included) or `SyntaxError` for bytes Python would refuse to run.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


def package_text(name: str) -> str:
    """A data file shipped in the package (`data/runners.toml`), read from the package folder; through
    importlib.resources only when the package is not a folder (imported from a zip). Importing importlib.resources
    costs about 10 ms (it brings tempfile and, on first use, zipfile), a fifth of a warm `specmatrix guards` run's
    imports."""
    path = Path(__file__).resolve().parent.parent / name
    if path.is_file():
        return path.read_text(encoding="utf-8")
    from importlib import resources

    return resources.files("matrix").joinpath(name).read_text(encoding="utf-8")
