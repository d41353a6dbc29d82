"""The matrix's claims about sglang's configuration layer, as pure data and comparisons.

Nothing here imports sglang at module import time; `edge` holds the calls into the real library.
"""

from __future__ import annotations

# sglang releases whose configuration layer the `sglang` nox session has checked (docs/sglang-check.md).
CHECKED_SGLANG_VERSIONS = ("0.5.23",)
