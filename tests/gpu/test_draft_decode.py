"""Frozen-KV MTP draft decode on the GPU, one test per matrix cell (see docs/gpu.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.core.model import Cell

DraftCheck = Callable[[str, Cell], None]


@pytest.mark.matrix(select="draft-trtllm_mha-*")
def test_kernel_draft_decode(matrix_cell: Cell, draft_check: DraftCheck) -> None:
    """flashinfer's trtllm decode over bs*topk expanded rows of a paged cache, eager and graph, vs float32."""
    draft_check("kernel", matrix_cell)


@pytest.mark.matrix(select="draft-{triton,trtllm_mha}-*")
def test_sglang_draft_backend(matrix_cell: Cell, draft_check: DraftCheck) -> None:
    """sglang's draft backend through the Frozen-KV MTP metadata and graph path, vs float32."""
    draft_check("sglang", matrix_cell)


@pytest.mark.matrix(select="target-trtllm_mha-*")
def test_kernel_target_verify(matrix_cell: Cell, draft_check: DraftCheck) -> None:
    """flashinfer's trtllm decode with q_len_per_req = num_draft_tokens (chain verify), eager and graph, vs float32."""
    draft_check("target", matrix_cell)
