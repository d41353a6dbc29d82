"""Target verify (chain, topk 1) over the paged cache: query tokens, visibility and XQA's mask (imports torch).

Each request's last `q_len` KV entries are the draft tokens under verification; query token i of a
request of length n sees its first n - q_len + i + 1 entries (causal), the way trtllm_mha's target
verify calls the decode kernel with `q_len_per_req` and the full KV length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from matrix.gpu.paged import PagedRequests, torch_dtype

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True, kw_only=True)
class VerifyRows:
    """`bs` requests with `q_len` query tokens each, and what every query token may see."""

    q_len: int
    query: torch.Tensor  # [bs*q_len, num_q_heads, head_dim], a request's tokens adjacent
    block_tables: torch.Tensor  # [bs, pages_per_seq] int32
    seq_lens: torch.Tensor  # [bs] int32: whole KV length, the query tokens included
    token_requests: torch.Tensor  # [bs*q_len] int64
    token_lens: torch.Tensor  # [bs*q_len] int32: KV entries each query token sees

    def head(self, bs: int) -> VerifyRows:
        n = bs * self.q_len
        return VerifyRows(
            q_len=self.q_len,
            query=self.query[:n],
            block_tables=self.block_tables[:bs],
            seq_lens=self.seq_lens[:bs],
            token_requests=self.token_requests[:n],
            token_lens=self.token_lens[:n],
        )


def verify_rows(paged: PagedRequests, *, seed: int = 1) -> VerifyRows:
    """Random queries for the last `q_len` tokens of every request."""
    import torch

    case = paged.case
    q_len = case.q_len
    device = paged.seq_lens.device
    gen = torch.Generator(device="cpu").manual_seed(seed)
    bs = paged.bs
    query = torch.randn(bs * q_len, case.num_q_heads, case.head_dim, generator=gen).to(torch_dtype(case.q_dtype)).to(device)
    requests = torch.arange(bs, device=device).repeat_interleave(q_len)
    step = torch.arange(q_len, device=device, dtype=torch.int32).repeat(bs)
    lens = paged.seq_lens.repeat_interleave(q_len)
    return VerifyRows(
        q_len=q_len,
        query=query,
        block_tables=paged.page_ids,
        seq_lens=paged.seq_lens,
        token_requests=requests,
        token_lens=(lens - q_len + step + 1).to(torch.int32),
    )


def causal_spec_mask(bs: int, q_len: int, device: str | torch.device) -> torch.Tensor:
    """XQA's speculative-decoding mask: uint16 words per query row, bit j of row i set when j <= i.

    Shape [bs, q_len, 2 * ceil(q_len / 32)]; word w of row i holds the bits j in [16w, 16w + 16).
    """
    import torch

    words = (q_len + 31) // 32 * 2
    row = torch.arange(q_len, dtype=torch.int32)[:, None]
    word = torch.arange(words, dtype=torch.int32)[None, :]
    visible = (row + 1 - 16 * word).clamp(0, 16)
    # Computed in int32: the all-ones word 0xFFFF only fits uint16 once it is built.
    mask = ((1 << visible) - 1).to(torch.uint16)
    return mask.unsqueeze(0).expand(bs, -1, -1).contiguous().to(device)


def kernel_needs_mask(device: str | torch.device) -> bool:
    """flashinfer's 'auto' backend is XQA except on major 10 (trtllm-gen); XQA asks for a mask when q_len > 1."""
    import torch

    major: int = torch.cuda.get_device_capability(device)[0]
    return major != 10
