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


def _per_row(query, k_slots, v_slots, token_slots, requests, seq_lens):  # type: ignore[no-untyped-def]
    """One row at a time over its own length: what the reference computes, written the plain way."""
    out = torch.zeros(query.shape, dtype=torch.float32)
    for row in range(query.shape[0]):
        n = int(seq_lens[row])
        if n:
            slots = token_slots[int(requests[row]), :n].long()
            out[row] = _dense(query[row], k_slots[slots], v_slots[slots])
    return out


def _fixture(cell_id: str):  # type: ignore[no-untyped-def]
    from matrix.gpu.paged import build_requests, expand_rows

    case = draft_case(load_matrix().cell(cell_id))
    paged = build_requests(case, case.max_bs, device="cpu")
    return paged, expand_rows(paged)


@pytest.mark.parametrize("cell_id", CELLS, ids=["bf16-page16", "bf16-page64", "fp8kv"])
@pytest.mark.parametrize("chunk", [None, 1], ids=["one-block", "tiny-blocks"])
def test_all_rows_at_once_match_one_row_at_a_time(cell_id: str, chunk: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Masked to each row's own length (a shorter row, an empty one, junk slots past the length): the same values."""
    from matrix.gpu import reference

    if chunk is not None:
        monkeypatch.setattr(reference, "CHUNK_ELEMENTS", chunk)  # one row per block
    paged, rows = _fixture(cell_id)
    lens = rows.seq_lens.clone()
    lens[1] = 3
    lens[2] = 0
    table = paged.token_slots.clone()
    table[:, int(lens.max()) :] = paged.k_slots.shape[0] - 1  # past every length: a real slot that must not count
    got = reference.reference_decode(
        rows.query, paged.k_slots, paged.v_slots, token_slots=table, requests=rows.requests, seq_lens=lens
    )
    want = _per_row(rows.query, paged.k_slots, paged.v_slots, table, rows.requests, lens)
    assert torch.allclose(got, want, atol=1e-5)
    assert float(got[2].abs().max()) == 0.0


def test_the_reference_reads_nothing_back_to_the_host() -> None:
    """No `int(tensor)` / `.item()` per row: on a GPU each is a synchronisation, and four workers sharing one GPU
    wait for each other's kernels at every one (red on a per-row loop: two reads a row)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from matrix.gpu.reference import reference_decode

    class Reads(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if func is torch.ops.aten._local_scalar_dense.default:
                self.count += 1
            return func(*args, **(kwargs or {}))

    paged, rows = _fixture(CELLS[0])
    with Reads() as reads:
        reference_decode(
            rows.query,
            paged.k_slots,
            paged.v_slots,
            token_slots=paged.token_slots,
            requests=rows.requests,
            seq_lens=rows.seq_lens,
        )
    assert reads.count == 0
