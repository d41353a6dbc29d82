"""Time `python3 -m nox -s tests` (the whole CPU suite): wall seconds and CPU seconds (user+sys of every process).

Usage: python3 ci/bench_tests.py [--repeat 3] [-- extra nox arguments]
Each run prints its wall and CPU time and the 1-minute load average before it started (other work on the
machine inflates the wall time; CPU time is the steadier figure). The summary gives the best and the median of each.
The venv must exist already (one plain `python3 -m nox -s tests` first) so installs are not timed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs (default: 3)")
    parser.add_argument("extra", nargs="*", help="more nox arguments, after --")
    args = parser.parse_args(argv)
    command = [sys.executable, "-m", "nox", "-s", "tests", *args.extra]
    print("+ " + " ".join(command), flush=True)
    walls: list[float] = []
    cpus: list[float] = []
    for k in range(1, args.repeat + 1):
        load = os.getloadavg()[0]
        cpu0, t0 = children_cpu(), time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
        summary = next((ln.strip("= ") for ln in reversed(done.stdout.splitlines()) if " passed" in ln), "no summary")
        print(f"run {k}: wall {wall:.1f} s, cpu (user+sys) {cpu:.1f} s, load before {load:.2f}; {summary}", flush=True)
        if done.returncode != 0:
            print(done.stdout[-3000:] + done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        walls.append(wall)
        cpus.append(cpu)
    print(f"best of {args.repeat}: wall {min(walls):.1f} s, cpu {min(cpus):.1f} s")
    # The targets are medians: one slow or fast run on a shared machine moves neither.
    print(f"median of {args.repeat}: wall {statistics.median(walls):.1f} s, cpu {statistics.median(cpus):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
