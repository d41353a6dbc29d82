"""Pure description of one GPU draft-decode case, derived from a matrix cell."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from matrix.core.model import Cell

# Request batch sizes a draft graph runner captures (sglang's decode bs list, cut short).
CAPTURE_BS: tuple[int, ...] = (1, 2, 4, 8)
# Request batch sizes replayed: captured ones and ones that pad up to a bucket.
REPLAY_BS: tuple[int, ...] = (1, 3, 6, 8)
DEFAULT_NUM_KV_HEADS = 2
SAME_BACKEND = "same"  # the target_backend axis value: the target runs the draft's backend (matrix/data/matrix.toml)

GraphRows = Callable[[int, int], int]


def expanded_graph_rows(max_bs: int, topk: int) -> int:
    """What FrozenKVMTPCudaGraphRunner passes to init_cuda_graph_state: one row per branch."""
    return max_bs * topk


def unexpanded_graph_rows(max_bs: int, topk: int) -> int:
    """The old bug: the request count, not the branch count (a plant in the harness's own sizing)."""
    del topk
    return max_bs


# Plants in the harness's own sizing of the `sglang` and `kernel` levels; sglang's source mutations are
# matrix/gpu/mutations.py:MUTATIONS.
SIZING_PLANTS: dict[str, GraphRows] = {"unexpanded-max-bs": unexpanded_graph_rows}


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True, kw_only=True)
class DraftCase:
    """One Frozen-KV MTP draft decode: `bs` requests, each expanded into `topk` branches."""

    cell_id: str
    backend: str  # the draft's backend (a target cell: the target's)
    topk: int
    page_size: int
    head_dim: int
    num_kv_heads: int
    num_q_heads: int
    dtype: str  # bf16 | fp16 | fp8kv (bf16 queries, fp8-e4m3 KV)
    mode: str  # eager | graph
    seq_lens: tuple[int, ...]
    # Target verify: query tokens per request (num_draft_tokens), the last q_len of its KV; 1 for draft decode.
    q_len: int = 1
    capture_bs: tuple[int, ...] = CAPTURE_BS
    replay_bs: tuple[int, ...] = REPLAY_BS
    # The target's backend (`--attention-backend`); apart from `backend`, the draft runs on
    # `--speculative-draft-attention-backend backend` and sglang's own resolution must pick it.
    target_backend: str = ""

    @property
    def target(self) -> str:
        """The target's backend: `target_backend`, or the draft's own when none is set apart."""
        return self.target_backend or self.backend

    @property
    def backends_apart(self) -> bool:
        return self.target != self.backend

    @property
    def max_bs(self) -> int:
        return max(self.capture_bs)

    @property
    def q_dtype(self) -> str:
        return "fp16" if self.dtype == "fp16" else "bf16"

    @property
    def kv_dtype(self) -> str:
        return "fp8_e4m3" if self.dtype == "fp8kv" else self.q_dtype

    @property
    def pages_per_seq(self) -> int:
        return max(-(-n // self.page_size) for n in self.seq_lens)

    @property
    def context_len(self) -> int:
        """Room for the longest request plus a page: the backend's max_context_len."""
        return (self.pages_per_seq + 1) * self.page_size

    def lens_for(self, bs: int) -> tuple[int, ...]:
        return self.seq_lens[:bs]


def varied_seq_lens(page_size: int, count: int) -> tuple[int, ...]:
    """Request lengths around page boundaries: 1, p-1, p, p+1, 2p, 3p-1, 4p+3, 5p."""
    p = page_size
    pattern = (1, max(p - 1, 1), p, p + 1, 2 * p, 3 * p - 1, 4 * p + 3, 5 * p)
    return tuple(pattern[i % len(pattern)] + (i // len(pattern)) * p for i in range(count))


def draft_case(cell: Cell) -> DraftCase:
    """The case a cell describes; bs requests cover every page-boundary shape.

    A target cell verifies num_draft_tokens per request: each request's last num_draft_tokens KV entries are its
    queries (a chain for topk 1, a draft tree for topk > 1).
    """
    role = cell.get("role")
    q_len = 1
    if role == "target":
        q_len = int(cell.num_draft_tokens)
    elif role != "draft":
        raise ValueError(f"{cell.id}: neither a draft nor a target cell")
    gqa = int(cell.gqa)
    page_size = int(cell.page_size)
    target = cell.get("target_backend")
    if target not in (None, SAME_BACKEND) and role != "draft":
        raise ValueError(f"{cell.id}: a target backend apart from the draft's needs a draft cell")
    return DraftCase(
        cell_id=cell.id,
        backend=str(cell.backend),
        topk=int(cell.topk),
        page_size=page_size,
        head_dim=int(cell.head_dim),
        num_kv_heads=DEFAULT_NUM_KV_HEADS,
        num_q_heads=DEFAULT_NUM_KV_HEADS * gqa,
        dtype=str(cell.dtype),
        mode=str(cell.mode),
        seq_lens=tuple(n + q_len - 1 for n in varied_seq_lens(page_size, max(CAPTURE_BS))),
        q_len=q_len,
        target_backend="" if target in (None, SAME_BACKEND) else str(target),
    )


def tolerance(dtype: str, head_dim: int) -> Tolerance:
    """Per-dtype tolerance against the float32 reference computed from the stored KV.

    fp8 KV gets its own: XQA's fp8 path showed max error 0.05-0.08 at head_dim 64-256
    and 0.004-0.005 at 512 on an H200 (docs/sources.md#fp8-kv-tolerances).
    """
    if dtype == "fp8kv":
        return Tolerance(atol=0.15 if head_dim <= 256 else 0.03, rtol=0.05)
    if dtype == "fp16":
        return Tolerance(atol=1e-2, rtol=1e-2)
    return Tolerance(atol=2.5e-2, rtol=2e-2)


def branch_requests(bs: int, topk: int) -> tuple[int, ...]:
    """Request index of each expanded row, branches of a request adjacent (repeat_interleave)."""
    return tuple(r for r in range(bs) for _ in range(topk))


def padded_bucket(bs: int, capture_bs: tuple[int, ...]) -> int:
    """The smallest captured batch size that holds `bs` requests."""
    for size in sorted(capture_bs):
        if size >= bs:
            return size
    raise ValueError(f"batch size {bs} exceeds the largest captured size {max(capture_bs)}")
