"""The graph-buffer contract on the GPU: the one contract of matrix/sglang_check/buffers.py, read off live backends.

Every per-sequence graph buffer must hold the rows the runner must hold (max_bs * topk for a draft, max_bs
requests for a target verify); a buffer the contract names but the backend lacks is a shortfall, never skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from matrix.sglang_check.buffers import (
    TRITON_DECODE,
    TRTLLM_MHA_DECODE,
    TRTLLM_MHA_PER_SEQUENCE,
    row_shortfalls,
    tensor_shapes,
)

Shapes = dict[str, tuple[int, ...]]


class ContractViolation(AssertionError):
    """A graph buffer is missing or smaller than the batch it must hold."""


def contract_violations(shapes: Mapping[str, tuple[int, ...]], contract: Mapping[str, int], *, rows: int, what: str) -> list[str]:
    """One line per buffer of `contract` that cannot hold `rows` rows (plus its extra); `what` names the rows."""
    if not contract:
        return ["no per-sequence graph buffers named to check"]
    return [f"{s.message} ({what})" for s in row_shortfalls(shapes, rows, contract)]


def check_contract(shapes: Mapping[str, tuple[int, ...]], contract: Mapping[str, int], *, rows: int, what: str) -> None:
    """Raise ContractViolation naming every missing or undersized buffer."""
    problems = contract_violations(shapes, contract, rows=rows, what=what)
    if problems:
        raise ContractViolation("graph buffers too small: " + "; ".join(problems))


def draft_rows(max_bs: int, topk: int) -> tuple[int, str]:
    """The rows a draft graph runner must hold, and how to say it."""
    return max_bs * topk, f"max_bs*topk = {max_bs}*{topk}"


def trtllm_mha_shapes(backend: Any) -> tuple[Shapes, Mapping[str, int]]:
    """TRTLLMHAAttnBackend's decode graph buffers, and the contract for its configuration."""
    meta = getattr(backend, "decode_cuda_graph_metadata", None) or {}
    speculative = bool(getattr(backend, "speculative_num_draft_tokens", None))
    return tensor_shapes(meta), TRTLLM_MHA_PER_SEQUENCE if speculative else TRTLLM_MHA_DECODE


def triton_shapes(backend: Any) -> tuple[Shapes, Mapping[str, int]]:
    """TritonAttnBackend's graph buffers (attributes; a missing one stays missing)."""
    found = {name: getattr(backend, name, None) for name in TRITON_DECODE}
    return tensor_shapes({k: v for k, v in found.items() if v is not None}), TRITON_DECODE


BUFFER_READERS: dict[str, Callable[[Any], tuple[Shapes, Mapping[str, int]]]] = {
    "trtllm_mha": trtllm_mha_shapes,
    "triton": triton_shapes,
}


def check_draft_backend(backend_name: str, backend: Any, *, max_bs: int, topk: int) -> None:
    """The contract for a draft backend whose graph state a runner initialised (no reader: nothing is claimed)."""
    reader = BUFFER_READERS.get(backend_name)
    if reader is None:
        return
    shapes, contract = reader(backend)
    rows, what = draft_rows(max_bs, topk)
    check_contract(shapes, contract, rows=rows, what=what)
