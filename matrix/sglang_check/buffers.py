"""The graph-buffer contract: a draft backend captured for B requests expanded to topk rows must hold B*topk rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# trtllm_mha sizes these from init_cuda_graph_state's first argument (sglang 0.5.23
# TRTLLMHAAttnBackend.init_cuda_graph_state, docs/sources.md#graph-buffer-sizing); the value is the extra
# rows an indptr-style buffer carries (cu_seqlens has one more row than sequences).
TRTLLM_MHA_PER_SEQUENCE = {
    "cache_seqlens": 0,
    "page_table": 0,
    "page_table_draft_decode": 0,
    "cu_seqlens_q": 1,
    "cu_seqlens_k": 1,
}


@dataclass(frozen=True, kw_only=True)
class RowShortfall:
    buffer: str
    rows: int | None
    needed: int

    @property
    def message(self) -> str:
        if self.rows is None:
            return f"{self.buffer}: missing (needs {self.needed} rows)"
        return f"{self.buffer}: {self.rows} rows < {self.needed} needed"


def row_shortfalls(
    shapes: Mapping[str, tuple[int, ...]], sequences: int, contract: Mapping[str, int] = TRTLLM_MHA_PER_SEQUENCE
) -> tuple[RowShortfall, ...]:
    """Every per-sequence buffer that cannot hold `sequences` rows (a missing buffer counts: a rename must not pass)."""
    out: list[RowShortfall] = []
    for name, extra in contract.items():
        needed = sequences + extra
        shape = shapes.get(name)
        rows = shape[0] if shape else None
        if rows is None or rows < needed:
            out.append(RowShortfall(buffer=name, rows=rows, needed=needed))
    return tuple(out)


# The same contract for every graph state, as buffer name -> extra rows, checked against the rows the runner must
# hold. trtllm_mha without speculative decoding allocates only the plain decode buffers.
TRTLLM_MHA_DECODE = {"cache_seqlens": 0, "page_table": 0}
# The target's graph runner sizes these for its requests (init_cuda_graph_state(max_bs, max_bs * num_draft_tokens)).
TRTLLM_MHA_TARGET_VERIFY = {"cache_seqlens": 0, "cu_seqlens_q": 1, "cu_seqlens_k": 1, "page_table": 0}
# TritonAttnBackend: kv_indptr from the worker's widened constructor buffer, the rest from max_num_tokens.
TRITON_DECODE = {"kv_indptr": 1, "cuda_graph_num_kv_splits": 0, "cuda_graph_attn_logits": 0, "cuda_graph_attn_lse": 0}


def tensor_shapes(tensors: Mapping[object, object]) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every named tensor in a metadata dict (sglang also files per-batch-size metadata under int keys)."""
    out: dict[str, tuple[int, ...]] = {}
    for name, value in tensors.items():
        shape = getattr(value, "shape", None)
        if isinstance(name, str) and shape is not None:
            out[name] = tuple(int(d) for d in shape)
    return out
