"""`python -m matrix`."""

from __future__ import annotations

from matrix.cli.main import run

run()
