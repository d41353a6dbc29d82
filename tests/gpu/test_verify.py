"""Target verify pieces on CPU: the XQA mask bits, per-token visibility, the causal reference (needs torch)."""

from __future__ import annotations

import pytest

from matrix.core.loader import load_matrix
from matrix.gpu.cases import draft_case

pytestmark = pytest.mark.requires_torch

torch = pytest.importorskip("torch")

CELL = "target-trtllm_mha-topk1-page64-hd128-dt5-gqa4-bf16-graph"


@pytest.mark.parametrize("q_len", [1, 2, 5, 16, 17, 33])
def test_mask_bit_j_of_row_i_is_set_exactly_when_j_le_i(q_len: int) -> None:
    from matrix.gpu.verify import causal_spec_mask

    mask = causal_spec_mask(3, q_len, "cpu")
    assert mask.dtype == torch.uint16
    assert tuple(mask.shape) == (3, q_len, (q_len + 31) // 32 * 2)
    words = mask[1].to(torch.int32)
    for i in range(q_len):
        for j in range(words.shape[1] * 16):
            bit = (int(words[i, j // 16]) >> (j % 16)) & 1
            assert bit == int(j <= i), (i, j)


def test_target_cell_case_and_visibility() -> None:
    from matrix.gpu.paged import build_requests
    from matrix.gpu.verify import verify_rows

    matrix = load_matrix()
    cell = matrix.cell(CELL)
    case = draft_case(cell)
    assert (case.q_len, case.topk, case.page_size) == (5, 1, 64)
    assert min(case.seq_lens) >= case.q_len
    paged = build_requests(case, case.max_bs, device="cpu")
    rows = verify_rows(paged)
    assert rows.query.shape[0] == case.max_bs * 5
    lens = [int(n) for n in paged.seq_lens]
    expected = [n - 5 + i + 1 for n in lens for i in range(5)]
    assert rows.token_lens.tolist() == expected
    assert rows.head(3).token_lens.tolist() == expected[:15]


def test_reference_over_verify_rows_is_causal_attention() -> None:
    import math

    from matrix.gpu.paged import build_requests
    from matrix.gpu.reference import reference_decode
    from matrix.gpu.verify import verify_rows

    matrix = load_matrix()
    case = draft_case(matrix.cell(CELL))
    paged = build_requests(case, 2, device="cpu")
    rows = verify_rows(paged)
    out = reference_decode(
        rows.query,
        paged.k_slots,
        paged.v_slots,
        token_slots=paged.token_slots,
        requests=rows.token_requests,
        seq_lens=rows.token_lens,
    )
    group = case.num_q_heads // case.num_kv_heads
    for r in range(2):
        n = int(paged.seq_lens[r])
        slots = paged.token_slots[r, :n].long()
        k = paged.k_slots[slots].float().repeat_interleave(group, 1)
        v = paged.v_slots[slots].float().repeat_interleave(group, 1)
        q = rows.query[r * case.q_len : (r + 1) * case.q_len].float()  # [q_len, H, D]
        scores = torch.einsum("qhd,nhd->hqn", q, k) / math.sqrt(case.head_dim)
        causal = torch.arange(n)[None, :] <= (n - case.q_len + torch.arange(case.q_len))[:, None]
        scores = scores.masked_fill(~causal[None], float("-inf"))
        dense = torch.einsum("hqn,nhd->qhd", scores.softmax(-1), v)
        assert torch.allclose(out[r * case.q_len : (r + 1) * case.q_len], dense, atol=1e-5)
