"""Float32 reference for draft decode over a paged cache (imports torch)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def reference_decode(
    query: torch.Tensor,
    k_slots: torch.Tensor,
    v_slots: torch.Tensor,
    *,
    token_slots: torch.Tensor,
    requests: torch.Tensor,
    seq_lens: torch.Tensor,
) -> torch.Tensor:
    """softmax(q K^T / sqrt(d)) V per row in float32, K/V read from the stored (possibly fp8) slots.

    query [rows, Hq, D]; k/v_slots [slots, Hkv, D]; token_slots [bs, ctx] (req_to_token);
    requests [rows] (request of each row); seq_lens [rows]. Returns [rows, Hq, D] float32.
    """
    import torch

    rows, num_q_heads, head_dim = query.shape
    num_kv_heads = k_slots.shape[1]
    group = num_q_heads // num_kv_heads
    scale = 1.0 / math.sqrt(head_dim)
    out = torch.empty(rows, num_q_heads, head_dim, dtype=torch.float32, device=query.device)
    for row in range(rows):
        n = int(seq_lens[row])
        slots = token_slots[int(requests[row]), :n].to(torch.int64)
        k = k_slots.index_select(0, slots).float().repeat_interleave(group, dim=1)  # [n, Hq, D]
        v = v_slots.index_select(0, slots).float().repeat_interleave(group, dim=1)
        q = query[row].float()  # [Hq, D]
        scores = torch.einsum("hd,nhd->hn", q, k) * scale
        out[row] = torch.einsum("hn,nhd->hd", scores.softmax(dim=-1), v)
    return out


def max_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return float((actual.float() - expected.float()).abs().max())
