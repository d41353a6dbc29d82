"""Compare shard planners: makespan / lower bound and total compile (setup) time, in one run.

(a) the default matrix on a runner profile: cost table, or measured durations with --durations REPORT;
(b) sglang CI registrations (test files with est_time): each registration is one unit, setup 0.
Usage: python ci/bench_shards.py [--durations REPORT...] [--registrations PATH] [--shards 2,4,8]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from matrix.core.expect import effective_versions, expectations
from matrix.core.loader import load_matrix, load_runners
from matrix.core.report import read_report
from matrix.shard.cost import measured_from, workload_for
from matrix.shard.planner import plan_setup_aware
from matrix.shard.reference_planners import Planner, longest_first_files, longest_first_items
from matrix.shard.workload import WorkItem, Workload, evaluate

ROOT = Path(__file__).resolve().parent.parent
# sglang main of 2026-07-20, CUDA registrations only; ci/data/README.md says how it was taken and how to refresh it.
DEFAULT_REGISTRATIONS = ROOT / "ci" / "data" / "sglang-registrations-2026-07.json"
PLANNERS: tuple[tuple[str, Planner], ...] = (
    ("setup-aware (specmatrix)", plan_setup_aware),
    ("longest-first, cells", longest_first_items),
    ("longest-first, files", longest_first_files),
)


def table(title: str, workload: Workload, shard_counts: list[int]) -> None:
    configs = len({i.config for i in workload.items})
    print(f"\n{title}")
    print(
        f"  {len(workload.items)} units, {configs} configurations, {workload.workers} worker(s)/shard, "
        f"fixed {workload.shard_seconds:.0f} s/shard"
    )
    print(f"  {'shards':>6}  {'planner':<26} {'makespan s':>10} {'lower bd s':>10} {'ratio':>6} {'compile s':>9}")
    for n in shard_counts:
        if n > len(workload.items):
            continue
        for name, planner in PLANNERS:
            ev = evaluate(workload, planner(workload, n))
            print(f"  {n:>6}  {name:<26} {ev.makespan:>10.1f} {ev.lower_bound:>10.1f} {ev.ratio:>6.3f} {ev.setup_total:>9.0f}")


def matrix_workloads(runner_names: list[str], durations: list[Path]) -> list[tuple[str, Workload]]:
    matrix = load_matrix(None)
    runners = load_runners(())
    measured = measured_from([read_report(p) for p in durations]) if durations else None
    source = f"measured durations from {len(durations)} report(s)" if durations else "cost table (no measured report given)"
    out = []
    for name in runner_names:
        runner = runners[name]
        exps = expectations(matrix, runner, effective_versions(matrix, {}))
        out.append((f"(a) matrix {matrix.name} on {name}: {source}", workload_for(matrix, runner, exps, measured)))
    return out


def registration_workloads(path: Path, runner_config: str) -> list[tuple[str, Workload]]:
    doc: Any = json.loads(path.read_text(encoding="utf-8"))
    regs = [
        r
        for r in doc["registrations"]
        if r["backend"] == "CUDA" and not r["nightly"] and r["disabled"] is None and str(r["suite"]).endswith(runner_config)
    ]
    by_suite: defaultdict[str, list[WorkItem]] = defaultdict(list)
    for r in regs:
        # One unit per registration; its file is the unit auto_partition moves; no shared setup (0 s).
        item = WorkItem(
            id=f"{r['suite']}::{r['file']}", config=f"{r['suite']}::{r['file']}", seconds=float(r["est_time"]), file=r["file"]
        )
        by_suite[r["suite"]].append(item)
    pooled = Workload(items=tuple(i for items in by_suite.values() for i in items))
    out = [(f"(b) sglang registrations, all non-nightly CUDA suites for {runner_config} pooled (setup 0)", pooled)]
    for suite in sorted(by_suite):
        if len(by_suite[suite]) >= 10:
            out.append((f"(b) sglang registrations, suite {suite} (setup 0)", Workload(items=tuple(by_suite[suite]))))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--durations", nargs="*", type=Path, default=[], help="measured specmatrix reports")
    parser.add_argument("--runners", default="4-gpu-b200,1-gpu-h200", help="profiles for (a), comma-separated")
    parser.add_argument("--registrations", type=Path, default=DEFAULT_REGISTRATIONS)
    parser.add_argument("--runner-config", default="4-gpu-b200", help="sglang runner config for (b)")
    parser.add_argument("--shards", default="2,4,8", help="shard counts, comma-separated")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.shards.split(",")]
    for title, workload in matrix_workloads([r for r in args.runners.split(",") if r], args.durations):
        table(title, workload, counts)
    if args.registrations.is_file():
        try:
            workloads = registration_workloads(args.registrations, args.runner_config)
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            # ValueError covers malformed JSON; KeyError/TypeError a document of another shape.
            print(f"bench_shards: {args.registrations}: not a registrations file ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 2
        for title, workload in workloads:
            table(title, workload, counts)
    else:
        print(f"\n(b) skipped: registration data not found at {args.registrations} (pass --registrations PATH)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
