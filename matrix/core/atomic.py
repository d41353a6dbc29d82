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
import tempfile
from pathlib import Path
from typing import Any

from matrix.core.errors import OutputError


def _check_target(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        # Replacing a symlink swaps the link itself for a file, never writes through it.
        return
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{path}: not a regular file; refusing to replace it")


def ensure_dir(path: Path) -> None:
    """Create an output folder (and its parents); a file in the way or no permission is one `OutputError` line."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create the output folder: {exc.strerror or exc}") from None


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically; any failure is one `OutputError` line and leaves no temp file."""
    path = Path(path)
    _check_target(path)
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
        os.chmod(tmp_name, 0o644)
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


def append_text(path: Path, text: str) -> None:
    """Append UTF-8 text to a file another program owns (`$GITHUB_STEP_SUMMARY`): earlier content is kept.

    Only a regular file (or a new one) is appended to; a FIFO or device is refused like `write_text_atomic` does.
    """
    path = Path(path)
    _check_target(path)
    data = text.encode("utf-8", errors="replace")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise OutputError(f"{path}: cannot append: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "ab") as handle:
            handle.write(data)
    except OSError as exc:
        raise OutputError(f"{path}: cannot append: {exc.strerror or exc}") from None
