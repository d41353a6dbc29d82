"""The `specmatrix` command line: `main` (the one error boundary) and one module per command group.

This module parses and runs on any Python 3: an older interpreter, or one without a runtime dependency, gets one
line and exit 2 from `run` before any module that needs them is imported (never a traceback).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

MINIMUM_PYTHON = (3, 11)
# The runtime dependencies (import name -> what installs it: pip's name, and Debian's package where one is named;
# the others are installed with pip, at the versions pyproject.toml asks for).
DEPENDENCIES: dict[str, tuple[str, str | None]] = {
    "packaging": ("packaging", "python3-packaging"),
    "yaml": ("pyyaml", "python3-yaml"),
    "tree_sitter": ("tree-sitter", None),
    "tree_sitter_bash": ("tree-sitter-bash", None),
    "jq": ("jq", None),
    "pytest": ("pytest", "python3-pytest"),
    "_pytest": ("pytest", "python3-pytest"),  # pytest-audit imports pytest's own config and expression modules
}
EXIT_USAGE = 2  # matrix.core.errors.EXIT_USAGE, which an old interpreter cannot import


def too_old(version: tuple[int, ...]) -> str | None:
    """The error for an interpreter older than MINIMUM_PYTHON, else None."""
    if tuple(version[:2]) >= MINIMUM_PYTHON:
        return None
    given = ".".join(str(part) for part in version[:3])
    needed = ".".join(str(part) for part in MINIMUM_PYTHON)
    return f"needs Python {needed} or newer; this is Python {given} ({sys.executable})"


def missing_dependency(exc: ImportError) -> str | None:
    """The error for a dependency that is not installed, else None (any other import error is a bug)."""
    name = (exc.name or "").partition(".")[0]
    if not isinstance(exc, ModuleNotFoundError) or name not in DEPENDENCIES:
        return None
    pip, debian = DEPENDENCIES[name]
    debian_line = f"; Debian and Ubuntu: apt install {debian}" if debian else ""
    return f"the Python package {pip!r} is not installed for {sys.executable} (pip install {pip}{debian_line})"


def _refuse(line: str) -> NoReturn:
    print(f"specmatrix: error: {line}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    """`matrix.cli.main.main`, imported on the first call."""
    from matrix.cli.main import main as main_

    return main_(argv)


def run() -> NoReturn:
    """`python -m matrix` and the `specmatrix` script: check the interpreter and dependencies, then run."""
    line = too_old(tuple(sys.version_info[:3]))
    if line is not None:
        _refuse(line)
    try:
        from matrix.cli.main import run as run_
    except ImportError as exc:
        line = missing_dependency(exc)
        if line is None:
            raise
        _refuse(line)
    run_()


__all__ = ["main", "run"]
