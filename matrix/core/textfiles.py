"""Read a user-named file: a missing, unreadable, special, oversized or undecodable file is one error line of the caller's kind.

Every input specmatrix reads goes through `read_bytes`: it opens without blocking (a FIFO with no writer, a
terminal) and refuses anything but a regular file before reading a byte. Python sources are decoded the way the
interpreter decodes them (`decode_python`: a UTF-8 BOM, a PEP 263 coding cookie), in this one place, so the guard
audit, the ledger and the plugin read the same text the test process ran.

Files of an audited tree are read through `TreeFiles`: each path is walked from a descriptor of the tree's root,
one component at a time with `O_NOFOLLOW`, and a symlink met on the way is resolved by hand, so a target outside
the root is refused whatever the tree does meanwhile (a folder swapped for a symlink after it was first read is
never followed out). Every file so read is noted in `READ_FILES`, the one list of what an audit read, which the
command line checks each output path against.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import tokenize
from pathlib import Path, PurePosixPath

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
    fd, st = _open_regular(path)
    return _read_fd(fd, st, limit)


def _read_fd(fd: int, st: os.stat_result, limit: int) -> bytes:
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

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# A folder is opened only to walk through it: O_PATH (Linux) needs no read permission, as path lookup needs none.
_O_DIR = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC
_O_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | _O_NOFOLLOW | _O_CLOEXEC
MAX_LINKS = 40  # symlinks followed for one path (Linux's own limit, MAXSYMLINKS)
MAX_OPEN_FOLDERS = 256  # folder descriptors kept open by one TreeFiles


class TreeFiles:
    """The files of one audited tree, each opened by walking from a descriptor of its root.

    Every component is opened with `O_NOFOLLOW` relative to the folder before it; a symlink is read (`readlink`)
    and resolved by hand, as the kernel would, and refused (`OutsideTreeError`) when it leads outside the root, so
    no check can go stale between resolving a path and opening it. Folders reached are kept open by their path in
    the tree, and each is checked to be where it was once a file is opened through it (Linux: the descriptor's path
    in /proc): one moved or swapped for a symlink meanwhile is walked again from the root, so a link to outside put
    in its place is refused, never followed. A path given with
    `..` or from `/` is refused (a symlink's own target may hold `..` inside the tree); one holding a NUL byte is a
    `BadPathError`. Every file opened is noted in `READ_FILES`.
    """

    def __init__(self, root: Path):
        self.root = root
        self.base = root.resolve()
        self._root_fd: int | None = None
        self._folders: dict[str, tuple[int, tuple[str, ...]]] = {}  # path in the tree -> (fd, its real path)
        self.supported = os.open in os.supports_dir_fd and os.readlink in os.supports_dir_fd and bool(_O_NOFOLLOW)

    def read(self, relative: str, limit: int) -> bytes:
        """The file's bytes, at most `limit + 1` (`read_limited`'s contract)."""
        fd, st = self.open(relative)
        return _read_fd(fd, st, limit)

    def open(self, relative: str) -> tuple[int, os.stat_result]:
        """A read-only descriptor on the regular file `relative` names, and its stat; the caller closes it."""
        check_path_text(relative, "its path")
        if relative.startswith("/") or ".." in relative.split("/"):
            raise OutsideTreeError(f"{relative}: outside the audited tree")
        if not self.supported:
            fd, st = _open_regular(resolve_in_tree(self.root, relative))
        else:
            folder, _, name = relative.rpartition("/")
            start, real = self._folder(folder, relative)
            fd, _ = self._walk(start, real, [name] if name else [], relative, final=True)
            if real and not self._still_there(start, real):
                # Moved while the file was opened through it: walked again from the root, once.
                os.close(fd)
                self._drop_folders()
                start, real = self._folder(folder, relative)
                fd, _ = self._walk(start, real, [name] if name else [], relative, final=True)
            try:
                st = os.fstat(fd)
                kind = special_kind(st.st_mode)
                if kind is not None:
                    raise SpecialFileError(kind)
            except BaseException:
                os.close(fd)
                raise
        READ_FILES.note(st, relative)
        return fd, st

    def close(self) -> None:
        for fd, _ in self._folders.values():
            os.close(fd)
        self._folders.clear()
        if self._root_fd is not None:
            os.close(self._root_fd)
            self._root_fd = None

    def __enter__(self) -> TreeFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # --- the walk ---------------------------------------------------------------------------------------------

    def _root(self) -> int:
        if self._root_fd is None:
            self._root_fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_CLOEXEC)
        return self._root_fd

    def _folder(self, folder: str, relative: str) -> tuple[int, tuple[str, ...]]:
        """The kept descriptor of a folder of the tree (its path as given) and its real path; walked when new."""
        if folder in ("", "."):
            return self._root(), ()
        found = self._folders.get(folder)
        if found is not None:
            return found  # checked after the file is opened through it (`open`)
        parts = folder.split("/")
        # The nearest folder above that is kept, then one step at a time (each step kept): a deep path costs one
        # open per new folder, never a walk from the root per file.
        at = len(parts)
        while at > 0 and "/".join(parts[:at]) not in self._folders:
            at -= 1
        fd, real = self._folders["/".join(parts[:at])] if at else (self._root(), ())
        for index in range(at, len(parts)):
            fd, real = self._walk(fd, real, [parts[index]], relative, final=False)
            if len(self._folders) >= MAX_OPEN_FOLDERS:
                self._drop_folders()
            self._folders["/".join(parts[: index + 1])] = (fd, real)
        return fd, real

    def _still_there(self, fd: int, real: tuple[str, ...]) -> bool:
        """Whether a kept folder is still where it was found (Linux: the descriptor's path in /proc); a folder
        moved out of the tree since is walked again, never read through. Elsewhere it is trusted as kept."""
        try:
            now = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return True
        return now == str(self.base.joinpath(*real))

    def _drop_folders(self) -> None:
        # Only between steps: the walk's new descriptor is not kept yet, so none closed here is in use.
        for fd, _ in self._folders.values():
            os.close(fd)
        self._folders.clear()

    def _walk(
        self, fd: int, real: tuple[str, ...], pending: list[str], relative: str, *, final: bool
    ) -> tuple[int, tuple[str, ...]]:
        """Open `pending` (components) from the folder `fd` (real path `real`): a new descriptor of the file
        (`final`) or folder reached, and its real path; symlinks resolved by hand, never followed by the kernel."""
        todo = list(reversed(pending))
        current, path, owned, links = fd, list(real), False, 0
        try:
            while todo:
                name = todo.pop()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not path:
                        raise OutsideTreeError(f"{relative}: a symlink to a file outside the audited tree; refusing to read it")
                    path.pop()
                    current, owned = self._reopen(current, owned, path, relative)
                    continue
                last = final and not any(p not in ("", ".") for p in todo)
                try:
                    opened = os.open(name, _O_FILE if last else _O_DIR, dir_fd=current)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                        raise
                    target = _link(name, current, exc)
                    links += 1
                    if links > MAX_LINKS:
                        raise OSError(errno.ELOOP, f"{relative}: too many levels of symbolic links") from None
                    if target.startswith("/"):
                        inside = PurePosixPath(target)
                        if not inside.is_relative_to(self.base):
                            raise OutsideTreeError(
                                f"{relative}: a symlink to a file outside the audited tree; refusing to read it"
                            ) from None
                        path = []
                        current, owned = self._reopen(current, owned, path, relative)
                        todo.extend(reversed(inside.relative_to(self.base).parts))
                    else:
                        todo.extend(reversed(target.split("/")))
                    continue
                if last:
                    if owned:
                        os.close(current)
                    return opened, (*path, name)
                if not stat.S_ISDIR(os.fstat(opened).st_mode):
                    # O_PATH|O_NOFOLLOW opens a symlink itself where O_DIRECTORY is not honoured: read it as one.
                    os.close(opened)
                    raise OSError(errno.ENOTDIR, f"{relative}: not a folder")
                if owned:
                    os.close(current)
                current, owned = opened, True
                path.append(name)
            if final:
                raise SpecialFileError("a directory")
            if not owned:
                current, owned = os.dup(current), True
            return current, tuple(path)
        except BaseException:
            if owned:
                os.close(current)
            raise

    def _reopen(self, current: int, owned: bool, path: list[str], relative: str) -> tuple[int, bool]:
        """A descriptor of the real folder `path` (after `..` or an absolute link), walked from the root."""
        if owned:
            os.close(current)
        fd, owned = self._root(), False
        for name in path:
            opened = os.open(name, _O_DIR, dir_fd=fd)
            if owned:
                os.close(fd)
            fd, owned = opened, True
        return fd, owned


def _link(name: str, folder: int, error: OSError) -> str:
    """The target of the symlink `name` in `folder`; the open's own error when it is not a symlink."""
    try:
        return os.readlink(name, dir_fd=folder)
    except OSError:
        raise error from None


def read_tree_bytes(root: Path, relative: str, limit: int) -> bytes:
    """The bytes of a file of an audited tree (through `TreeFiles`); at most `limit + 1`."""
    with TreeFiles(root) as files:
        return files.read(relative, limit)


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


def read_tree_text(
    root: Path, path: Path, error: type[SpecmatrixError], label: str | None = None, *, limit: int = MAX_TEXT_BYTES
) -> str:
    """`read_text` for a file of the tree at `root` (`path` lies under it): read through `TreeFiles`, so a link
    (or a folder swapped for one) leading outside the root is refused, named by `label` (default: the path)."""
    where = label if label is not None else str(path)
    try:
        relative = path.relative_to(root).as_posix()
    except ValueError:
        raise error(f"{where}: outside the audited tree; refusing to read it") from None
    try:
        with TreeFiles(root) as files:
            data = files.read(relative, limit)
    except OutsideTreeError:
        raise error(f"{where}: a symlink to a file outside the audited tree; refusing to read it") from None
    except SpecialFileError as exc:
        raise error(f"{where}: is {exc.kind}, not a regular file; refusing to read it") from None
    except OSError as exc:
        raise error(f"{where}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{where}: larger than {_size(limit)}; refusing to read it")
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
