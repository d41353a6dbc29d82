"""Frozen-KV MTP's draft backend resolution and the trtllm_mha graph-buffer contract, run in the installed sglang on CPU."""

from __future__ import annotations

import pytest

from matrix.gpu.cases import branch_requests
from matrix.sglang_check import edge
from matrix.sglang_check.buffers import TRTLLM_MHA_TARGET_VERIFY, row_shortfalls
from matrix.sglang_check.resolution import ResolutionCase, resolution_cases, resolve_draft_backend

CASES = resolution_cases(["triton", "trtllm_mha"])
WRONG_ORDER = ("decode_attention_backend", "speculative_draft_attention_backend", "attention_backend")
MAX_NUM_PAGES = 8


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_draft_backend_resolution_order(case: ResolutionCase) -> None:
    assert edge.resolved_draft_backend(case.as_dict()) == resolve_draft_backend(case.as_dict())


def test_a_wrong_resolution_order_is_reported() -> None:
    wrong = [c.id for c in CASES if edge.resolved_draft_backend(c.as_dict()) != resolve_draft_backend(c.as_dict(), WRONG_ORDER)]
    assert "speculative_draft=triton-decode=trtllm_mha-attention=triton" in wrong


@pytest.mark.parametrize("topk", [2, 4, 8])
@pytest.mark.parametrize("max_bs", [1, 8, 48])
def test_expanded_sizing_holds_every_branch(topk: int, max_bs: int) -> None:
    backend = edge.trtllm_mha_without_init(num_draft_tokens=4, max_num_pages=MAX_NUM_PAGES)
    backend.init_cuda_graph_state(max_bs * topk, max_bs * topk)
    assert row_shortfalls(edge.graph_buffer_shapes(backend), max_bs * topk) == ()


@pytest.mark.parametrize("topk", [2, 4, 8])
def test_unexpanded_sizing_is_caught(topk: int) -> None:
    """The planted bug: the runner passing max_bs instead of max_bs * topk leaves every per-sequence buffer short."""
    max_bs = 8
    backend = edge.trtllm_mha_without_init(num_draft_tokens=4, max_num_pages=MAX_NUM_PAGES)
    backend.init_cuda_graph_state(max_bs, max_bs * topk)
    short = row_shortfalls(edge.graph_buffer_shapes(backend), max_bs * topk)
    assert [s.buffer for s in short] == ["cache_seqlens", "page_table", "page_table_draft_decode", "cu_seqlens_q", "cu_seqlens_k"]
    assert short[0].message == f"cache_seqlens: {max_bs} rows < {max_bs * topk} needed"


@pytest.mark.parametrize("topk", [1, 2, 4, 8])
def test_frozen_graph_runner_sizes_its_draft_backend_for_every_branch(topk: int) -> None:
    """sglang's own FrozenKVMTPCudaGraphRunner.__init__, stopped right after it sized a real trtllm_mha backend."""
    backend = edge.trtllm_mha_without_init(num_draft_tokens=4, max_num_pages=MAX_NUM_PAGES)
    max_bs, calls = edge.frozen_runner_sizing(backend, topk=topk, capture_bs=[1, 2, 4, 8])
    assert max_bs == 8
    assert len(calls) == 1
    assert row_shortfalls(edge.graph_buffer_shapes(backend), max_bs * topk) == ()


SEQ_LENS = [1, 15, 16, 17, 32, 47, 67, 80]


@pytest.mark.parametrize("topk", [1, 2, 4, 8])
def test_expand_for_topk_draft_keeps_a_requests_branches_adjacent(topk: int) -> None:
    """sglang's expansion: row i is request i // topk, with that request's own length (the GPU cells rely on it)."""
    pool_rows, lens = edge.expanded_rows(SEQ_LENS, topk)
    requests = list(branch_requests(len(SEQ_LENS), topk))
    assert pool_rows == requests
    assert lens == [SEQ_LENS[r] for r in requests]


@pytest.mark.parametrize("num_draft_tokens", [1, 2, 4, 16])
def test_target_verify_buffers_hold_every_request(num_draft_tokens: int) -> None:
    """The target's graph runner sizes trtllm_mha for max_bs verify requests: the contract compares with max_bs."""
    shapes = edge.target_verify_shapes(max_bs=8, num_draft_tokens=num_draft_tokens, max_num_pages=MAX_NUM_PAGES)
    assert row_shortfalls(shapes, 8, TRTLLM_MHA_TARGET_VERIFY) == ()


def test_target_verify_contract_catches_a_short_buffer() -> None:
    shapes = edge.target_verify_shapes(max_bs=8, num_draft_tokens=4, max_num_pages=MAX_NUM_PAGES)
    assert [s.buffer for s in row_shortfalls(shapes, 16, TRTLLM_MHA_TARGET_VERIFY)] == list(TRTLLM_MHA_TARGET_VERIFY)


@pytest.mark.parametrize("topk", [1, 2, 4, 8])
@pytest.mark.parametrize("backend", ["triton", "trtllm_mha"])
def test_the_worker_builds_the_requested_draft_backend(backend: str, topk: int) -> None:
    """sglang's own FrozenKVMTPDraftWorker._init_draft_attn_backend builds the backend the cell names (by name)."""
    fields = {"attention_backend": backend, "speculative_algorithm": "FROZEN_KV_MTP", "speculative_eagle_topk": topk}
    verdict = edge.draft_backend_verdict(fields, topk)
    assert verdict.accepted, verdict.message
    assert verdict.backend == backend


PAIRS = [(draft, target) for draft in ("triton", "trtllm_mha") for target in ("triton", "trtllm_mha", "flashinfer", "fa3")]


@pytest.mark.parametrize("topk", [1, 4])
@pytest.mark.parametrize(("draft", "target"), PAIRS, ids=[f"{d}-on-{t}" for d, t in PAIRS])
def test_the_draft_backend_is_chosen_apart_from_the_target(draft: str, target: str, topk: int) -> None:
    """--attention-backend TARGET --speculative-draft-attention-backend DRAFT: sglang's own resolution (the draft
    runner's, for topk 1; the worker's, for topk > 1) builds the draft's backend, whatever the target runs."""
    fields = {
        "attention_backend": target,
        "speculative_draft_attention_backend": draft,
        "speculative_algorithm": "FROZEN_KV_MTP",
        "speculative_eagle_topk": topk,
    }
    verdict = edge.draft_backend_verdict(fields, topk)
    assert verdict.accepted, verdict.message
    assert verdict.backend == draft, f"target {target}: sglang built {verdict.backend} for the draft, expected {draft}"
