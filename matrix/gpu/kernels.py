"""Draft-decode kernel strategies over one paged cache (imports torch/flashinfer lazily).

Each strategy computes out[rows, Hq, D] for `rows` single-token sequences given
their block tables and lengths; the graph runner below records any of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from matrix.gpu.cases import DraftCase, GraphRows, expanded_graph_rows, padded_bucket
from matrix.gpu.graphs import capture_graph
from matrix.gpu.paged import DraftRows, PagedRequests
from matrix.sglang_check.identity import KERNEL_FAMILIES

if TYPE_CHECKING:
    import torch

XQA_SEMAPHORE_BYTES = 8 << 20
WORKSPACE_BYTES = 128 << 20


def device_impl(backend: str, device: str) -> str | None:
    """The matrix's implementation of `backend` on this device's arch (`None` on CPU: no kernel family claimed)."""
    if not device.startswith("cuda"):
        return None
    import torch

    from matrix.core.expect import resolve_impl
    from matrix.core.loader import load_matrix

    major, minor = torch.cuda.get_device_capability(device)
    return resolve_impl(load_matrix(), backend, major * 10 + minor)


class DraftDecodeKernel(Protocol):
    """One way to run draft decode over the paged cache."""

    name: str

    def decode(self, query: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor, out: torch.Tensor) -> None: ...


class FlashinferTrtllmDecode:
    """flashinfer.decode.trtllm_batch_decode_with_kv_cache (XQA on sm90/sm120, trtllm-gen on sm100)."""

    name = "trtllm_mha"

    def __init__(self, paged: PagedRequests, *, max_rows: int, family: str | None = None) -> None:
        """`family` (xqa or trtllm-gen, the matrix's impl on this arch) is passed as flashinfer's `backend`, so the
        kernel family that runs is the one the cell claims (flashinfer refuses one the arch lacks); None: "auto"."""
        import torch

        case = paged.case
        device = paged.seq_lens.device
        self._backend = family if family in KERNEL_FAMILIES else "auto"
        self._kv = paged.paged_kv()
        # XQA takes its semaphores from the first 8 MiB, which must start zeroed.
        self._workspace = torch.zeros(XQA_SEMAPHORE_BYTES + WORKSPACE_BYTES, dtype=torch.uint8, device=device)
        self._max_seq_len = case.context_len
        self._scale = 1.0 / math.sqrt(case.head_dim)
        self._counter = _counter_buffer(max_rows, case.num_q_heads, device)

    def decode(self, query: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor, out: torch.Tensor) -> None:
        self._call(query, block_tables, seq_lens, out)

    def verify(
        self,
        query: torch.Tensor,
        block_tables: torch.Tensor,
        seq_lens: torch.Tensor,
        out: torch.Tensor,
        *,
        q_len: int,
        mask: torch.Tensor | None,
    ) -> None:
        """Target verify: `q_len` query tokens per request (query [bs*q_len, ...]), causal over the request's KV."""
        extra: dict[str, Any] = {"q_len_per_req": q_len}
        if mask is not None:
            extra["mask"] = mask
        self._call(query, block_tables, seq_lens, out, **extra)

    def _call(
        self, query: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor, out: torch.Tensor, **extra: Any
    ) -> None:
        from flashinfer.decode import trtllm_batch_decode_with_kv_cache

        if self._counter is not None:
            extra["multi_ctas_kv_counter_buffer"] = self._counter
        trtllm_batch_decode_with_kv_cache(
            query,
            self._kv,
            self._workspace,
            block_tables,
            seq_lens,
            self._max_seq_len,
            bmm1_scale=self._scale,
            bmm2_scale=1.0,
            kv_layout="NHD",
            out=out,
            backend=self._backend,
            **extra,
        )


def _counter_buffer(max_rows: int, num_q_heads: int, device: Any) -> Any:
    """A persistent multi-CTA counter, so no call allocates one inside a graph."""
    try:
        import torch
        from flashinfer.utils import _get_trtllm_gen_multi_ctas_kv_counter_buffer

        sms = torch.cuda.get_device_properties(device).multi_processor_count
        return _get_trtllm_gen_multi_ctas_kv_counter_buffer(max_rows, num_q_heads, sms, device)
    except (ImportError, AttributeError, TypeError):
        return None


class FlashinferPagedDecode:
    """flashinfer BatchDecodeWithPagedKVCacheWrapper (fa2), planned for one fixed row count."""

    name = "flashinfer"

    def __init__(self, paged: PagedRequests, rows: DraftRows, *, use_cuda_graph: bool) -> None:
        import flashinfer
        import torch

        case = paged.case
        device = paged.seq_lens.device
        n = int(rows.seq_lens.shape[0])
        pages = -(-rows.seq_lens.to(torch.int64) // case.page_size)
        indptr = torch.zeros(n + 1, dtype=torch.int32, device=device)
        indptr[1:] = torch.cumsum(pages, 0).to(torch.int32)
        mask = torch.arange(rows.block_tables.shape[1], device=device)[None, :] < pages[:, None]
        indices = rows.block_tables[mask].to(torch.int32)
        last = ((rows.seq_lens - 1) % case.page_size + 1).to(torch.int32)
        self._workspace = torch.zeros(128 << 20, dtype=torch.uint8, device=device)
        kwargs: dict[str, Any] = {}
        if use_cuda_graph:
            kwargs = {
                "paged_kv_indptr_buffer": indptr.clone(),
                "paged_kv_indices_buffer": indices.clone(),
                "paged_kv_last_page_len_buffer": last.clone(),
            }
        self._wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
            self._workspace, "NHD", use_cuda_graph=use_cuda_graph, use_tensor_cores=True, **kwargs
        )
        self._wrapper.plan(
            indptr,
            indices,
            last,
            case.num_q_heads,
            case.num_kv_heads,
            case.head_dim,
            case.page_size,
            q_data_type=rows.query.dtype,
            kv_data_type=paged.k_slots.dtype,
            sm_scale=1.0 / math.sqrt(case.head_dim),
        )
        self._kv = paged.paged_kv()

    def decode(self, query: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor, out: torch.Tensor) -> None:
        del block_tables, seq_lens  # fixed by plan()
        self._wrapper.run(query, self._kv, out=out)


@dataclass(frozen=True, kw_only=True)
class KernelGraphBuffers:
    """Static per-sequence inputs of a captured draft decode, sized like sglang's runner sizes them."""

    query: torch.Tensor
    block_tables: torch.Tensor
    seq_lens: torch.Tensor
    out: torch.Tensor

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(int(d) for d in getattr(self, name).shape) for name in KERNEL_DRAFT_BUFFERS}


# The kernel-level runner's own per-row buffers (none carries an extra row).
KERNEL_DRAFT_BUFFERS = {"query": 0, "block_tables": 0, "seq_lens": 0, "out": 0}


class KernelDraftGraph:
    """Graphs of one kernel captured per request batch size, replayed with padding to a bucket."""

    def __init__(self, kernel: DraftDecodeKernel, case: DraftCase, *, device: str, graph_rows: GraphRows = expanded_graph_rows):
        import torch

        from matrix.gpu.paged import torch_dtype

        self.case = case
        self.kernel = kernel
        max_rows = graph_rows(case.max_bs, case.topk)
        q_dtype = torch_dtype(case.q_dtype)
        self.buffers = KernelGraphBuffers(
            query=torch.zeros(max_rows, case.num_q_heads, case.head_dim, dtype=q_dtype, device=device),
            block_tables=torch.zeros(max_rows, case.pages_per_seq, dtype=torch.int32, device=device),
            seq_lens=torch.ones(max_rows, dtype=torch.int32, device=device),
            out=torch.zeros(max_rows, case.num_q_heads, case.head_dim, dtype=q_dtype, device=device),
        )
        self.graphs: dict[int, Any] = {}

    def capture(self) -> None:
        b = self.buffers
        for bs in sorted(self.case.capture_bs, reverse=True):
            n = bs * self.case.topk

            def body(n: int = n) -> None:
                self.kernel.decode(b.query[:n], b.block_tables[:n], b.seq_lens[:n], b.out[:n])

            self.graphs[bs] = capture_graph(body)

    def replay(self, rows: DraftRows, bs: int) -> torch.Tensor:
        """Copy `bs` requests' rows in, pad to the captured bucket (length 1, page 0), replay."""
        bucket = padded_bucket(bs, self.case.capture_bs)
        n_raw, n = bs * self.case.topk, bucket * self.case.topk
        b = self.buffers
        b.seq_lens[:n].fill_(1)
        b.block_tables[:n].zero_()
        b.query[:n_raw].copy_(rows.query)
        b.block_tables[:n_raw].copy_(rows.block_tables)
        b.seq_lens[:n_raw].copy_(rows.seq_lens)
        self.graphs[bucket].replay()
        return b.out[:n_raw].clone()
