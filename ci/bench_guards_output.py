"""Time the two parts of a warm `specmatrix guards` run that do not depend on the tree's cache: writing the report in
each format, and the imports of a fresh interpreter.

    python ci/bench_guards_output.py TREE [--repeat 9]     # TREE e.g. from `python ci/bench_guards.py --keep TREE`
    python ci/bench_guards_output.py TREE --against OTHER  # also: warm runs of OTHER's code and this code, interleaved

Writers: the tree is audited once (warm, through a private cache), then `render` of `matrix/cli/guards.py` writes
each format `--repeat` times in this process; the figure is the least CPU time (the machine is shared: the least
is the run the other jobs disturbed least). Imports: `python -X importtime -m matrix guards TREE --format json
--no-workflows` in a fresh interpreter `--repeat` times; the figures are the least and the median of the summed
self times, and the module count. Run it with `PYTHONPATH` set to another checkout to time that code instead.
`--against OTHER` then times `--repeat` warm runs of the whole command (CPU of the child, and wall) with
`PYTHONPATH=OTHER` and with this checkout, alternately, so both see the same load.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from matrix.cli.guards import FORMATS, render
from matrix.core.finding import Severity
from matrix.core.loader import load_runners
from matrix.guards.audit import load_suite_map
from matrix.guards.gate import gate
from matrix.guards.tree import audit_tree


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--against", type=Path, help="another checkout whose warm runs are timed against this one's")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
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
