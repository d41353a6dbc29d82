"""sglang's Frozen-KV MTP draft attention path, driven the way its graph runner drives it.

Real pieces: ReqToTokenPool, MHATokenToKVPool, the runner's backend from sglang's attention registry, the draft
backend built by FrozenKVMTPDraftWorker._init_draft_attn_backend itself (called on a worker stand-in carrying only
what it reads) and checked to be the backend the cell names, RadixAttention, expand_for_topk_draft, and the
worker's own metadata methods (target view, eager init, capture init, replay init). The runner's model runner is
the test kit's MockModelRunner. Not driven here: the draft model, token sampling and FrozenKVMTPCudaGraphRunner
(the `runner` level drives it); SglangDraftGraph stands in for its sizing call and capture/replay order
(init_cuda_graph_state(max_bs * topk, max_bs * topk), out_graph with in_capture before capture, in_graph inside
it, out_graph before each replay), with a drift check on the runner's sizing call (docs/gpu.md, "Stand-ins").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from matrix.gpu.cases import DraftCase, GraphRows, expanded_graph_rows
from matrix.gpu.graphs import capture_graph
from matrix.gpu.kernels import device_impl
from matrix.gpu.paged import DraftRows, PagedRequests, torch_dtype

if TYPE_CHECKING:
    import torch

METADATA_METHODS = (
    "_frozen_kv_target_view",
    "_target_kv_pool_view",
    "_expand_for_topk_draft",
    "_init_frozen_kv_metadata",
    "_init_frozen_kv_metadata_capture_cuda_graph",
    "_init_frozen_kv_metadata_replay_cuda_graph",
)


def _model_runner(case: DraftCase, device: str) -> Any:
    from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.test.kits.attention_unittest.attention_methods.dense_attention import MockModelRunner, TinyModelConfig

    shape = SimpleNamespace(
        backend=case.target,  # the kit publishes it as --attention-backend: the target's backend
        page_size=case.page_size,
        batch_size=case.max_bs,
        input_lens=(1,) * case.max_bs,
        forward_mode=ForwardMode.DECODE,
        num_kv_heads=case.num_kv_heads,
        sliding_window_size=None,
    )
    config = TinyModelConfig(
        num_heads=case.num_q_heads,
        num_kv_heads=case.num_kv_heads,
        head_dim=case.head_dim,
        hidden_size=case.num_q_heads * case.head_dim,
        context_len=case.context_len,
    )
    runner = MockModelRunner(
        case=shape,
        model_config=config,
        dtype=torch_dtype(case.q_dtype),
        device=device,
        max_context_len=case.context_len,
        head_dim=case.head_dim,
        disable_cuda_graph=False,
        runner_batch_size=case.max_bs,
    )
    if case.kv_dtype != case.q_dtype:
        # fp8 KV: the pool stores e4m3, queries stay bf16 (what --kv-cache-dtype fp8_e4m3 gives).
        kv_dtype = torch_dtype(case.kv_dtype)
        runner.kv_cache_dtype = kv_dtype
        runner.kv_cache_dtype_str = "fp8_e4m3"
        pool = MHATokenToKVPool(
            size=runner.token_to_kv_pool.size,
            page_size=case.page_size,
            dtype=kv_dtype,
            head_num=case.num_kv_heads,
            head_dim=case.head_dim,
            layer_num=1,
            device=device,
            enable_memory_saver=False,
            enable_alt_stream=False,
        )
        runner.token_to_kv_pool = pool
        runner.token_to_kv_pool_allocator = SimpleNamespace(page_size=case.page_size, get_kvcache=lambda: pool)
        runner.init_kv_index_translator()
    return runner


# What FrozenKVMTPDraftWorker's methods bound below read from `self` beyond each other (sglang 0.5.23); the drift
# check (matrix/sglang_check/drift.py, `nox -s sglang`) fails when the installed sglang's methods read more.
WORKER_ATTRIBUTES = ("topk", "draft_model_runner", "req_to_token_pool", "draft_attn_backend", "kv_context")
WORKER_METHODS = (
    *METADATA_METHODS,
    "_resolve_draft_backend_type",
    "_init_draft_attn_backend",
    "_init_triton_draft_attn_backend",
    "_init_trtllm_mha_draft_attn_backend",
)


def draft_worker(runner: Any, topk: int) -> Any:
    """A FrozenKVMTPDraftWorker stand-in carrying only WORKER_ATTRIBUTES, with the worker's own methods bound; its
    draft backend is built by the worker's `_init_draft_attn_backend` (topk 1: the runner's own backend)."""
    from sglang.srt.speculative.frozen_kv_mtp_info import FrozenKVMTPContext
    from sglang.srt.speculative.frozen_kv_mtp_worker_v2 import FrozenKVMTPDraftWorker

    cls = type("DraftWorkerStandIn", (), {name: getattr(FrozenKVMTPDraftWorker, name) for name in WORKER_METHODS})
    worker = cls()
    worker.topk = topk
    worker.draft_model_runner = runner
    worker.req_to_token_pool = runner.req_to_token_pool
    worker.draft_attn_backend = worker._init_draft_attn_backend()
    worker.kv_context = FrozenKVMTPContext(target_token_to_kv_pool=runner.token_to_kv_pool, physical_layer_ids={0: 0})
    return worker


def check_draft_identity(case: DraftCase, runner: Any, backend: Any) -> None:
    """The worker built the backend the cell names: the registry's class for it, the matrix's kernel family where the
    backend shows one, and decode-only (`skip_prefill`) for a topk > 1 tree (topk 1 reuses the runner's backend)."""
    from matrix.sglang_check.identity import check_identity, expected_identity, identity_of

    registry = runner.attn_backend
    skip = True if case.topk > 1 else identity_of(registry).skip_prefill
    impl = device_impl(case.backend, str(runner.device))
    expected = expected_identity(registry_backend=registry, skip_prefill=skip, impl=impl)
    check_identity(expected, identity_of(backend), what=f"{case.cell_id} draft backend")


@dataclass(kw_only=True)
class SglangDraft:
    """One draft backend over a real pool holding the paged requests."""

    case: DraftCase
    runner: Any
    backend: Any
    layer: Any
    worker: Any
    paged: PagedRequests

    def req_pool_rows(self, bs: int) -> torch.Tensor:
        """Requests live in ReqToTokenPool rows 1..bs; row 0 stays the all-zero padding row."""
        import torch

        return torch.arange(1, bs + 1, dtype=torch.int64, device=self.runner.device)

    def forward_batch(self, bs: int) -> Any:
        """An unexpanded DECODE batch of `bs` requests, expanded by sglang's expand_for_topk_draft."""
        import torch
        from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode

        lens = self.paged.seq_lens[:bs].to(torch.int64)
        fb = ForwardBatch(
            forward_mode=ForwardMode.DECODE,
            batch_size=bs,
            input_ids=None,
            req_pool_indices=self.req_pool_rows(bs),
            seq_lens=lens,
            seq_lens_cpu=lens.cpu(),
            out_cache_loc=None,
            seq_lens_sum=int(lens.sum()),
            positions=torch.clamp(lens - 1, min=0),
        )
        self.worker._expand_for_topk_draft(fb)
        self.runner.kv_index_translator.bind_own_plan(fb)
        return fb

    def attend(self, query: torch.Tensor, fb: Any) -> torch.Tensor:
        """RadixAttention over the frozen target pool: read-only, no KV write."""
        from sglang.srt.model_executor.forward_context import ForwardContext, forward_context

        n = int(query.shape[0])
        with forward_context(ForwardContext(attn_backend=self.backend)), self.worker._target_kv_pool_view(fb):
            out = self.layer(query.reshape(n, -1), None, None, fb, save_kv_cache=False)
        return out.view(n, self.case.num_q_heads, self.case.head_dim)

    def eager(self, rows: DraftRows, bs: int) -> torch.Tensor:
        fb = self.forward_batch(bs)
        self.worker._init_frozen_kv_metadata(fb)
        return self.attend(rows.query, fb)


def draft_backend_published(case: DraftCase) -> Any:
    """`--speculative-draft-attention-backend BACKEND` set on the published spec config for the draft's build (a
    context manager; the kit's `--attention-backend` is the target's). One value for both when the cell sets no target
    apart, as before. Only that leaf changes: a new publish would reset every field the kit published."""
    from sglang.srt.runtime_context import get_spec

    return get_spec().override(speculative_draft_attention_backend=case.backend)


def resolved_backends(case: DraftCase) -> str:
    """The draft runner's backend name as sglang resolves it from the published server arguments, checked against the
    cell: the draft's must be the cell's backend and the target's the cell's target backend (BackendMismatch)."""
    from sglang.srt.model_executor.model_runner import resolve_draft_attention_backend
    from sglang.srt.model_executor.model_runner_components.attention_backend_setup import resolve_attention_backend_strs

    from matrix.sglang_check.identity import BackendMismatch

    draft_view = SimpleNamespace(
        is_draft_worker=True,
        draft_attention_backend=resolve_draft_attention_backend(draft_attention_backend=None, is_draft_worker=True),
    )
    target_view = SimpleNamespace(is_draft_worker=False, draft_attention_backend=None)
    draft = str(resolve_attention_backend_strs(model_runner=draft_view).decode)
    target = str(resolve_attention_backend_strs(model_runner=target_view).decode)
    if (draft, target) != (case.backend, case.target):
        raise BackendMismatch(
            f"{case.cell_id}: sglang resolved draft backend {draft} and target backend {target}; "
            f"the cell names draft {case.backend} and target {case.target}"
        )
    return draft


def build_sglang_draft(paged: PagedRequests, *, device: str, configure: Callable[[Any], None] | None = None) -> SglangDraft:
    """Runner, pools, backend and layer for `paged`; the requests' KV copied into the real pool.

    `configure(model_runner)` runs before the draft backend is built (backends read the server arguments then).
    """
    import torch
    from sglang.srt.layers.attention.attention_registry import ATTENTION_BACKENDS
    from sglang.srt.layers.radix_attention import RadixAttention

    case = paged.case
    runner = _model_runner(case, device)
    if configure is not None:
        configure(runner)
    bs = paged.bs
    table = runner.req_to_token_pool.req_to_token
    table[1 : bs + 1, : paged.token_slots.shape[1]].copy_(paged.token_slots)
    k_dst, v_dst = runner.token_to_kv_pool.k_buffer[0], runner.token_to_kv_pool.v_buffer[0]
    slots = int(paged.k_slots.shape[0])
    k_dst.view(torch.uint8)[:slots].copy_(paged.k_slots.view(torch.uint8))
    v_dst.view(torch.uint8)[:slots].copy_(paged.v_slots.view(torch.uint8))
    # ModelRunner.init_attention_backend: the draft runner's own backend, named by sglang's own resolution (the
    # speculative override, else the decode backend, else the attention backend), built from sglang's registry.
    with draft_backend_published(case):
        runner.attn_backend = ATTENTION_BACKENDS[resolved_backends(case)](runner)
        worker = draft_worker(runner, case.topk)
    backend = worker.draft_attn_backend
    check_draft_identity(case, runner, backend)
    layer = RadixAttention(
        num_heads=case.num_q_heads,
        head_dim=case.head_dim,
        scaling=case.head_dim**-0.5,
        num_kv_heads=case.num_kv_heads,
        layer_id=0,
    )
    return SglangDraft(case=case, runner=runner, backend=backend, layer=layer, worker=worker, paged=paged)


class SglangDraftGraph:
    """Capture and replay the draft attention in the order FrozenKVMTPCudaGraphRunner uses."""

    def __init__(self, draft: SglangDraft, *, graph_rows: GraphRows = expanded_graph_rows) -> None:
        import torch

        case = draft.case
        self.draft = draft
        self.max_num_token = case.max_bs * case.topk
        # The runner's sizing call; graph_rows lets a test re-create the old unexpanded bug.
        draft.backend.init_cuda_graph_state(graph_rows(case.max_bs, case.topk), self.max_num_token)
        self.fill = int(draft.backend.get_cuda_graph_seq_len_fill_value())
        device = draft.runner.device
        n = self.max_num_token
        self.req_pool_indices = torch.zeros(n, dtype=torch.int64, device=device)
        self.positions = torch.zeros(n, dtype=torch.int64, device=device)
        self.seq_lens = torch.full((n,), self.fill, dtype=torch.int64, device=device)
        self.seq_lens_cpu = torch.full((n,), self.fill, dtype=torch.int64)
        self.query = torch.zeros(n, case.num_q_heads, case.head_dim, dtype=torch_dtype(case.q_dtype), device=device)
        self.out = torch.zeros_like(self.query)
        self.graphs: dict[int, Any] = {}

    def _batch(self, n: int) -> Any:
        from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode

        fb = ForwardBatch(
            forward_mode=ForwardMode.DECODE,
            batch_size=n,
            input_ids=None,
            req_pool_indices=self.req_pool_indices[:n],
            seq_lens=self.seq_lens[:n],
            seq_lens_cpu=self.seq_lens_cpu[:n],
            out_cache_loc=None,
            seq_lens_sum=int(self.seq_lens_cpu[:n].sum()),
            positions=self.positions[:n],
        )
        self.draft.runner.kv_index_translator.bind_runner_slots(fb)
        return fb

    def capture(self) -> None:
        d = self.draft
        for bs in sorted(d.case.capture_bs, reverse=True):
            n = bs * d.case.topk
            fb = self._batch(n)
            d.worker._init_frozen_kv_metadata_capture_cuda_graph(fb)

            def body(fb: Any = fb, n: int = n) -> None:
                with d.worker._frozen_kv_target_view(fb):
                    d.backend.init_forward_metadata_in_graph(fb)
                self.out[:n].copy_(d.attend(self.query[:n], fb))

            self.graphs[bs] = capture_graph(body)

    def replay(self, rows: DraftRows, bs: int) -> torch.Tensor:
        """Pad to the bucket the runner's execute() picks (its own _pad_to_bucket): fill lengths, zero positions and
        pool rows."""
        from sglang.srt.speculative.frozen_kv_mtp_cuda_graph_runner import FrozenKVMTPCudaGraphRunner

        d = self.draft
        topk = d.case.topk
        bucket = int(FrozenKVMTPCudaGraphRunner._pad_to_bucket(bs, sorted(d.case.capture_bs)))
        n_raw, n = bs * topk, bucket * topk
        eager_fb = d.forward_batch(bs)
        if bucket != bs:
            self.seq_lens.fill_(self.fill)
            self.seq_lens_cpu.fill_(self.fill)
            self.positions.zero_()
            self.req_pool_indices.zero_()
        self.seq_lens[:n_raw].copy_(eager_fb.seq_lens)
        self.seq_lens_cpu[:n_raw].copy_(eager_fb.seq_lens_cpu)
        self.positions[:n_raw].copy_(eager_fb.positions)
        self.req_pool_indices[:n_raw].copy_(eager_fb.req_pool_indices)
        self.query[:n_raw].copy_(rows.query)
        fb = self._batch(n)
        d.worker._init_frozen_kv_metadata_replay_cuda_graph(fb, n, int(self.seq_lens_cpu[:n].sum()))
        self.graphs[bucket].replay()
        return self.out[:n_raw].clone()
