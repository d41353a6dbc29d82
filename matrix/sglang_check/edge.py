"""Edge: ask the installed sglang (CPU is enough) what it does with a configuration.

sglang is imported inside each function, so importing this module never needs sglang.
Only decisions run for real here; nothing that needs a GPU (kernels, flashinfer wrappers) is built.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from functools import partial
from types import SimpleNamespace
from typing import Any

from matrix.core.model import SwaOutcome
from matrix.sglang_check.agreement import ServerConfig, SglangVerdict, SpecPath
from matrix.sglang_check.pages import PageConfig
from matrix.sglang_check.swa import BACKEND_FIELDS, SwaConfig, SwaVerdict

DRAFT_FIELD = "speculative_draft_attention_backend"
# A fixture model configuration: sglang's model_config_of hands back a `_model_config` that carries no source key.
FIXTURE_ARCHITECTURE = "LlamaForCausalLM"


def page_view(config: PageConfig) -> SimpleNamespace:
    """The full view `_mla_backend_page_constraints` reads."""
    return SimpleNamespace(
        page_size=config.page_size,
        attention_backend=config.target_backend,
        decode_attention_backend=None,
        prefill_attention_backend=None,
        speculative_draft_attention_backend=config.draft_backend,
    )


def page_from_constraint(view: Any) -> int:
    """The page size after sglang's `_mla_backend_page_constraints` pass on `view`."""
    from sglang.srt.arg_groups.overrides import _mla_backend_page_constraints

    declared = _mla_backend_page_constraints(view)
    return int(declared.get("page_size", view.page_size))


def page_from_server_args(config: PageConfig) -> int:
    """The resolved page size after the attention hook's post-process pass on a real ServerArgs record."""
    from sglang.srt.arg_groups.overrides import _mla_backend_page_constraints, resolved_view, run_post_process_pass
    from sglang.srt.server_args import ServerArgs

    server_args = ServerArgs(
        model_path="dummy",
        attention_backend=config.target_backend,
        speculative_draft_attention_backend=config.draft_backend,
        page_size=config.page_size,
    )
    run_post_process_pass(server_args, _mla_backend_page_constraints)
    return int(resolved_view(server_args).page_size)


def shallow_page_view(config: PageConfig) -> Any:
    """A ResolvedView over a record without the draft field, as sglang's own override tests build it."""
    from sglang.srt.arg_groups.overrides import ResolvedView

    return ResolvedView(
        SimpleNamespace(
            page_size=config.page_size,
            attention_backend=config.target_backend,
            decode_attention_backend=None,
            prefill_attention_backend=None,
        )
    )


def speculative_verdict(config: ServerConfig) -> SglangVerdict:
    """Run sglang's speculative server-args hook; for a Frozen-KV MTP draft also its draft-backend choice."""
    from sglang.srt.arg_groups.speculative_hook import handle_speculative_decoding
    from sglang.srt.server_args import ServerArgs

    server_args = ServerArgs(model_path="dummy", **config.server_fields())
    server_args._model_config = SimpleNamespace(hf_config=SimpleNamespace(architectures=[FIXTURE_ARCHITECTURE]))
    try:
        handle_speculative_decoding(server_args)
    except (ValueError, NotImplementedError) as exc:
        return SglangVerdict(accepted=False, stage="handle_speculative_decoding", message=str(exc))
    if config.path is SpecPath.FROZEN_KV_MTP and config.role == "draft":
        return draft_backend_verdict(config.server_fields(), config.topk)
    return SglangVerdict(accepted=True, stage="handle_speculative_decoding")


@contextmanager
def published(fields: Mapping[str, object]) -> Iterator[Any]:
    """Publish server arguments into sglang's runtime context for the duration (restored afterwards)."""
    from sglang.srt.runtime_context import get_context

    override = get_context().override_server_args(**fields)
    server_args = override.install()
    try:
        yield server_args
    finally:
        override.restore()


# What the CPU stand-in of the draft worker carries for `_init_draft_attn_backend`: the backend builders answer the
# name of the backend they build (their constructors need a GPU). The drift check compares it with what the
# installed sglang's method reads (matrix/sglang_check/drift.py).
DECISION_WORKER_ATTRIBUTES = (
    "topk",
    "draft_model_runner",
    "_resolve_draft_backend_type",
    "_init_triton_draft_attn_backend",
    "_init_trtllm_mha_draft_attn_backend",
)


def decision_worker(topk: int, runner_backend: str) -> SimpleNamespace:
    """A FrozenKVMTPDraftWorker stand-in for `_init_draft_attn_backend` on CPU: every builder returns its backend name."""
    from sglang.srt.speculative.frozen_kv_mtp_worker_v2 import FrozenKVMTPDraftWorker

    worker = SimpleNamespace(
        topk=topk,
        draft_model_runner=SimpleNamespace(attn_backend=runner_backend),
        _init_triton_draft_attn_backend=lambda: "triton",
        _init_trtllm_mha_draft_attn_backend=lambda: "trtllm_mha",
    )
    worker._resolve_draft_backend_type = partial(FrozenKVMTPDraftWorker._resolve_draft_backend_type, worker)
    return worker


def draft_backend_verdict(fields: Mapping[str, object], topk: int) -> SglangVerdict:
    """FrozenKVMTPDraftWorker._init_draft_attn_backend's decision and the backend it built (by name: the backend
    constructors need a GPU; topk 1 reuses the draft runner's own backend, the configured attention backend)."""
    from sglang.srt.speculative.frozen_kv_mtp_worker_v2 import FrozenKVMTPDraftWorker

    stage = "FrozenKVMTPDraftWorker._init_draft_attn_backend"
    with published(fields):
        worker = decision_worker(topk, draft_runner_backend())
        try:
            chosen = FrozenKVMTPDraftWorker._init_draft_attn_backend(worker)
        except ValueError as exc:
            return SglangVerdict(accepted=False, stage=stage, message=str(exc))
    return SglangVerdict(accepted=True, stage=stage, message=f"uses {chosen}", backend=str(chosen))


def draft_runner_backend() -> str:
    """The draft model runner's backend name as sglang resolves it from the published server arguments (the topk 1
    draft reuses it): `resolve_draft_attention_backend`, then `resolve_attention_backend_strs` on a draft runner."""
    from sglang.srt.model_executor.model_runner import resolve_draft_attention_backend
    from sglang.srt.model_executor.model_runner_components.attention_backend_setup import resolve_attention_backend_strs

    view = SimpleNamespace(
        is_draft_worker=True,
        draft_attention_backend=resolve_draft_attention_backend(draft_attention_backend=None, is_draft_worker=True),
    )
    return str(resolve_attention_backend_strs(model_runner=view).decode)


def resolved_draft_backend(fields: Mapping[str, str | None]) -> str | None:
    """The backend type FrozenKVMTPDraftWorker resolves for a topk > 1 draft under these fields."""
    from sglang.srt.speculative.frozen_kv_mtp_worker_v2 import FrozenKVMTPDraftWorker

    with published(dict(fields)):
        chosen = FrozenKVMTPDraftWorker._resolve_draft_backend_type(SimpleNamespace())
    return None if chosen is None else str(chosen)


def trtllm_mha_without_init(*, num_draft_tokens: int | None, max_num_pages: int, device: str = "cpu") -> Any:
    """A TRTLLMHAAttnBackend carrying only what init_cuda_graph_state reads; its __init__ needs CUDA (see docs)."""
    from sglang.srt.layers.attention.trtllm_mha_backend import TRTLLMHAAttnBackend

    backend = object.__new__(TRTLLMHAAttnBackend)
    backend.device = device
    backend.max_num_pages = max_num_pages
    backend._swa_kv_pool = None
    backend.use_sliding_window_kv_pool = False
    backend.speculative_num_draft_tokens = num_draft_tokens
    backend.expand_encoder_only_verify = False
    return backend


def graph_buffer_shapes(backend: Any) -> dict[str, tuple[int, ...]]:
    """Shapes of the decode graph buffers a trtllm_mha backend allocated."""
    metadata: Mapping[str, Any] = getattr(backend, "decode_cuda_graph_metadata", {})
    return {name: tuple(int(d) for d in tensor.shape) for name, tensor in metadata.items() if tensor is not None}


class _SizedBackend(Exception):
    """Raised right after the graph runner sized its draft backend, before any CUDA work."""


class _SizingProbe:
    """Forwards init_cuda_graph_state to a real backend, records the call, then stops the runner."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.calls: list[tuple[int, int]] = []

    def init_cuda_graph_state(self, max_bs: int, max_num_tokens: int, *args: Any, **kwargs: Any) -> None:
        self.calls.append((max_bs, max_num_tokens))
        self.backend.init_cuda_graph_state(max_bs, max_num_tokens, *args, **kwargs)

    def get_cuda_graph_seq_len_fill_value(self) -> int:
        raise _SizedBackend


def sizing_worker(model_runner: Any, backend: Any, hidden_size: int) -> SimpleNamespace:
    """The worker FrozenKVMTPCudaGraphRunner.__init__ is handed: only what it reads of its worker."""
    return SimpleNamespace(draft_model_runner=model_runner, draft_attn_backend=backend, _recurrent_hidden_size=hidden_size)


def frozen_runner_sizing(
    backend: Any, *, topk: int, capture_bs: list[int], hidden_size: int = 64
) -> tuple[int, list[tuple[int, int]]]:
    """Run FrozenKVMTPCudaGraphRunner.__init__ up to its init_cuda_graph_state call; (runner max_bs, calls made)."""
    import torch
    from sglang.srt.model_executor.cuda_graph_config import CudaGraphConfig, PhaseConfig
    from sglang.srt.speculative.frozen_kv_mtp_cuda_graph_runner import FrozenKVMTPCudaGraphRunner

    probe = _SizingProbe(backend)
    fields = {
        "attention_backend": "trtllm_mha",
        "speculative_algorithm": SpecPath.FROZEN_KV_MTP.value,
        "speculative_eagle_topk": topk,
        "speculative_num_steps": 3,
        "speculative_num_draft_tokens": 4,
        "page_size": 16,
        "cuda_graph_config": CudaGraphConfig(decode=PhaseConfig(bs=capture_bs, max_bs=max(capture_bs))),
    }
    with published(fields) as server_args:
        model_runner = SimpleNamespace(
            device="cpu",
            dtype=torch.bfloat16,
            req_to_token_pool=SimpleNamespace(size=max(capture_bs)),
            server_args=server_args,
        )
        worker = sizing_worker(model_runner, probe, hidden_size)
        runner = FrozenKVMTPCudaGraphRunner.__new__(FrozenKVMTPCudaGraphRunner)
        with suppress(_SizedBackend):
            runner.__init__(worker)
    return int(runner.max_bs), probe.calls


def expanded_rows(seq_lens: list[int], topk: int) -> tuple[list[int], list[int]]:
    """(req_pool_indices, seq_lens) of a decode batch after sglang's expand_for_topk_draft, on CPU."""
    import torch
    from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode
    from sglang.srt.speculative.frozen_kv_mtp_utils import expand_for_topk_draft

    lens = torch.tensor(seq_lens, dtype=torch.int64)
    batch = ForwardBatch(
        forward_mode=ForwardMode.DECODE,
        batch_size=len(seq_lens),
        input_ids=None,
        req_pool_indices=torch.arange(len(seq_lens), dtype=torch.int64),
        seq_lens=lens,
        seq_lens_cpu=None,
        out_cache_loc=None,
        seq_lens_sum=int(lens.sum()),
        positions=torch.clamp(lens - 1, min=0),
    )
    expand_for_topk_draft(batch, topk)
    return [int(i) for i in batch.req_pool_indices], [int(n) for n in batch.seq_lens]


def target_verify_shapes(
    *, max_bs: int, num_draft_tokens: int, max_num_pages: int, device: str = "cpu"
) -> dict[str, tuple[int, ...]]:
    """TRTLLMHAAttnBackend's target-verify graph buffers, sized as the target's graph runner sizes them
    (DecodeCudaGraphRunner.__init__: init_cuda_graph_state(max_bs, max_num_token), max_bs * num_draft_tokens tokens)."""
    from matrix.sglang_check.buffers import tensor_shapes

    backend = trtllm_mha_without_init(num_draft_tokens=num_draft_tokens, max_num_pages=max_num_pages, device=device)
    backend.init_cuda_graph_state(max_bs, max_bs * num_draft_tokens)
    return tensor_shapes(backend.target_verify_metadata)


class _Messages(logging.Handler):
    """Collects what one sglang logger says while a hook runs."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


# sglang's warning when a draft window is given to a path that does not read it (speculative_hook.py).
WINDOW_IGNORED_MARK = "--speculative-draft-window-size has no effect"


def swa_verdict(config: SwaConfig) -> SwaVerdict:
    """Run sglang's model overrides for the entry's architecture, then its speculative server-args hook, on a real
    ServerArgs record whose model configuration is a fixture (only the fields the overrides read)."""
    from sglang.srt.arg_groups import speculative_hook
    from sglang.srt.arg_groups.overrides import collect_model_override_declarations
    from sglang.srt.server_args import ServerArgs

    entry = config.entry
    server_args = ServerArgs(model_path="dummy", **config.server_fields())
    hf_config = SimpleNamespace(architectures=[entry.architecture], sliding_window_pattern=entry.sliding_window_pattern)
    server_args._model_config = SimpleNamespace(hf_config=hf_config, quantization=None)
    declared: dict[str, object] = {}
    for _, declaration in collect_model_override_declarations(entry.architecture, server_args, hf_config):
        declared.update(declaration)  # sglang's order: the last writer wins
    changed = tuple(f for f in BACKEND_FIELDS if f in declared and declared[f] != config.server_fields().get(f))
    disable = bool(declared.get("disable_hybrid_swa_memory", False))
    listener = _Messages()
    logger = logging.getLogger(speculative_hook.__name__)
    logger.addHandler(listener)
    try:
        speculative_hook.handle_speculative_decoding(server_args)
    except (ValueError, NotImplementedError) as exc:
        return SwaVerdict(
            outcome=SwaOutcome.REFUSED, disable_hybrid_swa_memory=disable, changed_backends=changed, message=str(exc)
        )
    finally:
        logger.removeHandler(listener)
    ignored = [m for m in listener.messages if m.startswith(WINDOW_IGNORED_MARK)]
    outcome = SwaOutcome.WINDOW_IGNORED if ignored else SwaOutcome.ACCEPTED
    return SwaVerdict(outcome=outcome, disable_hybrid_swa_memory=disable, changed_backends=changed, message=" ".join(ignored))
