"""Read a user-named text file; a missing, unreadable, oversized or non-UTF-8 file is one error line of the caller's kind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from matrix.core.errors import SpecmatrixError

MAX_TEXT_BYTES = 256 * 1024 * 1024  # reports of 20,000 cells are about 10 MiB; matrix and runner files a few KiB


def read_text(path: Path, error: type[SpecmatrixError], label: str | None = None, *, limit: int = MAX_TEXT_BYTES) -> str:
    """The file's text, or `error("<label>: cannot read: ...")`; label defaults to the path."""
    where = label if label is not None else str(path)
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise error(f"{where}: is a directory, not a file")
            # Read one byte past the limit: a FIFO or a growing file has no trustworthy size.
            data = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"{where}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{where}: larger than {limit // (1024 * 1024)} MiB; refusing to read it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start})") from None
