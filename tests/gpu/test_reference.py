"""The float32 reference and the paged tree-draft fixture on CPU (needs torch; skipped without it)."""

from __future__ import annotations

import math

import pytest

from matrix.core.loader import load_matrix
from matrix.gpu.cases import draft_case

pytestmark = pytest.mark.requires_torch

torch = pytest.importorskip("torch")

CELLS = (
    "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph",
    "draft-triton-topk8-page64-hd256-gqa4-bf16-eager",
    "draft-trtllm_mha-topk4-page16-hd64-gqa8-fp8kv-graph",
)


def _dense(query, k, v):  # type: ignore[no-untyped-def]
    group = query.shape[0] // k.shape[1]
    k, v = k.float().repeat_interleave(group, 1), v.float().repeat_interleave(group, 1)
    scores = torch.einsum("hd,nhd->hn", query.float(), k) / math.sqrt(query.shape[-1])
    return torch.einsum("hn,nhd->hd", scores.softmax(-1), v)


@pytest.mark.parametrize("cell_id", CELLS, ids=["bf16-page16", "bf16-page64", "fp8kv"])
def test_reference_matches_attention_over_the_block_table(cell_id: str) -> None:
    from matrix.gpu.paged import build_requests, expand_rows
    from matrix.gpu.reference import reference_decode

    case = draft_case(load_matrix().cell(cell_id))
    paged = build_requests(case, case.max_bs, device="cpu")
    rows = expand_rows(paged)
    out = reference_decode(
        rows.query, paged.k_slots, paged.v_slots, token_slots=paged.token_slots, requests=rows.requests, seq_lens=rows.seq_lens
    )
    k_pages, v_pages = paged.paged_kv()
    for row in range(rows.query.shape[0]):
        n = int(rows.seq_lens[row])
        pages = rows.block_tables[row].tolist()
        k = torch.cat([k_pages[p] for p in pages])[:n]
        v = torch.cat([v_pages[p] for p in pages])[:n]
        assert torch.allclose(out[row], _dense(rows.query[row], k, v), atol=1e-5)


def test_branches_share_their_request_prefix_and_page_zero_is_never_used() -> None:
    from matrix.gpu.paged import build_requests, expand_rows

    case = draft_case(load_matrix().cell(CELLS[0]))
    paged = build_requests(case, case.max_bs, device="cpu")
    rows = expand_rows(paged)
    assert rows.query.shape[0] == case.max_bs * case.topk
    for r in range(case.max_bs):
        branch = rows.block_tables[r * case.topk : (r + 1) * case.topk]
        assert (branch == paged.page_ids[r]).all()
        assert not torch.equal(rows.query[r * case.topk], rows.query[r * case.topk + 1])
    assert int(paged.page_ids.min()) >= 1


def test_a_wrong_prefix_is_caught() -> None:
    """Planted bug: branches reading the neighbouring request's pages differ from the reference."""
    from matrix.gpu.paged import build_requests, expand_rows
    from matrix.gpu.reference import reference_decode

    case = draft_case(load_matrix().cell(CELLS[0]))
    paged = build_requests(case, case.max_bs, device="cpu")
    rows = expand_rows(paged)
    good = reference_decode(
        rows.query, paged.k_slots, paged.v_slots, token_slots=paged.token_slots, requests=rows.requests, seq_lens=rows.seq_lens
    )
    shifted = (rows.requests + 1) % case.max_bs
    bad = reference_decode(
        rows.query, paged.k_slots, paged.v_slots, token_slots=paged.token_slots, requests=shifted, seq_lens=rows.seq_lens
    )
    assert float((good - bad).abs().max()) > 0.1
