"""sglang's own FrozenKVMTPCudaGraphRunner around the smallest draft worker its __init__, capture and replay need.

sglang's: FrozenKVMTPCudaGraphRunner (its sizing call, capture loop, can_run_graph, padded execute), the worker
methods it calls (FrozenKVMTPDraftWorker.draft_forward and the frozen-KV metadata/view methods, bound by the
test kit's _FrozenKVMTPWorkerHarness), the kit's runner configuration and capture patches
(_configure_runner_for_eagle_draft, _capture_frozen_kv_mtp_graph_runner: single-rank graph_capture, no memory
probe), set_frozen_kv_positions, expand_for_topk_draft, FrozenKVMTPDraftInput, and everything below the model
(backend, pools, RadixAttention; see matrix/gpu/sglang_draft.py). Stand-ins: the kit's MockModelRunner and
_TinyDraftModel, and TinyDraftModel below: one query projection, sglang's RadixAttention over the frozen target
KV, an output projection and an LM head, which records every query and attention output it produced so the
runner's replay can be compared with eager and with the float32 reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from matrix.gpu.cases import DraftCase
from matrix.gpu.contract import check_draft_backend
from matrix.gpu.paged import PagedRequests, torch_dtype
from matrix.gpu.sglang_draft import SglangDraft, build_sglang_draft

if TYPE_CHECKING:
    import torch

DRAFT_STEPS = 2  # the seed forward plus one recurrent step: the second step's branches carry different queries
VOCAB = 64
HIDDEN = 256


def runner_settings(case: DraftCase) -> SimpleNamespace:
    """What the kit's runner configuration and worker harness read (its EagleDraftRunnerSettings fields)."""
    return SimpleNamespace(
        topk=case.topk,
        speculative_num_steps=DRAFT_STEPS,
        speculative_num_draft_tokens=DRAFT_STEPS * case.topk + 1,
        capture_batch_size=case.max_bs,
        hidden_size=HIDDEN,
        vocab_size=VOCAB,
    )


def frozen_kv_mtp_fields(case: DraftCase, page_size: int) -> dict[str, Any]:
    """Server arguments of a Frozen-KV MTP draft with this topk, capturing the case's request batch sizes.

    The test kit's MockModelRunner fields plus the ones its _configure_runner_for_eagle_draft sets (that helper
    imports sglang.test.test_utils, which needs the `datasets` package; the fields are published directly here).
    """
    from sglang.srt.model_executor.cuda_graph_config import CudaGraphConfig, PhaseConfig

    settings = runner_settings(case)
    return {
        "attention_backend": case.target,
        "chunked_prefill_size": -1,
        "cuda_graph_config": CudaGraphConfig(decode=PhaseConfig(bs=list(case.capture_bs), max_bs=case.max_bs)),
        "debug_cuda_graph": False,
        "decode_attention_backend": case.target,
        "disable_cuda_graph_padding": False,
        "disable_radix_cache": False,
        "dllm_algorithm": None,
        "dllm_algorithm_config": None,
        "dp_size": 1,
        "enable_cudagraph_gc": True,
        "enable_deterministic_inference": False,
        "enable_dp_lm_head": False,
        "enable_memory_saver": False,
        "enable_mis": False,
        "enable_pdmux": False,
        "enable_profile_cuda_graph": False,
        "enable_torch_compile": False,
        "enable_two_batch_overlap": False,
        "is_embedding": False,
        "kv_cache_dtype": "auto",
        "max_running_requests": None,
        "moe_dense_tp_size": None,
        "page_size": page_size,
        "pp_size": 1,
        "prefill_attention_backend": case.target,
        "revision": None,
        "speculative_algorithm": "FROZEN_KV_MTP",
        "speculative_attention_mode": "decode",
        "speculative_draft_attention_backend": case.backend,
        "speculative_eagle_topk": settings.topk,
        "speculative_num_draft_tokens": settings.speculative_num_draft_tokens,
        "speculative_num_steps": settings.speculative_num_steps,
        "torch_compile_max_bs": 0,
        "tp_size": 1,
        "triton_attention_num_kv_splits": 8,
        "triton_attention_split_tile_size": None,
    }


def configure_frozen_kv_mtp(case: DraftCase, runner: Any) -> Any:
    """Publish the Frozen-KV MTP server arguments and stamp the draft runner the way the kit does; the override."""
    from sglang.srt.runtime_context import get_context
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
    from sglang.test.kits.attention_unittest.runner_modes.speculative_draft_runner import _TinyDraftModel

    override = get_context().override_server_args(**frozen_kv_mtp_fields(case, runner.page_size))
    runner.server_args = override.install()
    runner.spec_algorithm = SpeculativeAlgorithm.FROZEN_KV_MTP
    runner.is_draft_worker = True
    runner.model = _TinyDraftModel()  # carries the shared-experts layout the runner's model_context reads
    runner.device_timer = None
    runner.model_config.spec_hidden_size = HIDDEN
    runner.model_config.dtype = runner.dtype
    runner.model_config.vocab_size = VOCAB
    runner.model_config.hf_config.vocab_size = VOCAB
    return override


class TinyDraftModel:
    """The draft model stand-in: hidden -> q -> sglang's attention over the target KV -> hidden -> logits.

    Every call records its query and attention output in static per-step buffers (inside the captured graph too).
    """

    def __init__(self, draft: SglangDraft, *, seed: int) -> None:
        import torch

        case = draft.case
        device = draft.runner.device
        dtype = torch_dtype(case.q_dtype)
        gen = torch.Generator(device="cpu").manual_seed(seed)
        width = case.num_q_heads * case.head_dim

        def weight(rows: int, cols: int) -> torch.Tensor:
            return (torch.randn(rows, cols, generator=gen) / rows**0.5).to(dtype).to(device)

        self.draft = draft
        self.embed = weight(VOCAB, HIDDEN) * HIDDEN**0.5
        self.q_proj = weight(HIDDEN, width)
        self.o_proj = weight(width, HIDDEN)
        self.lm_head = weight(HIDDEN, VOCAB)
        rows = case.max_bs * case.topk
        self.q_seen = torch.zeros(DRAFT_STEPS, rows, case.num_q_heads, case.head_dim, dtype=dtype, device=device)
        self.out_seen = torch.zeros_like(self.q_seen)
        self.calls = 0

    def __call__(self, forward_batch: Any) -> Any:
        from sglang.srt.layers.logits_processor import LogitsProcessorOutput

        case = self.draft.case
        n = int(forward_batch.input_ids.shape[0])
        hidden = forward_batch.spec_info.hidden_states + self.embed[forward_batch.input_ids]
        query = (hidden @ self.q_proj).view(n, case.num_q_heads, case.head_dim)
        out = self.draft.layer(query.reshape(n, -1), None, None, forward_batch, save_kv_cache=False)
        out = out.view(n, case.num_q_heads, case.head_dim)
        # draft_forward calls the model exactly DRAFT_STEPS times per draft: the step is the call count modulo that.
        step = self.calls % DRAFT_STEPS
        self.calls += 1
        self.q_seen[step, :n].copy_(query)
        self.out_seen[step, :n].copy_(out)
        hidden_out = out.reshape(n, -1) @ self.o_proj
        return SimpleNamespace(
            logits_output=LogitsProcessorOutput(next_token_logits=(hidden_out @ self.lm_head).float(), hidden_states=hidden_out)
        )


@dataclass(kw_only=True)
class Recorded:
    """What one draft (eager or replayed) attended: per step, every expanded row's query and output."""

    queries: list[torch.Tensor]
    outputs: list[torch.Tensor]


@dataclass(kw_only=True)
class RunnerDraft:
    """One draft worker over the paged requests, eager through draft_forward or through sglang's graph runner."""

    draft: SglangDraft
    worker: Any
    model: TinyDraftModel
    bonus_tokens: torch.Tensor
    hidden_states: torch.Tensor
    overrides: list[Any]
    runner: Any = None

    def forward_batch(self, bs: int) -> Any:
        """The draft's batch as FrozenKVMTPDraftWorker.draft builds it: positions set, expanded to bs*topk rows."""
        import torch
        from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardBatch, ForwardMode
        from sglang.srt.speculative.frozen_kv_mtp_info import FrozenKVMTPDraftInput
        from sglang.srt.speculative.frozen_kv_mtp_utils import expand_for_topk_draft, set_frozen_kv_positions
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        d = self.draft
        topk = d.case.topk
        lens = d.paged.seq_lens[:bs].to(torch.int64)
        spec_info = FrozenKVMTPDraftInput(
            hidden_states=self.hidden_states[:bs].clone(),
            bonus_tokens=self.bonus_tokens[:bs].clone(),
            capture_hidden_mode=CaptureHiddenMode.LAST,
            num_tokens_per_req=topk,
            num_tokens_for_logprob_per_req=topk,
        )
        positions = torch.clamp(lens - 1, min=0)
        spec_info.positions = positions
        fb = ForwardBatch(
            forward_mode=ForwardMode.DECODE,
            batch_size=bs,
            input_ids=None,
            req_pool_indices=d.req_pool_rows(bs),
            seq_lens=lens,
            seq_lens_cpu=lens.cpu(),
            out_cache_loc=None,
            seq_lens_sum=int(lens.sum()),
            positions=positions.clone(),
            spec_algorithm=SpeculativeAlgorithm.FROZEN_KV_MTP,
            spec_info=spec_info,
            capture_hidden_mode=CaptureHiddenMode.LAST,
        )
        set_frozen_kv_positions(fb, topk)
        expand_for_topk_draft(fb, topk)
        fb.out_cache_loc = None  # the frozen draft never writes KV
        d.runner.kv_index_translator.bind_own_plan(fb)
        return fb

    def _recorded(self, rows: int) -> Recorded:
        return Recorded(
            queries=[self.model.q_seen[s, :rows].clone() for s in range(DRAFT_STEPS)],
            outputs=[self.model.out_seen[s, :rows].clone() for s in range(DRAFT_STEPS)],
        )

    def eager(self, bs: int) -> tuple[Recorded, Any]:
        self.model.calls = 0
        out = self.worker.draft_forward(self.forward_batch(bs))
        return self._recorded(bs * self.draft.case.topk), out

    def capture(self, *, enforce_contract: bool = True) -> None:
        """sglang's FrozenKVMTPCudaGraphRunner(worker): its own sizing call, then its capture of every batch size."""
        from sglang.test.kits.attention_unittest.runner_modes.speculative_draft_runner import (
            _capture_frozen_kv_mtp_graph_runner,
        )

        case = self.draft.case
        backend = self.draft.backend
        sized = type(backend).init_cuda_graph_state

        def sized_then_checked(max_bs: int, max_num_tokens: int, *args: Any, **kwargs: Any) -> None:
            # The contract is checked on the runner's own sizing call, before any capture can overflow a buffer.
            sized(backend, max_bs, max_num_tokens, *args, **kwargs)
            check_draft_backend(case.backend, backend, max_bs=case.max_bs, topk=case.topk)

        if enforce_contract:
            backend.init_cuda_graph_state = sized_then_checked
        try:
            self.model.calls = 0
            self.runner = _capture_frozen_kv_mtp_graph_runner(self.worker)
        finally:
            if enforce_contract:
                del backend.init_cuda_graph_state

    def close(self) -> None:
        """Drop the process-wide graph pool and input buffers, and restore the server arguments (later cells)."""
        from sglang.test.kits.attention_unittest.runner_modes.speculative_draft_runner import (
            _reset_cuda_graph_test_buffers,
        )

        self.runner = None
        _reset_cuda_graph_test_buffers()
        for override in reversed(self.overrides):
            override.restore()
        self.draft.runner._server_args_override.restore()

    def replay(self, bs: int) -> tuple[Recorded, Any]:
        """The runner's padded replay of `bs` requests, after its own can_run_graph said yes."""
        fb = self.forward_batch(bs)
        if not self.runner.can_run_graph(fb):
            raise AssertionError(f"FrozenKVMTPCudaGraphRunner.can_run_graph refused {bs} requests of topk {self.draft.case.topk}")
        out = self.runner.execute(fb)
        return self._recorded(bs * self.draft.case.topk), out


def build_runner_draft(paged: PagedRequests, *, device: str, seed: int) -> RunnerDraft:
    """The draft worker (kit harness with sglang's methods) around a backend built as the worker builds it."""
    import torch
    from sglang.test.kits.attention_unittest.runner_modes.speculative_draft_runner import _FrozenKVMTPWorkerHarness

    case = paged.case
    overrides: list[Any] = []
    draft = build_sglang_draft(paged, device=device, configure=lambda r: overrides.append(configure_frozen_kv_mtp(case, r)))
    model = TinyDraftModel(draft, seed=seed)
    draft.runner.draft_attn_backend = draft.backend
    worker = _FrozenKVMTPWorkerHarness(
        fixture=SimpleNamespace(runner=draft.runner),
        draft_attn_backend=draft.backend,
        model_forward=model,
        settings=runner_settings(case),
    )
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    bonus = torch.randint(0, VOCAB, (case.max_bs,), generator=gen).to(device)
    hidden = torch.randn(case.max_bs, HIDDEN, generator=gen).to(torch_dtype(case.q_dtype)).to(device)
    return RunnerDraft(draft=draft, worker=worker, model=model, bonus_tokens=bonus, hidden_states=hidden, overrides=overrides)
