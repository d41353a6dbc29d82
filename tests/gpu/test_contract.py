"""The graph-buffer contract on CPU: sized like sglang's backends, the unexpanded max_bs turns red, a missing buffer too."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from matrix.gpu.cases import GraphRows, expanded_graph_rows, unexpanded_graph_rows
from matrix.gpu.contract import (
    BUFFER_READERS,
    ContractViolation,
    check_contract,
    check_draft_backend,
    contract_violations,
    draft_rows,
)
from matrix.sglang_check.buffers import TRTLLM_MHA_PER_SEQUENCE

MAX_BS = 8


def _shape(rows: int) -> Any:
    return SimpleNamespace(shape=(rows, 4))


def trtllm_like(max_bs: int, max_num_tokens: int, *, pool_size: int, topk: int) -> Any:
    """Per-sequence buffers from the first argument, as TRTLLMHAAttnBackend.init_cuda_graph_state sizes them."""
    del max_num_tokens, pool_size, topk
    meta: dict[object, Any] = {
        "cache_seqlens": _shape(max_bs),
        "page_table": _shape(max_bs),
        "swa_page_table": None,
        "page_table_draft_decode": _shape(max_bs),
        "cu_seqlens_q": _shape(max_bs + 1),
        "cu_seqlens_k": _shape(max_bs + 1),
        4: SimpleNamespace(),  # per-batch-size metadata sglang files under int keys after capture
    }
    return SimpleNamespace(decode_cuda_graph_metadata=meta, speculative_num_draft_tokens=4)


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


MAKERS: dict[str, Callable[..., Any]] = {"trtllm_mha": trtllm_like, "triton": triton_like}


def _violations(backend: str, topk: int, graph_rows: GraphRows) -> list[str]:
    state = MAKERS[backend](graph_rows(MAX_BS, topk), MAX_BS * topk, pool_size=MAX_BS, topk=topk)
    shapes, contract = BUFFER_READERS[backend](state)
    rows, what = draft_rows(MAX_BS, topk)
    return contract_violations(shapes, contract, rows=rows, what=what)


@pytest.mark.parametrize("backend", sorted(MAKERS))
@pytest.mark.parametrize("topk", [1, 2, 4, 8])
def test_runner_sizing_satisfies_the_contract(backend: str, topk: int) -> None:
    assert _violations(backend, topk, expanded_graph_rows) == []


@pytest.mark.parametrize("topk", [1, 2, 4, 8])
def test_unexpanded_max_bs_is_red_for_trtllm_mha_and_green_for_triton(topk: int) -> None:
    assert bool(_violations("trtllm_mha", topk, unexpanded_graph_rows)) is (topk > 1)
    assert _violations("triton", topk, unexpanded_graph_rows) == []


@pytest.mark.parametrize("missing", sorted(TRTLLM_MHA_PER_SEQUENCE))
def test_a_missing_buffer_is_a_shortfall_not_a_pass(missing: str) -> None:
    state = trtllm_like(32, 32, pool_size=8, topk=4)
    del state.decode_cuda_graph_metadata[missing]
    with pytest.raises(ContractViolation, match=rf"{missing}: missing \(needs \d+ rows\)"):
        check_draft_backend("trtllm_mha", state, max_bs=8, topk=4)


def test_a_missing_triton_buffer_is_a_shortfall() -> None:
    state = triton_like(8, 32, pool_size=8, topk=4)
    del state.cuda_graph_attn_lse
    with pytest.raises(ContractViolation, match="cuda_graph_attn_lse: missing"):
        check_draft_backend("triton", state, max_bs=8, topk=4)


def test_violation_names_every_short_buffer() -> None:
    shapes, contract = BUFFER_READERS["trtllm_mha"](trtllm_like(8, 32, pool_size=8, topk=4))
    with pytest.raises(ContractViolation, match=r"cache_seqlens: 8 rows < 32 needed \(max_bs\*topk = 8\*4\).*page_table"):
        check_contract(shapes, contract, rows=32, what="max_bs*topk = 8*4")


def test_nothing_to_check_is_a_violation() -> None:
    assert contract_violations({}, {}, rows=1, what="x") == ["no per-sequence graph buffers named to check"]


def test_a_backend_without_a_reader_claims_nothing() -> None:
    check_draft_backend("flashinfer", SimpleNamespace(), max_bs=8, topk=1)
