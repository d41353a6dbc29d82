"""Read a user-named text file; a missing, unreadable or non-UTF-8 file is one error line of the caller's kind."""

from __future__ import annotations

from pathlib import Path

from matrix.core.errors import SpecmatrixError


def read_text(path: Path, error: type[SpecmatrixError], label: str | None = None) -> str:
    """The file's text, or `error("<label>: cannot read: ...")`; label defaults to the path."""
    where = label if label is not None else str(path)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{where}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise error(f"{where}: not UTF-8 text") from None
