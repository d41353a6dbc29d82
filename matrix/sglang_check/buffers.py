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
