"""The one writer for every file specmatrix writes: a unique temp file beside the target, fsync, `os.replace`.

A reader never sees half a file, a planted `PATH.tmp` (symlink or not) is never followed or clobbered, two
concurrent writers never trip over one shared temp name, and a special file (a device, a FIFO, a directory) is
refused rather than replaced by a regular file.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from matrix.core.errors import OutputError

NEW_FILE_MODE = 0o644


def _check_target(path: Path) -> int:
    """The permission bits the new file gets: those of the regular file it replaces, else NEW_FILE_MODE."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return NEW_FILE_MODE
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        # Replacing a symlink swaps the link itself for a file, never writes through it.
        return NEW_FILE_MODE
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{path}: not a regular file; refusing to replace it")
    # A 0600 file stays 0600: replacing it must not widen who can read it.
    return stat.S_IMODE(st.st_mode)


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (the same inode, or the same resolved path when either is missing)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def refuse_input_targets(outputs: Iterable[tuple[str, Path | None]], inputs: Iterable[Path]) -> None:
    """An output path that is one of the command's inputs is refused before anything is read or written."""
    sources = [Path(p) for p in inputs]
    for option, target in outputs:
        if target is None:
            continue
        for source in sources:
            if same_file(target, source):
                raise OutputError(f"{option} {target}: is one of this command's inputs ({source}); write it elsewhere")


def append_text(path: Path, text: str) -> None:
    """Append to a file others share (a job summary): never blocks, never follows a symlink, never a special file."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, NEW_FILE_MODE)
    except OSError as exc:
        raise OutputError(f"{path}: cannot append: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputError(f"{path}: not a regular file; refusing to append to it")
        data = text.encode("utf-8", errors="replace")
        while data:
            written = os.write(fd, data)
            data = data[written:]
    except OSError as exc:
        raise OutputError(f"{path}: cannot append: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def ensure_dir(path: Path) -> None:
    """Create an output folder (and its parents); a file in the way or no permission is one `OutputError` line."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the output folder: {exc.strerror or exc}") from None


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically; any failure is one `OutputError` line and leaves no temp file."""
    import tempfile  # about 5 ms to import (random, shutil): a run that writes no file never pays it

    path = Path(path)
    mode = _check_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def write_text_atomic(path: Path, text: str) -> None:
    """UTF-8 text, written atomically; characters UTF-8 cannot carry (lone surrogates) become U+FFFD."""
    write_bytes_atomic(path, text.encode("utf-8", errors="replace"))


def figure_bytes(fig: Any, fmt: str, **kwargs: Any) -> bytes:
    """A matplotlib figure rendered in memory (`savefig` into a buffer), ready for `write_bytes_atomic`."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def save_figure(fig: Any, path: Path, **kwargs: Any) -> None:
    """`fig.savefig(path)` through the one writer: never half a picture, never through a planted name."""
    path = Path(path)
    write_bytes_atomic(path, figure_bytes(fig, path.suffix.lstrip(".") or "png", **kwargs))
