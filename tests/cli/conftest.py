"""The fixtures the command-line tests share with tests/core (the default matrix and runners, TOML files)."""

from __future__ import annotations

from tests.core.conftest import default_matrix, runners, write_toml

__all__ = ["default_matrix", "runners", "write_toml"]
