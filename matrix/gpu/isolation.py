"""Run one cell check in a child process, so a CUDA error costs only that cell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

RESULT_PREFIX = "SPECMATRIX-CELL-RESULT "
CUDA_ERROR_MARKERS = (
    "CUDA error",
    "cudaError",
    "illegal memory access",
    "illegal instruction",
    "CUBLAS_STATUS",
    "device-side assert",
)


class ChildOutcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    CRASHED = "crashed"


class CellCrashed(RuntimeError):
    """The cell's process died or hit a CUDA error; the message carries the error text."""


@dataclass(frozen=True, kw_only=True)
class ChildResult:
    outcome: ChildOutcome
    message: str
    report: Mapping[str, object]
    returncode: int


def cuda_error_line(text: str) -> str | None:
    """The first line naming a CUDA error, if any."""
    for line in text.splitlines():
        if any(marker in line for marker in CUDA_ERROR_MARKERS):
            return line.strip()
    return None


def classify(returncode: int, stdout: str, stderr: str) -> ChildResult:
    """Pure: a child that reported a result passed or failed; anything else crashed."""
    report: dict[str, object] = {}
    for line in stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            report = json.loads(line[len(RESULT_PREFIX) :])
    cuda = cuda_error_line(stderr) or cuda_error_line(stdout)
    if report and returncode in (0, 1) and cuda is None:
        outcome = ChildOutcome.PASSED if returncode == 0 else ChildOutcome.FAILED
        return ChildResult(outcome=outcome, message=str(report.get("message", "")), report=report, returncode=returncode)
    tail = stderr.strip().splitlines()[-1:] or [""]
    message = cuda or f"child exited with {returncode}: {tail[0]}"
    return ChildResult(outcome=ChildOutcome.CRASHED, message=message, report=report, returncode=returncode)


CELL_ENTRY = ("-m", "matrix.gpu.cellrun")


def run_child(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300.0,
    entry: Sequence[str] = CELL_ENTRY,
) -> ChildResult:
    """`python -m matrix.gpu.cellrun ARGS` in a fresh process (same GPU pinning and PYTHONPATH via the environment)."""
    merged = dict(os.environ if env is None else env)
    try:
        proc = subprocess.run(
            [sys.executable, *entry, *args],
            capture_output=True,
            text=True,
            env=merged,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return ChildResult(outcome=ChildOutcome.CRASHED, message=f"timed out after {exc.timeout}s", report={}, returncode=-1)
    return classify(proc.returncode, proc.stdout, proc.stderr)
