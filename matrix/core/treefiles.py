"""Files of an audited tree, each opened by walking from a descriptor of the tree's root: no read leaves the tree.

Each path is walked one component at a time with `O_NOFOLLOW`, and a symlink met on the way is resolved by hand, so
a target outside the root is refused whatever the tree does meanwhile (a folder swapped for a symlink after it was
first read is never followed out). Every file so read is noted in `textfiles.READ_FILES`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

from matrix.core.errors import SpecmatrixError
from matrix.core.textfiles import (
    MAX_TEXT_BYTES,
    READ_FILES,
    OutsideTreeError,
    SpecialFileError,
    check_path_text,
    open_regular_file,
    read_open_file,
    resolve_in_tree,
    size_text,
    special_kind,
)

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
        return read_open_file(fd, st, limit)

    def open(self, relative: str) -> tuple[int, os.stat_result]:
        """A read-only descriptor on the regular file `relative` names, and its stat; the caller closes it."""
        check_path_text(relative, "its path")
        if relative.startswith("/") or ".." in relative.split("/"):
            raise OutsideTreeError(f"{relative}: outside the audited tree")
        if not self.supported:
            fd, st = open_regular_file(resolve_in_tree(self.root, relative))
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
        # Not contextlib.suppress: at interpreter exit the module's globals may already be gone (None), and the
        # AttributeError would be printed as "Exception ignored in ... __del__" with a traceback.
        try:  # noqa: SIM105
            self.close()
        except Exception:
            pass

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
        raise error(f"{where}: larger than {size_text(limit)}; refusing to read it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start})") from None
