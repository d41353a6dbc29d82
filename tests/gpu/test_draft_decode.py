"""Frozen-KV MTP draft decode and target verify on the GPU, one test per matrix cell and check level (docs/gpu.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.core.levels import LEVEL_CELLS, Level
from matrix.core.model import Cell

pytestmark = pytest.mark.gpu

DraftCheck = Callable[[str, Cell], None]


@pytest.mark.matrix(select=LEVEL_CELLS[Level.KERNEL])
def test_kernel_draft_decode(matrix_cell: Cell, draft_check: DraftCheck) -> None:
    """flashinfer's trtllm decode over bs*topk expanded rows of a paged cache, eager and graph, vs float32."""
    draft_check(Level.KERNEL, matrix_cell)


@pytest.mark.matrix(select=LEVEL_CELLS[Level.SGLANG])
def test_sglang_draft_backend(matrix_cell: Cell, draft_check: DraftCheck) -> None:
    """sglang's draft backend through the Frozen-KV MTP metadata and graph path, vs float32."""
    draft_check(Level.SGLANG, matrix_cell)


@pytest.mark.matrix(select=LEVEL_CELLS[Level.RUNNER])
def test_sglang_graph_runner(matrix_cell: Cell, draft_check: DraftCheck) -> None:
    """sglang's FrozenKVMTPCudaGraphRunner: its own sizing, capture, can_run_graph and padded replay, vs eager and float32."""
    draft_check(Level.RUNNER, matrix_cell)


@pytest.mark.matrix(select=LEVEL_CELLS[Level.TARGET])
def test_kernel_target_verify(matrix_cell: Cell, draft_check: DraftCheck) -> None:
    """flashinfer's trtllm decode with q_len_per_req = num_draft_tokens (chain verify), eager and graph, vs float32."""
    draft_check(Level.TARGET, matrix_cell)


@pytest.mark.matrix(select=LEVEL_CELLS[Level.TARGET_SGLANG])
def test_sglang_target_verify(matrix_cell: Cell, draft_check: DraftCheck) -> None:
    """sglang's target backend in TARGET_VERIFY mode over the draft tokens of each request, vs float32."""
    draft_check(Level.TARGET_SGLANG, matrix_cell)
