"""The graph-buffer contract on CPU: sized like sglang's backends, the unexpanded max_bs turns red."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from matrix.gpu.cases import GraphRows, expanded_graph_rows, unexpanded_graph_rows
from matrix.gpu.contract import (
    BufferRows,
    ContractViolation,
    check_contract,
    contract_violations,
    triton_buffer_rows,
    trtllm_mha_buffer_rows,
)

MAX_BS = 8


def _shape(rows: int) -> Any:
    return SimpleNamespace(shape=(rows,))


def trtllm_like(max_bs: int, max_num_tokens: int, *, pool_size: int, topk: int) -> Any:
    """Per-sequence buffers from the first argument, as TRTLLMHAAttnBackend.init_cuda_graph_state sizes them."""
    del max_num_tokens, pool_size, topk
    meta = {"cache_seqlens": _shape(max_bs), "page_table": _shape(max_bs), "cu_seqlens_k": _shape(max_bs + 1)}
    return SimpleNamespace(decode_cuda_graph_metadata=meta)


def triton_like(max_bs: int, max_num_tokens: int, *, pool_size: int, topk: int) -> Any:
    """Graph buffers from max_num_tokens; kv_indptr from the worker's widened constructor buffer."""
    del max_bs
    n = max_num_tokens
    return SimpleNamespace(
        kv_indptr=_shape(pool_size * topk + 1),
        cuda_graph_num_kv_splits=_shape(n),
        cuda_graph_attn_logits=_shape(n),
        cuda_graph_attn_lse=_shape(n),
    )


BACKENDS: dict[str, tuple[Callable[..., Any], Callable[[Any], list[BufferRows]]]] = {
    "trtllm_mha": (trtllm_like, trtllm_mha_buffer_rows),
    "triton": (triton_like, triton_buffer_rows),
}


def _violations(backend: str, topk: int, graph_rows: GraphRows) -> list[str]:
    make, read = BACKENDS[backend]
    state = make(graph_rows(MAX_BS, topk), MAX_BS * topk, pool_size=MAX_BS, topk=topk)
    return contract_violations(read(state), max_bs=MAX_BS, topk=topk)


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("topk", [1, 2, 4, 8])
def test_runner_sizing_satisfies_the_contract(backend: str, topk: int) -> None:
    assert _violations(backend, topk, expanded_graph_rows) == []


@pytest.mark.parametrize("topk", [1, 2, 4, 8])
def test_unexpanded_max_bs_is_red_for_trtllm_mha_and_green_for_triton(topk: int) -> None:
    assert bool(_violations("trtllm_mha", topk, unexpanded_graph_rows)) is (topk > 1)
    assert _violations("triton", topk, unexpanded_graph_rows) == []


def test_violation_names_every_short_buffer() -> None:
    with pytest.raises(ContractViolation, match=r"cache_seqlens'\] holds 8 rows < max_bs\*topk = 8\*4 = 32.*page_table"):
        check_contract(trtllm_mha_buffer_rows(trtllm_like(8, 32, pool_size=8, topk=4)), max_bs=8, topk=4)


def test_nothing_to_check_is_a_violation() -> None:
    assert contract_violations([], max_bs=1, topk=1) == ["no per-sequence graph buffers found to check"]
