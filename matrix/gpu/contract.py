"""The graph-buffer contract: every per-sequence graph buffer holds max_bs * topk rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class BufferRows:
    """A per-sequence graph buffer and how many sequences it can hold."""

    name: str
    rows: int


class ContractViolation(AssertionError):
    """A graph buffer is smaller than the expanded draft batch it must hold."""


def contract_violations(buffers: Sequence[BufferRows], *, max_bs: int, topk: int) -> list[str]:
    """One line per buffer that cannot hold the `max_bs * topk` draft rows."""
    need = max_bs * topk
    if not buffers:
        return ["no per-sequence graph buffers found to check"]
    return [f"{b.name} holds {b.rows} rows < max_bs*topk = {max_bs}*{topk} = {need}" for b in buffers if b.rows < need]


def check_contract(buffers: Sequence[BufferRows], *, max_bs: int, topk: int) -> None:
    """Raise ContractViolation naming every undersized buffer."""
    problems = contract_violations(buffers, max_bs=max_bs, topk=topk)
    if problems:
        raise ContractViolation("graph buffers too small for the expanded draft batch: " + "; ".join(problems))


def _rows(tensor: Any, minus: int = 0) -> int:
    return int(tensor.shape[0]) - minus


def trtllm_mha_buffer_rows(backend: Any) -> list[BufferRows]:
    """TRTLLMHAAttnBackend sizes these from init_cuda_graph_state's first argument."""
    meta = getattr(backend, "decode_cuda_graph_metadata", None) or {}
    found = [BufferRows(name=f"decode_cuda_graph_metadata[{k!r}]", rows=_rows(meta[k])) for k in ("cache_seqlens", "page_table")]
    found += [
        BufferRows(name=f"decode_cuda_graph_metadata[{k!r}]", rows=_rows(meta[k]))
        for k in ("page_table_draft_decode",)
        if meta.get(k) is not None
    ]
    found += [
        BufferRows(name=f"decode_cuda_graph_metadata[{k!r}]", rows=_rows(meta[k], minus=1))
        for k in ("cu_seqlens_q", "cu_seqlens_k")
        if meta.get(k) is not None
    ]
    return found


def triton_buffer_rows(backend: Any) -> list[BufferRows]:
    """TritonAttnBackend sizes these from max_num_tokens, and kv_indptr from its constructor."""
    return [
        BufferRows(name="kv_indptr", rows=_rows(backend.kv_indptr, minus=1)),
        BufferRows(name="cuda_graph_num_kv_splits", rows=_rows(backend.cuda_graph_num_kv_splits)),
        BufferRows(name="cuda_graph_attn_logits", rows=_rows(backend.cuda_graph_attn_logits)),
        BufferRows(name="cuda_graph_attn_lse", rows=_rows(backend.cuda_graph_attn_lse)),
    ]


BUFFER_READERS = {"trtllm_mha": trtllm_mha_buffer_rows, "triton": triton_buffer_rows}
