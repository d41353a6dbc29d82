"""Read a user-named file: a missing, unreadable, special, oversized or undecodable file is one error line of the caller's kind.

Every input specmatrix reads goes through `read_bytes`: it opens without blocking (a FIFO with no writer, a
terminal) and refuses anything but a regular file before reading a byte. Python sources are decoded the way the
interpreter decodes them (`decode_python`: a UTF-8 BOM, a PEP 263 coding cookie), in this one place, so the guard
audit, the ledger and the plugin read the same text the test process ran.
"""

from __future__ import annotations

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
    return _open_regular(path)[0]


def _open_regular(path: Path | str) -> tuple[int, os.stat_result]:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        kind = special_kind(st.st_mode)
        if kind is not None:
            raise SpecialFileError(kind)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_limited(path: Path | str, limit: int) -> bytes:
    """The bytes of a regular file, at most `limit + 1` of them (so the caller can tell an oversized one).

    Read with `os.read` in pieces sized by the file's own size (plus one byte): a buffered reader asked for
    `limit + 1` bytes allocates that much for every small file. A first read that returns exactly the size
    `fstat` gave ends the read (a file growing meanwhile is read as it was); a file whose size says nothing
    (`/proc`) is read on to its end."""
    fd, st = _open_regular(path)
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
    if relative.startswith("/") or ".." in relative.split("/"):
        raise OutsideTreeError(f"{relative}: outside the audited tree")
    base = root.resolve()
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise OutsideTreeError(f"{relative}: a symlink to a file outside the audited tree; refusing to read it")
    return target


class TreeResolver:
    """`resolve_in_tree` for many files of one tree: each folder is resolved once and remembered, then only the
    file's own name is looked at (resolved when it is a symlink). The answer is `resolve_in_tree`'s: a path is
    resolved component by component, so resolving its folder first and then its last component is the same."""

    def __init__(self, root: Path):
        self.root = root
        self.base = root.resolve()
        self.folders: dict[str, Path] = {}

    def __call__(self, relative: str) -> Path:
        folder, _, name = relative.rpartition("/")
        if relative.startswith("/") or ".." in relative.split("/") or name in ("", "."):
            return resolve_in_tree(self.root, relative)
        real = self.folders.get(folder)
        if real is None:
            real = self.folders[folder] = (self.base / folder).resolve() if folder else self.base
        target = real / name
        try:
            linked = stat.S_ISLNK(os.lstat(target).st_mode)
        except OSError:
            linked = False
        if linked:
            target = target.resolve()
        if not target.is_relative_to(self.base):
            raise OutsideTreeError(f"{relative}: a symlink to a file outside the audited tree; refusing to read it")
        return target


def read_tree_bytes(root: Path, relative: str, limit: int) -> bytes:
    """The bytes of a file of an audited tree (`read_limited` after `resolve_in_tree`); at most `limit + 1`."""
    return read_limited(resolve_in_tree(root, relative), limit)


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
        raise error(f"{where}: larger than {_size(limit)}; refusing to read it")
    return data


def _size(limit: int) -> str:
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
