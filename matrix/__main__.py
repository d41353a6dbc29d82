"""`python -m matrix`."""

from __future__ import annotations

from matrix.cli import run

run()
