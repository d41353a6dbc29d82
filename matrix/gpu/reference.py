"""Float32 reference for draft decode over a paged cache (imports torch)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# Elements of one gathered K (or V) block, [rows, width, Hkv, D] float32: 256 MiB each at most, whatever the case.
CHUNK_ELEMENTS = 1 << 26


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
    requests [rows] (request of each row); seq_lens [rows]. Returns [rows, Hq, D] float32; a row of length 0 is zeros.

    All rows at once, each over the full width of token_slots with the positions at or past its length masked out:
    no value is read back to the host. A per-row loop asked the device for each row's length and request (two
    synchronisations a row, a few hundred per runner cell), and with four workers time-slicing one GPU each of those
    waited for the others' kernels (results/gpu-h200.md).
    """
    import torch

    rows, num_q_heads, head_dim = query.shape
    num_kv_heads = k_slots.shape[1]
    group = num_q_heads // num_kv_heads
    width = token_slots.shape[1]
    scale = 1.0 / math.sqrt(head_dim)
    out = torch.empty(rows, num_q_heads, head_dim, dtype=torch.float32, device=query.device)
    step = max(1, CHUNK_ELEMENTS // max(1, width * num_kv_heads * head_dim))
    positions = torch.arange(width, device=token_slots.device)
    for first in range(0, rows, step):
        last = min(rows, first + step)
        lens = seq_lens[first:last].to(device=token_slots.device, dtype=torch.int64)
        valid = positions[None, :] < lens[:, None]  # [r, width]
        slots = token_slots.index_select(0, requests[first:last].to(device=token_slots.device, dtype=torch.int64))
        # Past a row's length the table holds whatever the fixture left there: read slot 0 instead, masked below.
        slots = torch.where(valid, slots.to(torch.int64), 0).to(k_slots.device)
        flat = slots.flatten()  # index_select, as before: it takes the fp8 slot dtypes
        k = k_slots.index_select(0, flat).view(last - first, width, num_kv_heads, head_dim).float()
        v = v_slots.index_select(0, flat).view(last - first, width, num_kv_heads, head_dim).float()
        q = query[first:last].float().view(last - first, num_kv_heads, group, head_dim)  # head h reads kv head h // group
        scores = torch.einsum("rkgd,rnkd->rkgn", q, k) * scale
        scores = scores.masked_fill(~valid.to(scores.device)[:, None, None, :], float("-inf"))
        chunk = torch.einsum("rkgn,rnkd->rkgd", scores.softmax(dim=-1), v).reshape(last - first, num_q_heads, head_dim)
        # A row of length 0 attends to nothing (all -inf, NaN after softmax): zeros, as an empty sum is; a NaN
        # anywhere else (in K, V or the query) stays in the reference.
        out[first:last] = torch.where((lens > 0).to(chunk.device)[:, None, None], chunk, 0.0)
    return out


def max_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return float((actual.float() - expected.float()).abs().max())
