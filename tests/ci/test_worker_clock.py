"""ci/worker_clock.py: torch.compile's cache outcomes in each process's clock line (what told a run over an empty
inductor cache from one that hit it, results/gpu-h200.md)."""

from __future__ import annotations

import collections
import gc
import sys
import types
from collections.abc import Iterator

import pytest

from tests.ci_scripts import ci_script


@pytest.fixture
def clock() -> Iterator[types.ModuleType]:
    """The script as a module; the collector callback it installs at load is taken out again afterwards."""
    module = ci_script("worker_clock")
    yield module
    gc.callbacks.remove(module._on_gc)


def _dynamo_utils(counters: dict[str, dict[str, int]], phases: dict[str, list[float]]) -> types.ModuleType:
    module = types.ModuleType("torch._dynamo.utils")
    module.counters = collections.defaultdict(collections.Counter, {k: collections.Counter(v) for k, v in counters.items()})  # type: ignore[attr-defined]
    module.compilation_time_metrics = phases  # type: ignore[attr-defined]
    return module


def test_cache_outcomes_and_compile_phases_are_kept(monkeypatch: pytest.MonkeyPatch, clock: types.ModuleType) -> None:
    utils = _dynamo_utils(
        {
            "inductor": {"fxgraph_cache_hit": 5, "fxgraph_cache_miss": 3, "pattern_matcher_count": 40},
            "aot_autograd": {"autograd_cache_hit": 4, "total": 9},
            "frames": {"total": 8, "ok": 8},
        },
        {"_compile.compile_inner": [1.25, 0.5], "bytecode_tracing": [], "get_fake_value": [0.125]},
    )
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", utils)
    got = clock._compile_counters()
    assert got["compile_caches"] == {
        "inductor.fxgraph_cache_hit": 5,
        "inductor.fxgraph_cache_miss": 3,
        "aot_autograd.autograd_cache_hit": 4,
        "frames.total": 8,
        "frames.ok": 8,
    }
    assert got["compile_phase_seconds"] == {"_compile.compile_inner": 1.75, "get_fake_value": 0.125}
    line = {"role": "gw0", "loaded": 10.0, "configured": 11.0, **got}
    text = clock.summary([{"role": "controller", "loaded": 10.0}, line])
    assert "'inductor.fxgraph_cache_miss': 3" in text and "'_compile.compile_inner': 1.75" in text


def test_a_process_that_never_compiled_reports_nothing(monkeypatch: pytest.MonkeyPatch, clock: types.ModuleType) -> None:
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils", raising=False)
    assert clock._compile_counters() == {}
