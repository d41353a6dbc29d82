"""Paged KV cache holding `bs` requests, expanded into `bs*topk` draft rows (imports torch).

The layout is the one sglang's pools use: one slot per token, page p owns slots
[p*page_size, (p+1)*page_size), page 0 is never handed out (padding rows point
there), and each request's pages are scattered, not contiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from matrix.gpu.cases import DraftCase, branch_requests

if TYPE_CHECKING:
    import torch

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8_e4m3": "float8_e4m3fn"}


def torch_dtype(name: str) -> torch.dtype:
    import torch

    return getattr(torch, DTYPES[name])


@dataclass(frozen=True, kw_only=True)
class PagedRequests:
    """Token slots and page ids of `bs` requests plus the K/V slot tensors."""

    case: DraftCase
    page_ids: torch.Tensor  # [bs, pages_per_seq] int32, page 0 unused
    token_slots: torch.Tensor  # [bs, context_len] int32 (sglang req_to_token rows)
    seq_lens: torch.Tensor  # [bs] int32
    k_slots: torch.Tensor  # [num_slots, num_kv_heads, head_dim] in the KV dtype
    v_slots: torch.Tensor

    @property
    def bs(self) -> int:
        return int(self.seq_lens.shape[0])

    @property
    def num_pages(self) -> int:
        return int(self.k_slots.shape[0]) // self.case.page_size

    def paged_kv(self) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V as [num_pages, page_size, kv_heads, head_dim] views (NHD)."""
        c = self.case
        shape = (self.num_pages, c.page_size, c.num_kv_heads, c.head_dim)
        return self.k_slots.view(shape), self.v_slots.view(shape)


@dataclass(frozen=True, kw_only=True)
class DraftRows:
    """The `bs*topk` single-token draft sequences: every branch reads its request's prefix."""

    requests: torch.Tensor  # [rows] int64 request index
    block_tables: torch.Tensor  # [rows, pages_per_seq] int32
    seq_lens: torch.Tensor  # [rows] int32
    query: torch.Tensor  # [rows, num_q_heads, head_dim]

    def head(self, n: int) -> DraftRows:
        """The first `n` rows (the branches of the first n/topk requests)."""
        return DraftRows(
            requests=self.requests[:n], block_tables=self.block_tables[:n], seq_lens=self.seq_lens[:n], query=self.query[:n]
        )


def build_requests(case: DraftCase, bs: int, *, device: str, seed: int = 0) -> PagedRequests:
    """Random K/V for `bs` requests on scattered pages of one slot pool."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    lens = case.lens_for(bs)
    per_seq = case.pages_per_seq
    num_pages = 1 + bs * per_seq
    order = torch.randperm(num_pages - 1, generator=gen) + 1
    page_ids = order.view(bs, per_seq).to(torch.int32)
    pos = torch.arange(case.context_len)
    token_slots = torch.zeros(bs, case.context_len, dtype=torch.int32)
    for r in range(bs):
        pages = page_ids[r].to(torch.int64)
        within = pos[: per_seq * case.page_size]
        token_slots[r, : within.numel()] = (pages[within // case.page_size] * case.page_size + within % case.page_size).to(
            torch.int32
        )
    slots = num_pages * case.page_size
    kv_shape = (slots, case.num_kv_heads, case.head_dim)
    k = torch.randn(kv_shape, generator=gen)
    v = torch.randn(kv_shape, generator=gen)
    kv_dtype = torch_dtype(case.kv_dtype)
    return PagedRequests(
        case=case,
        page_ids=page_ids.to(device),
        token_slots=token_slots.to(device),
        seq_lens=torch.tensor(lens, dtype=torch.int32, device=device),
        k_slots=k.to(kv_dtype).to(device),
        v_slots=v.to(kv_dtype).to(device),
    )


def expand_rows(paged: PagedRequests, *, seed: int = 1) -> DraftRows:
    """Expand like Frozen-KV MTP: `topk` adjacent rows per request, same prefix pages, own query."""
    import torch

    case = paged.case
    device = paged.seq_lens.device
    gen = torch.Generator(device="cpu").manual_seed(seed)
    req = torch.tensor(branch_requests(paged.bs, case.topk), dtype=torch.int64, device=device)
    rows = int(req.numel())
    query = torch.randn(rows, case.num_q_heads, case.head_dim, generator=gen).to(torch_dtype(case.q_dtype)).to(device)
    return DraftRows(
        requests=req,
        block_tables=paged.page_ids.index_select(0, req).contiguous(),
        seq_lens=paged.seq_lens.index_select(0, req).contiguous(),
        query=query,
    )


def describe(paged: PagedRequests) -> dict[str, Any]:
    """Small summary for logs and reports."""
    return {"bs": paged.bs, "pages": paged.num_pages, "seq_lens": [int(x) for x in paged.seq_lens.tolist()]}
