"""The graph-runner check's wiring on CPU: sglang's own FrozenKVMTPCudaGraphRunner, worker methods and expansion,
with only what needs a GPU replaced (needs torch and sglang; runs in `nox -s sglang`).

Replaced here, and nowhere in the GPU run: the draft backend's metadata kernels (no-ops), RadixAttention's forward
(a torch attention reading the frozen pool through the batch's req_pool_indices and seq_lens, which is exactly
what the metadata must carry), and the runner's graph backend (each captured shape re-runs its recorded forward on
replay, reading the runner's static buffers as a CUDA graph would).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from .conftest import SGLANG_CPU_IMPORT_WARNINGS

pytestmark = [pytest.mark.filterwarnings(w) for w in SGLANG_CPU_IMPORT_WARNINGS]
torch = pytest.importorskip("torch")
pytest.importorskip("sglang")

from matrix.core.loader import load_matrix  # noqa: E402
from matrix.gpu.cases import draft_case  # noqa: E402
from matrix.gpu.checks import check_runner  # noqa: E402


class EagerGraphBackend:
    """Stands in for FullCudaGraphBackend on CPU: capture records the forward, replay re-runs it."""

    def __init__(self, runner: Any) -> None:
        self.forwards: dict[Any, Any] = {}

    def capture_one(self, shape_key: Any, forward_fn: Any, capture_inputs: Any = None, post_warmup_hook: Any = None) -> None:
        forward_fn()
        self.forwards[shape_key] = forward_fn

    @contextmanager
    def capture_session(self, stream: Any) -> Iterator[None]:
        yield

    def can_run(self, forward_batch: Any, shape_key: Any) -> bool:
        return shape_key in self.forwards

    def replay(self, shape_key: Any, forward_batch: Any, **kwargs: Any) -> Any:
        return self.forwards[shape_key]()


def pool_attention(self: Any, q: Any, k: Any, v: Any, forward_batch: Any, save_kv_cache: bool = True, **kwargs: Any) -> Any:
    """Attention of every row over its request's first seq_lens slots of the frozen pool (float32)."""
    from sglang.srt.model_executor.forward_context import get_attn_backend

    pool = get_attn_backend().token_to_kv_pool
    table = forward_batch.req_to_token_pool.req_to_token if hasattr(forward_batch, "req_to_token_pool") else None
    table = table if table is not None else get_attn_backend().req_to_token
    n = q.shape[0]
    heads, dim = self.tp_q_head_num, self.head_dim
    query = q.view(n, heads, dim).float()
    out = torch.zeros_like(query)
    k_all, v_all = pool.get_key_buffer(0), pool.get_value_buffer(0)
    for i in range(n):
        length = int(forward_batch.seq_lens[i])
        slots = table[int(forward_batch.req_pool_indices[i]), :length].long()
        keys = k_all[slots].float().repeat_interleave(heads // k_all.shape[1], 1)
        values = v_all[slots].float().repeat_interleave(heads // v_all.shape[1], 1)
        scores = torch.einsum("hd,nhd->hn", query[i], keys) * self.scaling
        out[i] = torch.einsum("hn,nhd->hd", scores.softmax(-1), values)
    return out.to(q.dtype).view(n, heads * dim)


@pytest.fixture
def on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from sglang.srt.layers.attention.triton_backend import TritonAttnBackend
    from sglang.srt.layers.radix_attention import RadixAttention
    from sglang.srt.model_executor.runner import decode_cuda_graph_runner as decode_module
    from sglang.srt.speculative import frozen_kv_mtp_cuda_graph_runner as runner_module
    from sglang.test.kits.attention_unittest.runner_modes import speculative_draft_runner as kit

    for name in ("init_forward_metadata", "init_forward_metadata_out_graph", "init_forward_metadata_in_graph"):
        monkeypatch.setattr(TritonAttnBackend, name, lambda *a, **k: None)
    monkeypatch.setattr(RadixAttention, "forward", pool_attention)
    monkeypatch.setattr(runner_module, "resolve_decode_backend", EagerGraphBackend)
    # No CUDA streams on CPU: the capture "stream" is None (the stand-in graph backend never uses it).
    monkeypatch.setattr(decode_module, "get_or_create_global_graph_capture_stream", lambda: None)
    monkeypatch.setattr(kit, "_single_rank_graph_capture", cpu_graph_capture)


@contextmanager
def cpu_graph_capture(stream: Any = None) -> Iterator[Any]:
    yield SimpleNamespace(stream=stream)


CELLS = [f"draft-triton-topk{k}-page{p}-hd128-gqa4-bf16-graph" for k, p in ((1, 16), (4, 64), (8, 16))]


@pytest.mark.usefixtures("on_cpu")
@pytest.mark.parametrize("cell_id", CELLS)
def test_runner_check_drives_sglangs_runner(cell_id: str) -> None:
    report = check_runner(draft_case(load_matrix().cell(cell_id)), device="cpu")
    assert report.problems == []
    assert {k.split("-bs")[0] for k in report.errors} == {"eager", "graph", "graph-vs-eager"}
    assert len(report.errors) == 4 * (2 + 2 + 1)  # replay sizes 1, 3, 6, 8: two steps each vs reference, eager and graph


@pytest.mark.usefixtures("on_cpu")
def test_a_worker_that_builds_another_backend_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker handing back the runner's own (prefill-capable) backend for a topk 4 tree: the identity check fails
    before any graph is captured."""
    from sglang.srt.speculative.frozen_kv_mtp_worker_v2 import FrozenKVMTPDraftWorker

    from matrix.sglang_check.identity import BackendMismatch

    monkeypatch.setattr(
        FrozenKVMTPDraftWorker, "_init_triton_draft_attn_backend", lambda self: self.draft_model_runner.attn_backend
    )
    with pytest.raises(BackendMismatch, match="draft backend: sglang built another backend: skip_prefill False, expected True"):
        check_runner(draft_case(load_matrix().cell(CELLS[1])), device="cpu")
