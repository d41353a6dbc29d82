"""Every stand-in the GPU and CPU checks keep for sglang code they cannot call, with the shape it was written against.

docs/gpu.md lists the same table; `tests/sglang/test_sglang_drift.py` (`nox -s sglang`) runs `drift` over every
row against the installed sglang and shows each kind of check red on a planted change of the upstream shape.
Shapes are those of sglang 0.5.23.
"""

from __future__ import annotations

from matrix.sglang_check.drift import Shape, StandIn

WORKER = "sglang.srt.speculative.frozen_kv_mtp_worker_v2:FrozenKVMTPDraftWorker"
RUNNER = "sglang.srt.speculative.frozen_kv_mtp_cuda_graph_runner:FrozenKVMTPCudaGraphRunner"
KIT = "sglang.test.kits.attention_unittest"

DRAFT_WORKER = "matrix/gpu/sglang_draft.py:draft_worker"
DECISION_WORKER = "matrix/sglang_check/edge.py:decision_worker"

STAND_INS: tuple[StandIn, ...] = (
    StandIn(
        name=DRAFT_WORKER,
        upstream=f"{WORKER}._init_draft_attn_backend",
        shape=Shape.READS,
        expected=(
            "_init_triton_draft_attn_backend",
            "_init_trtllm_mha_draft_attn_backend",
            "_resolve_draft_backend_type",
            "draft_model_runner",
            "topk",
        ),
        why="the worker's own backend choice, called on a worker carrying only what it reads",
    ),
    StandIn(
        name=DRAFT_WORKER,
        upstream=f"{WORKER}._init_triton_draft_attn_backend",
        shape=Shape.READS,
        expected=("draft_model_runner", "req_to_token_pool", "topk"),
        why="the triton tree backend with the worker's widened kv_indptr buffer",
    ),
    StandIn(
        name=DRAFT_WORKER,
        upstream=f"{WORKER}._init_trtllm_mha_draft_attn_backend",
        shape=Shape.READS,
        expected=("draft_model_runner",),
        why="the trtllm_mha tree backend (skip_prefill=True)",
    ),
    *(
        StandIn(
            name=DRAFT_WORKER,
            upstream=f"{WORKER}.{method}",
            shape=Shape.READS,
            expected=reads,
            why="the worker's frozen-KV metadata and view methods, bound onto the stand-in",
        )
        for method, reads in (
            ("_frozen_kv_target_view", ("draft_attn_backend", "kv_context")),
            ("_target_kv_pool_view", ("draft_attn_backend", "kv_context")),
            ("_expand_for_topk_draft", ("topk",)),
            ("_init_frozen_kv_metadata", ("_frozen_kv_target_view", "draft_attn_backend")),
            ("_init_frozen_kv_metadata_capture_cuda_graph", ("_frozen_kv_target_view", "draft_attn_backend")),
            ("_init_frozen_kv_metadata_replay_cuda_graph", ("_frozen_kv_target_view", "draft_attn_backend")),
        )
    ),
    StandIn(
        name=DECISION_WORKER,
        upstream=f"{WORKER}._init_draft_attn_backend",
        shape=Shape.READS,
        expected=(
            "_init_triton_draft_attn_backend",
            "_init_trtllm_mha_draft_attn_backend",
            "_resolve_draft_backend_type",
            "draft_model_runner",
            "topk",
        ),
        why="the CPU agreement check's worker: the real choice, builders that answer the name they build",
    ),
    StandIn(
        name="matrix/sglang_check/edge.py:trtllm_mha_without_init",
        upstream="sglang.srt.layers.attention.trtllm_mha_backend:TRTLLMHAAttnBackend.init_cuda_graph_state",
        shape=Shape.READS,
        expected=(
            "device",
            "expand_encoder_only_verify",
            "max_num_pages",
            "speculative_num_draft_tokens",
            "use_sliding_window_kv_pool",
        ),
        untaken=("_alloc_swa_page_table",),
        why="TRTLLMHAAttnBackend.__init__ needs CUDA; the sizing method runs on a backend carrying what it reads "
        "(the sliding-window path is not taken: no SWA pool)",
    ),
    StandIn(
        name="matrix/sglang_check/edge.py:frozen_runner_sizing",
        upstream=f"{RUNNER}.__init__",
        shape=Shape.READS,
        parameter="frozen_kv_mtp_worker",
        expected=("_recurrent_hidden_size", "draft_attn_backend", "draft_model_runner"),
        why="the worker handed to the runner's own __init__, stopped after its sizing call",
    ),
    StandIn(
        name="matrix/gpu/sglang_draft.py:SglangDraftGraph (and cases.expanded_graph_rows)",
        upstream=f"{RUNNER}.__init__",
        shape=Shape.CALL,
        call="init_cuda_graph_state",
        expected=("self.max_bs * self.topk", "self.max_num_token"),
        why="the `sglang` level sizes the draft backend as the runner does; the `runner` level runs the runner itself",
    ),
    StandIn(
        name="matrix/gpu/checks.py:check_target_contract, matrix/sglang_check/edge.py:target_verify_shapes",
        upstream="sglang.srt.model_executor.runner.decode_cuda_graph_runner:DecodeCudaGraphRunner.__init__",
        shape=Shape.CALL,
        call="init_cuda_graph_state",
        expected=("self.max_bs", "self.max_num_token"),
        why="the target-verify contract sizes trtllm_mha as the target's graph runner does (max_num_token = max_bs * "
        "num_draft_tokens) rather than building that runner",
    ),
    StandIn(
        name="matrix/gpu/sglang_draft.py:build_sglang_draft (runner.attn_backend from the registry)",
        upstream="sglang.srt.model_executor.model_runner_components.attention_backend_setup:resolve_attention_backend_strs",
        shape=Shape.READS,
        parameter="model_runner",
        expected=("draft_attention_backend", "is_draft_worker"),
        why="ModelRunner's backend: sglang's own resolution on a draft and a target runner view carrying both "
        "attributes (the draft's override from the published spec config), then the registry entry of the resolved name",
    ),
    StandIn(
        name="matrix/gpu/sglang_draft.py:_model_runner (fp8 KV pool)",
        upstream="sglang.srt.mem_cache.memory_pool:MHATokenToKVPool",
        shape=Shape.PARAMETERS,
        expected=(
            "size",
            "page_size",
            "dtype",
            "head_num",
            "head_dim",
            "layer_num",
            "device",
            "enable_memory_saver",
            "enable_alt_stream",
        ),
        why="ModelRunner's KV pool for --kv-cache-dtype fp8_e4m3 (the kit's MockModelRunner builds a bf16 one)",
    ),
    StandIn(
        name="matrix/gpu/sglang_runner.py:frozen_kv_mtp_fields",
        upstream="sglang.srt.server_args:ServerArgs",
        shape=Shape.PARAMETERS,
        expected=(),  # filled by the test from frozen_kv_mtp_fields itself: every key must stay a ServerArgs field
        why="the kit's _configure_runner_for_eagle_draft fields, published directly (that helper needs `datasets`)",
    ),
    StandIn(
        name="matrix/gpu/sglang_runner.py:runner_settings",
        upstream=f"{KIT}.runner_modes.speculative_draft_runner:_FrozenKVMTPWorkerHarness.__init__",
        shape=Shape.READS,
        parameter="settings",
        expected=("hidden_size", "speculative_num_draft_tokens", "speculative_num_steps", "topk"),
        why="the kit's EagleDraftRunnerSettings, as the fields its worker harness reads",
    ),
    StandIn(
        name="matrix/gpu/sglang_runner.py:TinyDraftModel (the kit harness's model_forward)",
        upstream=f"{KIT}.runner_modes.speculative_draft_runner:_FrozenKVMTPWorkerHarness",
        shape=Shape.PARAMETERS,
        exact=True,
        expected=("fixture", "draft_attn_backend", "model_forward", "settings"),
        why="the draft model: a tiny projection model over sglang's RadixAttention, not a real MTP head",
    ),
    StandIn(
        name="matrix/gpu/sglang_verify.py:tree_mask",
        upstream=f"{KIT}.runner_modes.speculative_target_verify_runner:_draft_tree_mask",
        shape=Shape.PARAMETERS,
        expected=("draft_token_num", "topk", "device"),
        exact=True,
        why="the kit hard-codes a three-token tree; ours is root then topk children per node",
    ),
    StandIn(
        name="matrix/gpu/sglang_verify.py:prefix_where_the_batch_reads",
        upstream=f"{KIT}.attention_methods.dense_attention:prepare_dense_runner_inputs",
        shape=Shape.PARAMETERS,
        expected=("fixture", "case", "batch", "inputs", "max_context_len"),
        exact=True,
        why="the kit's eager leg writes the prefix contiguously over a page-shuffled table (a kit defect)",
    ),
    StandIn(
        name="matrix/gpu/sglang_verify.py:prefix_where_the_batch_reads (calls)",
        upstream=f"{KIT}.attention_methods.dense_attention:_populate_prefix_kv",
        shape=Shape.PARAMETERS,
        expected=("module", "case", "runner", "prefix_hidden", "max_context_len", "loc_fn"),
        why="the kit's own prefix writer, called with the batch's own slots",
    ),
)
