"""Where a pytest-xdist run's start-up goes: wall-clock marks per process, one JSON line each, to $SPECMATRIX_CLOCK.

A pytest plugin (`-p worker_clock` with this directory on the path; ci/gpu_host_runs.sh tree-ab). Each process writes
its role (controller or the worker's id), when it started (from /proc: for a forked worker, the fork), and when it
loaded this plugin, configured, started the session, finished collecting and began its first item; the controller
adds when each worker came up and reported its collection. Read with ci/worker_clock.py REPORT.jsonl.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

CLOCK_ENV = "SPECMATRIX_CLOCK"
LOADED = time.time()
_marks: dict[str, float] = {"loaded": LOADED}
_role = ["controller"]
# Time in the cyclic collector from this plugin's load on, per generation (sglang's capture starts with a full
# gc.collect(); Python's own collections come on top): [collections, seconds] each.
_gc: dict[int, list[float]] = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
_gc_started = [0.0]


def _on_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _gc_started[0] = time.perf_counter()
        return
    entry = _gc.setdefault(int(info.get("generation", 2)), [0, 0.0])
    entry[0] += 1
    entry[1] += time.perf_counter() - _gc_started[0]


gc.callbacks.append(_on_gc)


def _process_start() -> float | None:
    """This process's start in seconds since the epoch (Linux: /proc/self/stat field 22 and the boot time)."""
    try:
        fields = Path("/proc/self/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _mark(name: str) -> None:
    _marks.setdefault(name, time.time())


def _compile_counters() -> dict[str, Any]:
    """torch.compile's cache outcomes and compile phases in this process (torch._dynamo.utils: `counters`, whose
    "inductor" and "aot_autograd" groups count FX-graph and AOTAutograd cache hits, misses and bypasses, and
    `compilation_time_metrics`, seconds per phase); nothing when this process never imported dynamo."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return {}
    counters = getattr(utils, "counters", {})
    caches = {
        f"{group}.{name}": int(count)
        for group in ("inductor", "aot_autograd")
        for name, count in dict(counters.get(group, {})).items()
        if "cache" in name
    }
    frames = {f"frames.{name}": int(count) for name, count in dict(counters.get("frames", {})).items()}
    phases = getattr(utils, "compilation_time_metrics", {})
    seconds = {str(name): round(sum(times), 3) for name, times in dict(phases).items() if times}
    return {"compile_caches": {**caches, **frames}, "compile_phase_seconds": seconds}


def _write() -> None:
    path = os.environ.get(CLOCK_ENV)
    if not path:
        return
    collector = {
        "gc_seconds": {str(g): round(v[1], 3) for g, v in _gc.items()},
        "gc_collections": {str(g): int(v[0]) for g, v in _gc.items()},
        "gc_tracked_at_end": len(gc.get_objects()),
        "gc_frozen": gc.get_freeze_count(),
        **_compile_counters(),
    }
    line = json.dumps({"role": _role[0], "pid": os.getpid(), "process_start": _process_start(), **_marks, **collector})
    with open(path, "a", encoding="utf-8") as handle:  # one short line per process, appended
        handle.write(line + "\n")


def pytest_configure(config: Any) -> None:
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        _role[0] = str(worker.get("workerid", "worker"))
    _mark("configured")


def pytest_sessionstart(session: Any) -> None:
    _mark("session_started")


def pytest_collection_finish(session: Any) -> None:
    _mark("collected")


def pytest_runtest_setup(item: Any) -> None:
    _mark("first_item")


def pytest_testnodeready(node: Any) -> None:
    _mark(f"node_ready_{node.gateway.id}")


def pytest_xdist_node_collection_finished(node: Any, ids: Any) -> None:
    _mark(f"node_collected_{node.gateway.id}")


def pytest_runtest_logreport(report: Any) -> None:
    _mark("first_report")


def pytest_unconfigure(config: Any) -> None:
    _mark("unconfigured")
    _write()


def summary(lines: list[dict[str, Any]]) -> str:
    """Seconds after the controller loaded this plugin, per process and mark."""
    controller = next((d for d in lines if d.get("role") == "controller"), None)
    if controller is None:
        return "no controller line"
    zero = float(controller["loaded"])
    out = []
    for d in sorted(lines, key=lambda d: (d.get("role") != "controller", str(d.get("role")))):
        marks = sorted(((k, v) for k, v in d.items() if isinstance(v, float)), key=lambda kv: kv[1])
        collector = f"; gc {d.get('gc_seconds')} s in {d.get('gc_collections')} collections, {d.get('gc_tracked_at_end')}"
        collector += f" tracked at the end, {d.get('gc_frozen')} frozen"
        if d.get("compile_caches"):
            top = sorted(d.get("compile_phase_seconds", {}).items(), key=lambda kv: -kv[1])[:4]
            collector += f"; torch.compile {d['compile_caches']}, phases {dict(top)}"
        out.append(f"{d.get('role')}: " + ", ".join(f"{k} {v - zero:+.2f}" for k, v in marks) + collector)
    return "\n".join(out)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        rows = [json.loads(line) for line in Path(name).read_text(encoding="utf-8").splitlines() if line.strip()]
        print(f"{name}\n{summary(rows)}")
