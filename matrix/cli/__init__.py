"""The `specmatrix` command line: `main` (the one error boundary) and one module per command group."""

from __future__ import annotations

from matrix.cli.main import main, run

__all__ = ["main", "run"]
