"""Time the two parts of a warm `specmatrix guards` run that do not depend on the tree's cache: writing the report in
each format, and the imports of a fresh interpreter.

    python ci/bench_guards_output.py TREE [--repeat 9]     # TREE e.g. from `python ci/bench_guards.py --keep TREE`
    python ci/bench_guards_output.py TREE --against OTHER  # also: warm runs of OTHER's code and this code, interleaved
    python ci/bench_guards_output.py TREE --timeline [--against OTHER]  # where one warm run's time goes

Writers: the tree is audited once (warm, through a private cache), then `render` of `matrix/cli/guards.py` writes
each format `--repeat` times in this process; the figure is the least CPU time (the machine is shared: the least
is the run the other jobs disturbed least). Imports: `python -X importtime -m matrix guards TREE --format json
--no-workflows` in a fresh interpreter `--repeat` times; the figures are the least and the median of the summed
self times, and the module count. Run it with `PYTHONPATH` set to another checkout to time that code instead.
`--against OTHER` then times `--repeat` warm runs of the whole command (CPU of the child, and wall) with
`PYTHONPATH=OTHER` and with this checkout, alternately, so both see the same load. `--timeline` prints instead
the median time at which each stage of a warm run ends (`time.perf_counter` marks in a fresh interpreter: the
imports, the parser and profiles, the cache file, the listing, the per-file loop, the gate, rendering, printing).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matrix.cli.guards import FORMATS, render
from matrix.core.finding import Severity
from matrix.core.loader import load_runners
from matrix.registered_suite.audit import load_suite_map
from matrix.registered_suite.gate import gate
from matrix.registered_suite.tree import audit_tree


def least_cpu(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return best


def import_totals(tree: Path, cache: Path, repeat: int) -> tuple[list[float], int]:
    command = [sys.executable, "-X", "importtime", "-m", "matrix", "guards", str(tree), "--format", "json"]
    command += ["--no-workflows", "--cache-dir", str(cache)]
    totals, modules = [], 0
    for _ in range(repeat):
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir())
        lines = [line for line in done.stderr.splitlines() if line.startswith("import time:") and "|" in line]
        selfs = [line.split(":", 1)[1].split("|")[0].strip() for line in lines]
        totals.append(sum(int(s) for s in selfs if s.isdigit()) / 1000)
        modules = sum(1 for s in selfs if s.isdigit())
    return totals, modules


def warm_runs(tree: Path, cache: Path, code: Path) -> tuple[float, float]:
    """(CPU, wall) seconds of one warm run of `code`'s package in a fresh interpreter."""
    command = [sys.executable, "-m", "matrix", "guards", str(tree), "--format", "json", "--no-workflows"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([*command, "--cache-dir", str(cache)], env=env, capture_output=True, check=False, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def compare(tree: Path, other: Path, repeat: int) -> None:
    sides = {f"{other}": other.resolve(), "this checkout": Path(__file__).resolve().parents[1]}
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as tmp:
        for name, code in sides.items():  # fill each side's own cache
            warm_runs(tree, Path(tmp) / name.replace("/", "_"), code)
        for _ in range(repeat):
            for name, code in sides.items():
                runs[name].append(warm_runs(tree, Path(tmp) / name.replace("/", "_"), code))
    for name, pairs in runs.items():
        cpu, wall = [c for c, _ in pairs], [w for _, w in pairs]
        print(
            f"warm, {name}: CPU median {statistics.median(cpu):.3f} s (least {min(cpu):.3f}), "
            f"wall median {statistics.median(wall):.3f} s ({repeat} runs, interleaved)"
        )


# One warm run in a fresh interpreter with `time.perf_counter` marks (wall, and the process's CPU) where each stage
# ends; the per-file work (reading, hashing, checking seals, decoding entries) is summed. Written for both layouts
# of the cache (`matrix.registered_suite.cache`, or the results cache inside `matrix.registered_suite.tree` before it).
TIMELINE = r"""
import sys, time
start_wall, start_cpu = time.perf_counter(), time.process_time()
marks = []
def mark(name):
    marks.append((name, time.perf_counter() - start_wall, time.process_time() - start_cpu))
import importlib, json
main_module = importlib.import_module("matrix.cli.main")
guards_cli = importlib.import_module("matrix.cli.guards")
tree = importlib.import_module("matrix.registered_suite.tree")
try:
    cache = importlib.import_module("matrix.registered_suite.cache")
except ImportError:
    cache = tree
mark("imports (the guards command's modules)")
sums = {"read": 0.0, "hash (file keys)": 0.0, "seal checks": 0.0, "decode entries": 0.0}
def ends(module, name, label, static=False):
    real = getattr(module, name)
    def wrapped(*args, **kwargs):
        out = real(*args, **kwargs)
        mark(label)
        return out
    setattr(module, name, staticmethod(wrapped) if static else wrapped)
def summed(module, name, label):
    real = getattr(module, name)
    def wrapped(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            sums[label] += time.perf_counter() - t
    setattr(module, name, wrapped)
ends(guards_cli, "load_runner_profiles", "parser built, options and runner profiles read")
ends(guards_cli, "load_suite_map", "suite map read")
ends(tree, "settings_key", "settings key")
ends(tree.ResultCache, "_load", "cache file loaded", static=True)
ends(tree, "list_tree", "tree listed")
ends(tree, "_report", "report built (files read, hashed and looked up before it)")
ends(guards_cli, "gate", "gate")
ends(guards_cli, "render", "rendered")
if hasattr(tree, "TreeFiles"):  # files read through the tree's descriptor
    summed(tree.TreeFiles, "read", "read")
else:
    summed(tree, "read_file", "read")
summed(tree, "file_key", "hash (file keys)")
summed(cache, "seal", "seal checks")
summed(cache, "decode", "decode entries")
code = main_module.main(sys.argv[1:])
mark("printed, main returned")
sys.stderr.write(json.dumps({"marks": marks, "sums": sums, "code": code}) + "\n")
"""


def timeline_runs(tree: Path, cache: Path, code: Path) -> dict[str, object]:
    """The marks of one warm run of `code`'s package, and the wall seconds of the whole process."""
    command = [sys.executable, "-c", TIMELINE, "guards", str(tree), "--format", "json", "--no-workflows"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--cache-dir", str(cache)], env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir()
    )
    wall = time.perf_counter() - start
    doc: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    doc["process"] = wall
    return doc


def timelines(tree: Path, sides: dict[str, Path], repeat: int) -> None:
    """Median marks over `repeat` interleaved warm runs of each side."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as tmp:
        for name, code in sides.items():
            warm_runs(tree, Path(tmp) / name.replace("/", "_"), code)  # fill each side's own cache
        for _ in range(repeat):
            for name, code in sides.items():
                runs[name].append(timeline_runs(tree, Path(tmp) / name.replace("/", "_"), code))
    for name, docs in runs.items():
        print(f"timeline of a warm run, {name} (medians of {repeat}; ms since the interpreter ran its first line):")
        previous = 0.0
        for index, (label, _, _) in enumerate(docs[0]["marks"]):
            wall = 1000 * statistics.median(d["marks"][index][1] for d in docs)
            cpu = 1000 * statistics.median(d["marks"][index][2] for d in docs)
            print(f"  {wall:6.1f} wall (+{wall - previous:5.1f})  {cpu:6.1f} CPU  {label}")
            previous = wall
        sums = ", ".join(f"{k} {1000 * statistics.median(d['sums'][k] for d in docs):.1f}" for k in docs[0]["sums"])
        print(f"  of which, per file summed (ms): {sums}")
        process = 1000 * statistics.median(d["process"] for d in docs)
        print(f"  the whole process (start-up, the run, exit): {process:.1f} ms wall")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--against", type=Path, help="another checkout whose warm runs are timed against this one's")
    parser.add_argument("--timeline", action="store_true", help="only the timeline of a warm run (and of --against's)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.timeline:
        here = Path(__file__).resolve().parents[1]
        sides = {**({str(args.against): args.against.resolve()} if args.against is not None else {}), "this checkout": here}
        timelines(args.tree, sides, args.repeat)
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-output-") as tmp:
        cache = Path(tmp)
        suite_map = load_suite_map(None)
        audit_tree(args.tree, load_runners(), suite_map=suite_map, jobs=2, cache_dir=cache)  # fill the cache
        report = audit_tree(args.tree, load_runners(), suite_map=suite_map, jobs=2, cache_dir=cache)
        result = gate(report, show=Severity.WARNING)
        print(f"{len(report.findings)} findings, {len(result.shown)} shown")
        for fmt in FORMATS:
            seconds = least_cpu(functools.partial(render, report, result, fmt), args.repeat)
            print(f"write --format {fmt}: {1000 * seconds:.1f} ms CPU (least of {args.repeat})")
        totals, modules = import_totals(args.tree, cache, args.repeat)
    print(
        f"imports of a warm run: {min(totals):.1f} ms least, {statistics.median(totals):.1f} ms median "
        f"({modules} modules, {args.repeat} runs)"
    )
    if args.against is not None:
        compare(args.tree, args.against, args.repeat)
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
