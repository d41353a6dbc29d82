"""Time `specmatrix pytest-audit` on a flashinfer tree, cold: a fresh interpreter per run, no cache of any kind.

Usage: python ci/bench_pytest_audit.py --git-dir /path/to/flashinfer.git [--repeat 5] [--cpus 0,1] [--target 10]
       python ci/bench_pytest_audit.py --checkout ~/src/flashinfer
Each run prints its wall and CPU seconds (user+sys of the audit process and its workers) and the 1-minute load
average before it started; `--cpus` pins the runs to those CPUs (taskset semantics, Linux), so "on 2 cores" can
be measured on a bigger machine. Then a single-core `ast.parse` of the suite's files (everything under tests/,
test_*.py and conftest.py elsewhere) in a fresh interpreter, and the audit's median over it.
Exit 1 when the median wall time is over --target seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ci.pytest_audit_flashinfer import extract  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# The parse yardstick: one fresh interpreter parses the suite's Python files (every file under tests/, and
# test_*.py / conftest.py elsewhere) with ast.parse on one core; its CPU seconds are the process's own.
PARSE = """
import ast, pathlib, sys, time
root = pathlib.Path(sys.argv[1])
files = sorted(p for p in root.rglob("*.py") if p.relative_to(root).parts[0] == "tests"
               or p.name.startswith("test_") or p.name == "conftest.py")
sources = [p.read_bytes() for p in files]
wall, cpu = time.perf_counter(), time.process_time()
for source in sources:
    ast.parse(source)
print(len(files), sum(map(len, sources)), time.perf_counter() - wall, time.process_time() - cpu)
"""


def parse_yardstick(tree: Path) -> tuple[int, int, float, float]:
    """(files, bytes, wall, cpu) of a single-core ast.parse of the suite's files, in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PARSE, str(tree)], capture_output=True, text=True, check=True)
    files, size, wall, cpu = done.stdout.split()
    return int(files), int(size), float(wall), float(cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkout", type=Path)
    source.add_argument("--git-dir", type=Path)
    parser.add_argument("--schedule", type=Path, default=ROOT / "ci/schedules/flashinfer-pr-test.toml")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cpus", default="", help="comma-separated CPU ids to pin the runs to (default: no pinning)")
    parser.add_argument("--target", type=float, default=10.0, help="seconds the median wall time must stay under")
    args = parser.parse_args(argv)
    cpus = {int(c) for c in args.cpus.split(",") if c.strip()}
    with tempfile.TemporaryDirectory(prefix="specmatrix-bench-") as scratch:
        tree = args.checkout
        if args.git_dir is not None:
            print("flashinfer", extract(args.git_dir, Path(scratch)))
            tree = Path(scratch) / "tree"
        command = [
            sys.executable,
            "-m",
            "matrix",
            "pytest-audit",
            str(tree),
            "--schedule-file",
            str(args.schedule),
            "--format",
            "json",
            "--no-cache",  # cold: the results cache is neither read nor written (ci/bench_pytest_audit_cache.py times it)
        ]
        print("+ " + " ".join(command) + (f"  (pinned to CPUs {sorted(cpus)})" if cpus else ""), flush=True)
        walls: list[float] = []
        spent: list[float] = []
        for k in range(1, args.repeat + 1):
            load = os.getloadavg()[0]
            cpu0, t0 = children_cpu(), time.perf_counter()
            done = subprocess.run(
                command,
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
                preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
            )
            wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
            if done.returncode not in (0, 1):
                print(done.stderr, file=sys.stderr)
                return 2
            walls.append(wall)
            spent.append(cpu)
            print(f"run {k}: wall {wall:.2f} s, cpu {cpu:.2f} s, load before {load:.2f}", flush=True)
        load = os.getloadavg()[0]
        files, size, parse_wall, parse_cpu = parse_yardstick(tree)
    print(f"ast.parse of {files} files ({size / 1e6:.1f} MB), one core:", end=" ")
    print(f"wall {parse_wall:.2f} s, cpu {parse_cpu:.2f} s, load before {load:.2f}")
    median = statistics.median(walls)
    print(f"wall best {min(walls):.2f} s, median {median:.2f} s", end="; ")
    print(f"cpu best {min(spent):.2f} s, median {statistics.median(spent):.2f} s")
    print(f"audit / parse: wall {median / parse_wall:.2f}x, cpu {statistics.median(spent) / parse_cpu:.2f}x")
    return 0 if median <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
