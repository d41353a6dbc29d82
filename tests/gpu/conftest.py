"""GPU cell fixtures: run one check in-process, or in a child process when the cell may crash.

Nothing here imports torch at module level: on a machine without a GPU every cell
is an expected skip applied by the specmatrix plugin before any fixture runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from matrix.core.model import Cell
from matrix.gpu.cases import SIZING_PLANTS, draft_case, expanded_graph_rows
from matrix.gpu.config_scheduler import pytest_xdist_make_scheduler  # noqa: F401 (a hook: --dist loadgroup by config)
from matrix.gpu.isolation import ChildOutcome, cuda_error_line, run_child
from matrix.plugin import CRASHED_PROPERTY

# Warnings sglang itself raises on a CPU-only import (the *_torch.py tests here and tests/sglang); all else errors.
SGLANG_CPU_IMPORT_WARNINGS = (
    "ignore:Only CUDA, MUSA and NPU support GGUF quantization currently:UserWarning",
    "ignore:Only CUDA, HIP and XPU support AWQ currently:UserWarning",
    "ignore:Triton is not supported on current platform, roll back to CPU:UserWarning",
)

# Test-only switches, read here and nowhere else (the mutation run of docs/gpu.md).
SIZING_PLANT_ENV = "SPECMATRIX_GPU_SIZING_PLANT"  # e.g. unexpanded-max-bs: the harness sizes for max_bs, not max_bs*topk
PLANT_ENV = "SPECMATRIX_GPU_PLANT"  # illegal-address: a page id far past the cache, a real CUDA error
ISOLATE_ENV = "SPECMATRIX_GPU_ISOLATE"  # 1: every cell in its own process


@dataclass
class _ProcessState:
    """Set once a CUDA error poisoned this worker's context: later cells then run in fresh processes."""

    poisoned: str | None = None


_STATE = _ProcessState()


def _crash(request: pytest.FixtureRequest, message: str) -> None:
    request.node.user_properties.append((CRASHED_PROPERTY, message))
    pytest.fail(f"crashed: {message}", pytrace=False)


def _record(timing: Any, report: dict[str, Any]) -> None:
    for key in ("compile_seconds", "setup_seconds"):
        if isinstance(report.get(key), int | float):
            timing.record(key, float(report[key]))


def _isolated(level: str, cell: Cell, request: pytest.FixtureRequest, timing: Any) -> None:
    args = [cell.id, "--level", level]
    plant = os.environ.get(SIZING_PLANT_ENV)
    if plant:
        args += ["--sizing-plant", plant]
    if os.environ.get(PLANT_ENV):
        args += ["--plant", os.environ[PLANT_ENV]]
    result = run_child(args)
    _record(timing, dict(result.report))
    if result.outcome is ChildOutcome.CRASHED:
        _crash(request, result.message)
    if result.outcome is ChildOutcome.FAILED:
        pytest.fail(result.message, pytrace=False)


def _in_process(level: str, cell: Cell, request: pytest.FixtureRequest, timing: Any) -> None:
    from matrix.gpu.checks import CHECKS, raise_on_problems

    case = draft_case(cell)
    plant = os.environ.get(SIZING_PLANT_ENV)
    graph_rows = SIZING_PLANTS[plant] if plant else expanded_graph_rows
    try:
        report = CHECKS[level](case, graph_rows=graph_rows)
    except RuntimeError as exc:
        cuda = cuda_error_line(str(exc))
        if cuda is None:
            raise
        _STATE.poisoned = cuda
        _crash(request, cuda)
        return
    _record(timing, report.as_dict())
    raise_on_problems(report, case)


@pytest.fixture
def draft_check(request: pytest.FixtureRequest, matrix_timing: Any) -> Callable[[str, Cell], None]:
    """`draft_check(level, matrix_cell)` (a level of matrix/core/levels.py): run the check; fail or crash the test."""

    def run(level: str, cell: Cell) -> None:
        # The sizing plant stays in-process: the contract check turns it red before any capture can crash.
        crash_prone = bool(os.environ.get(PLANT_ENV) or os.environ.get(ISOLATE_ENV))
        if os.environ.get(SIZING_PLANT_ENV, "") not in ("", *SIZING_PLANTS):
            raise pytest.UsageError(f"{SIZING_PLANT_ENV} must be one of {sorted(SIZING_PLANTS)}")
        if crash_prone or _STATE.poisoned:
            _isolated(level, cell, request, matrix_timing)
        else:
            _in_process(level, cell, request, matrix_timing)

    return run
