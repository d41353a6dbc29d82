"""Target verify through sglang's own backend (triton, flashinfer, fa3), driven by sglang's attention test kit.

sglang's: the backend (from the registry, on the kit's MockModelRunner), RadixAttention, FrozenKVMTPVerifyInput
with the draft tree's custom mask, the TARGET_VERIFY metadata path, and the kit's CUDA-graph case
(run_dense_spec_verify_cuda_graph_case: capture at a batch size, padded replay, compare with a float32
reference that applies the same mask). Ours: the case (page-boundary prefix lengths, heads, page size) and, for
topk > 1, the tree shape: the kit hard-codes a three-token tree, so its mask builder is replaced by
`tree_mask` (root, then topk children per level) for the duration of the call.

One more replacement, for a defect of the kit itself (sglang 0.5.23): the eager leg of its CUDA-graph case
(runner_modes/speculative_cuda_graph_runner.py, run_speculative_cuda_graph_case) re-writes the prefix KV through
prepare_dense_runner_inputs, which places it with the contiguous mapping (_token_loc), while the fixture's request
table uses the kit's default "shuffled_pages" layout (build_dense_attention_fixture, make_loc_fn). The backend then
reads slots the re-write moved, and the eager leg differs from the reference for any request whose shuffled pages
land on rewritten ones (`ci/probe_target_verify.py` shows it for triton and flashinfer alike, page 1 and 16, while
the replay leg and the kit's plain eager case agree). `prefix_where_the_batch_reads` writes each prefix token at
the slot the batch's own request table names, which is what the kit's other legs already get from their
contiguous batches.
"""

from __future__ import annotations

import unittest
from typing import TYPE_CHECKING, Any
from unittest import mock

from matrix.gpu.cases import DraftCase, varied_seq_lens
from matrix.gpu.paged import torch_dtype

if TYPE_CHECKING:
    import torch

VERIFY_REQUESTS = 6  # replayed through a graph captured for 8 requests: the kit pads the rest
CAPTURE_REQUESTS = 8
MIN_CONTEXT = 128


def tree_parents(draft_tokens: int, topk: int) -> tuple[int, ...]:
    """Parent of each draft token: token 0 is the root, each node has up to topk children, breadth first."""
    return tuple(-1 if i == 0 else (i - 1) // topk for i in range(draft_tokens))


def tree_visibility(parents: tuple[int, ...]) -> list[list[bool]]:
    """visible[i][j]: draft token j is token i or one of its ancestors (the tree-attention mask)."""
    visible = [[False] * len(parents) for _ in parents]
    for i in range(len(parents)):
        node = i
        while node >= 0:
            visible[i][node] = True
            node = parents[node]
    return visible


def tree_mask(*, draft_token_num: int, topk: int, device: str) -> torch.Tensor:
    import torch

    return torch.tensor(tree_visibility(tree_parents(draft_token_num, topk)), dtype=torch.bool, device=device)


def prefix_where_the_batch_reads(fixture: Any, case: Any, batch: Any, inputs: dict[str, Any], *, max_context_len: int) -> None:
    """The kit's prepare_dense_runner_inputs, placing each prefix token where the batch's request table points."""
    from sglang.test.kits.attention_unittest.attention_methods import dense_attention

    table = fixture.runner.req_to_token_pool.req_to_token
    rows = table[batch.req_pool_indices.long()].to("cpu")

    def loc_fn(req_idx: int, pos: int) -> int:
        return int(rows[req_idx, pos])

    dense_attention._populate_prefix_kv(
        fixture.actual_module,
        case,
        fixture.runner,
        inputs["prefix_hidden"],
        max_context_len=max_context_len,
        loc_fn=loc_fn,
    )


def verify_context_len(longest: int) -> int:
    """The kit's max_context_len: a power of two, at least 128 and twice the longest request (room for the kit's
    capture and padding requests beside the case's own)."""
    size = MIN_CONTEXT
    while size < 2 * longest:
        size *= 2
    return size


def verify_case(case: DraftCase) -> Any:
    """The kit's DenseAttentionCase for a target cell: page-boundary prefixes, each followed by q_len draft tokens."""
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.test.kits.attention_unittest.attention_methods.dense_attention import DenseAttentionCase

    return DenseAttentionCase(
        name=case.cell_id,
        backend=case.backend,
        forward_mode=ForwardMode.TARGET_VERIFY,
        num_heads=case.num_q_heads,
        num_kv_heads=case.num_kv_heads,
        page_size=case.page_size,
        prefix_lens=varied_seq_lens(case.page_size, VERIFY_REQUESTS),
        extend_lens=(case.q_len,) * VERIFY_REQUESTS,
    )


def check_target_identity(case: DraftCase, built: list[Any], fixtures: list[Any], *, impl: str | None) -> None:
    """Every fixture the kit ran used the backend sglang's registry built for the cell's name, prefill-capable (a
    target verify extends over the draft tokens), of the matrix's kernel family where the backend shows one."""
    from matrix.sglang_check.identity import BackendMismatch, check_identity, expected_identity, identity_of

    if not fixtures:
        raise BackendMismatch(f"{case.cell_id} target backend: the kit built no fixture")
    for fixture in fixtures:
        backend = fixture.backend
        if not any(backend is b for b in built):
            raise BackendMismatch(
                f"{case.cell_id} target backend: the kit ran a backend sglang's registry did not build for {case.backend!r}"
            )
        expected = expected_identity(registry_backend=backend, skip_prefill=False, impl=impl)
        check_identity(expected, identity_of(backend), what=f"{case.cell_id} target backend")


def run_verify(case: DraftCase, *, device: str) -> None:
    """sglang's target verify captured and replayed; raises AssertionError when it differs from the reference, and
    BackendMismatch when the backend that ran is not the one sglang's registry builds for the cell's name."""
    from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS
    from sglang.test.kits.attention_unittest.runner_modes import speculative_target_verify_runner as kit

    from matrix.gpu.kernels import device_impl

    dense = verify_case(case)
    context = verify_context_len(max(dense.prefix_lens) + case.q_len)
    factory = ATTENTION_BACKENDS[case.backend]
    build_fixture = kit.build_dense_attention_fixture
    built: list[Any] = []
    fixtures: list[Any] = []

    def registry_entry(runner: Any) -> Any:
        built.append(factory(runner))
        return built[-1]

    def recorded_fixture(*args: Any, **kwargs: Any) -> Any:
        fixtures.append(build_fixture(*args, **kwargs))
        return fixtures[-1]

    with (
        mock.patch.dict(ATTENTION_BACKENDS, {case.backend: registry_entry}),
        mock.patch.object(kit, "build_dense_attention_fixture", recorded_fixture),
        mock.patch.object(kit, "_draft_tree_mask", tree_mask),
        mock.patch.object(kit, "prepare_dense_runner_inputs", prefix_where_the_batch_reads),
    ):
        kit.run_dense_spec_verify_cuda_graph_case(
            unittest.TestCase(),
            dense,
            topk=case.topk,
            spec_kind="frozen_kv_mtp",
            head_dim=case.head_dim,
            max_context_len=context,
            dtype=torch_dtype(case.q_dtype),
            device=device,
            cuda_graph_capture_batch_size=CAPTURE_REQUESTS,
        )
    check_target_identity(case, built, fixtures, impl=device_impl(case.backend, device))
