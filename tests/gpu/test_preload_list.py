"""What the fork server preloads: sglang's draft path first, then what a worker's first torch.compile imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.gpu.preload import COMPILE_STACK, PRELOAD

ROOT = Path(__file__).resolve().parents[2]


def test_the_compile_stack_is_preloaded_after_every_library_the_cells_import() -> None:
    """A compile-stack module that asked for CUDA at import would be deferred with everything after it: last, it can
    never take flashinfer or sglang with it."""
    assert PRELOAD[-len(COMPILE_STACK) :] == COMPILE_STACK
    libraries = [k for k, name in enumerate(PRELOAD) if name.partition(".")[0] in {"flashinfer", "sglang", "transformers"}]
    assert libraries and max(libraries) < PRELOAD.index(COMPILE_STACK[0])
    assert "torch._inductor.compile_fx" in COMPILE_STACK  # where torch.compile's first call spends its imports


PROBE = """
import json, sys
from matrix.gpu.preload import COMPILE_STACK, preload
state = preload(("torch", "torch._dynamo", *COMPILE_STACK))
import torch
print(json.dumps({"unsafe": state.unsafe, "deferred": sorted(state.deferred), "cuda": torch.cuda.is_initialized(),
                  "inductor": sum(1 for m in sys.modules if m.startswith("torch._inductor."))}))
"""


@pytest.mark.requires_torch
def test_the_compile_stack_imports_without_cuda() -> None:
    """In a fresh interpreter (CPU torch): nothing of it asks for the device, and it brings inductor with it."""
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    state = json.loads(done.stdout.strip().splitlines()[-1])
    assert state["unsafe"] is None and state["deferred"] == [] and state["cuda"] is False
    assert state["inductor"] > 100
