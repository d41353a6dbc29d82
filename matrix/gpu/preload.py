"""What the fork server imports before it forks workers (matrix/gpu/forkserver.py), without starting CUDA.

Each module of the list is imported in order with torch's lazy CUDA initialisation replaced by a refusal, and with
`torch.cuda.get_device_capability` / `get_device_name` answered from NVML where that is safe
(matrix/gpu/nvmlanswers.py): flashinfer 0.7.2 and sglang ask for the capability at import, nothing more of CUDA is
needed to import them. An import that still asks for CUDA is cut short and left, with every later module, to the
workers. Nothing here imports torch or sglang at module level.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from matrix.gpu.nvmlanswers import Gpu, NvmlAnswers

# What the GPU checks import (matrix/gpu/*.py), in order; each is imported once, in the server, up to the first one
# that asks for CUDA at import (flashinfer 0.7.2 does: docs/gpu.md), which is left to the workers with all after it.
PRELOAD = (
    # pytest itself (not a pytest11 plugin, so never imported afresh by a worker; matrix/gpu/forkserver.py): every
    # worker and the controller import it first thing. First, so that it is preloaded whatever is cut later.
    "pytest",
    "torch",
    "triton",
    "triton.language",
    "transformers",
    "torch._dynamo",
    "torch._inductor.config",
    "flashinfer",
    "flashinfer.decode",
    "sglang.srt.layers.attention.attention_registry",
    "sglang.srt.layers.attention.triton_backend",
    "sglang.srt.layers.attention.trtllm_mha_backend",
    "sglang.srt.layers.radix_attention",
    "sglang.srt.model_executor.model_runner",
    "sglang.srt.speculative.frozen_kv_mtp_worker_v2",
    "sglang.srt.speculative.frozen_kv_mtp_cuda_graph_runner",
    "sglang.test.kits.attention_unittest.attention_methods.dense_attention",
    "sglang.test.kits.attention_unittest.runner_modes.speculative_draft_runner",
    "sglang.test.kits.attention_unittest.runner_modes.speculative_target_verify_runner",
)


class CudaAtImport(BaseException):
    """Raised inside torch's lazy CUDA initialisation while preloading: the import that asked for the device is cut
    short before CUDA starts, so the server stays fork-safe; the worker imports that module itself. A BaseException,
    so that `except Exception` / `except ImportError` fallbacks in libraries do not turn it into a degraded import."""


@dataclass
class Preload:
    """What the server holds: seconds per module, the modules left to the workers, and where each asked for CUDA."""

    seconds: dict[str, float] = field(default_factory=dict)
    deferred: dict[str, list[str]] = field(default_factory=dict)  # module -> call sites of the CUDA request
    unsafe: str | None = None  # why nothing may be forked (CUDA initialised, or a library swallowed the abort)
    answered: dict[str, int] = field(default_factory=dict)  # device query -> times NVML answered it
    threads: list[str] = field(default_factory=list)  # live threads when the preload ended (fork copies only one)
    driver_mapped_by: str | None = None  # the first import after which libcuda is in the server's address space


def _call_sites() -> list[str]:
    import traceback

    frames = [f for f in traceback.extract_stack()[:-2] if "/torch/" not in f.filename and "<frozen" not in f.filename]
    return [f"{f.filename}:{f.lineno} ({f.line})" for f in frames[-3:]]


def preload(modules: Sequence[str], gpu: Gpu | None = None, gpus: int = 0, env: Mapping[str, str] | None = None) -> Preload:
    """Import `modules` in order until one asks for CUDA at import: that import is cut short (CudaAtImport) before
    CUDA starts, every module it added is dropped again (a half-imported package tree breaks later imports), its call
    site is recorded, and it and every later module are left to the workers (re-running their imports here could
    repeat module-level registrations). Unsafe (fork nothing) when CUDA got initialised anyway, or a library caught
    the cut and went on (it may have cached a degraded state). With `gpu` (the host's one kind of GPU, `gpus` of
    them, from NVML), capability and name questions are answered from it during the imports, and torch's own
    functions are back afterwards."""
    state = Preload()
    asked: list[list[str]] = []
    answers: NvmlAnswers | None = None
    try:
        for k, name in enumerate(modules):
            torch = sys.modules.get("torch")
            if torch is not None and gpu is not None and answers is None:
                answers = NvmlAnswers(cuda=torch.cuda, gpu=gpu, env=os.environ if env is None else env, gpus=gpus)
                answers.__enter__()
            cut = _import_one(name, state, asked)
            if state.driver_mapped_by is None and driver_mapped():
                state.driver_mapped_by = name
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_initialized():
                state.unsafe = f"CUDA initialised while importing {name}"
                return state
            if cut is None and asked:
                state.unsafe = f"importing {name}: a library caught the CUDA cut-off and went on ({asked[0]})"
                return state
            if cut is not None:
                state.deferred[name] = cut
                state.deferred.update({later: ["after " + name] for later in modules[k + 1 :]})
                return state
        return state
    finally:
        if answers is not None:
            answers.__exit__(None, None, None)
            state.answered = dict(collections.Counter(answers.answered))
        state.threads = sorted(t.name for t in threading.enumerate())


def _import_one(name: str, state: Preload, asked: list[list[str]]) -> list[str] | None:
    """Import `name` with torch's lazy CUDA initialisation refused; where it was cut short (the modules it added
    dropped again), or None."""
    import importlib

    def refuse() -> None:
        asked.append(_call_sites())
        raise CudaAtImport

    torch = sys.modules.get("torch")
    original = torch.cuda._lazy_init if torch is not None else None
    if torch is not None:
        torch.cuda._lazy_init = refuse
    before = set(sys.modules)
    start = time.perf_counter()
    cut: list[str] | None = None
    try:
        importlib.import_module(name)
    except CudaAtImport:
        cut = asked[-1]
    except Exception as exc:
        cut = [f"{type(exc).__name__}: {exc}"]
    finally:
        if torch is not None and original is not None:
            torch.cuda._lazy_init = original
    state.seconds[name] = round(time.perf_counter() - start, 3)
    if cut is not None:
        for added in set(sys.modules) - before:
            del sys.modules[added]
    return cut


def driver_mapped(maps: str = "/proc/self/maps") -> bool:
    """Whether the CUDA driver library (libcuda.so) is mapped into this process. Loaded is not initialised (a
    library may open it at import); a worker forked after cuInit fails its first CUDA call, so the cells show it."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as handle:
            return any("/libcuda.so" in line for line in handle)
    except OSError:
        return False
