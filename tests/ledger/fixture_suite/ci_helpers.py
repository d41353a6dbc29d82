"""Stand-ins for the suite's CI helpers: registrations are no-ops at run time, GPU facts come from SPECMATRIX_DETECT.

The real helpers ask torch; this fixture runs on machines without a GPU, so the (faked) machine description the
ledger hook also reads is the one source of truth here.
"""

from __future__ import annotations

import json
import os


def register_cuda_ci(est_time: float, suite: str | None = None, nightly: bool = False, disabled: str | None = None) -> None:
    """Read from the syntax tree by the runner and the audits; does nothing when the file runs."""


def register_cpu_ci(est_time: float, suite: str | None = None, nightly: bool = False, disabled: str | None = None) -> None:
    """Read from the syntax tree by the runner and the audits; does nothing when the file runs."""


def _major() -> int | None:
    facts = json.loads(os.environ.get("SPECMATRIX_DETECT") or "{}")
    capability = facts.get("capability")
    return int(capability[0]) if facts.get("gpus") and capability else None


def is_sm90_supported() -> bool:
    return _major() == 9


def is_sm100_supported() -> bool:
    return _major() == 10


def is_sm120_supported() -> bool:
    return _major() == 12


def is_in_ci() -> bool:
    return os.environ.get("SGLANG_IS_IN_CI", "").lower() in ("1", "true")
