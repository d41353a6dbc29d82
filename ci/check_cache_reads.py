"""Check that pytest-audit's cache records, for every test file, at least what that file's audit reads.

The audit shares its parses between files and records reads per file (`matrix.pytest_suites.tracked`). The oracle is
a collector and an auditor of their own for each file: nothing can come from a memo another file filled, so what
it reads is exactly what that file's audit depends on. Every file's reads in the shared audit must include those.

Usage: python ci/check_cache_reads.py TREE [--schedule-file FILE ...]
Prints per tree the files, the reads of both audits and any file whose shared reads miss one; exit 1 if any does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from matrix.core.model import RunnerProfile  # noqa: E402
from matrix.core.runner_files import load_runners  # noqa: E402
from matrix.pytest_suites.audit import SuiteAuditor  # noqa: E402
from matrix.pytest_suites.config import read_pytest_config  # noqa: E402
from matrix.pytest_suites.loader import SourceLoader  # noqa: E402
from matrix.pytest_suites.packs import builtin_packs  # noqa: E402
from matrix.pytest_suites.rules import discover_with_conftests  # noqa: E402
from matrix.pytest_suites.run import AuditInput, invocations, read_schedule  # noqa: E402
from matrix.pytest_suites.tracked import TrackedCollector  # noqa: E402
from matrix.schedule.sources import declared_markers  # noqa: E402


def reads_per_file(inputs: AuditInput, profiles: Mapping[str, RunnerProfile], *, shared: bool) -> dict[str, set[str]]:
    """Test file -> the paths its collection and audit read: with one collector for the tree (`shared`, as the
    audit runs), or a collector and an auditor of its own per file."""
    config = read_pytest_config(inputs.root)
    markers = declared_markers(inputs.schedule_files)
    schedule = read_schedule(inputs, profiles)
    read = invocations(inputs.root, schedule)
    paths, _ = discover_with_conftests(inputs.root, config, [a for i in read for a in i.args if i.runs])
    load = SourceLoader(inputs.root, fingerprints=True)

    def fresh() -> tuple[TrackedCollector, SuiteAuditor]:
        collector = TrackedCollector(load, config, builtin_packs(), markers)
        collector.problem = load.problem
        auditor = SuiteAuditor(schedule, profiles, builtin_packs(), inputs.installed, read, project=collector.project)
        return collector, auditor

    collector, auditor = fresh()
    out: dict[str, set[str]] = {}
    for path in paths:
        if not shared:
            collector, auditor = fresh()
        collector.track(path)
        auditor.forget_evaluations()
        auditor.audit_file(collector.collect(path))
        collector.untrack()
        out[path] = set(collector.reads_of[path])
    return out


def missed(inputs: AuditInput, profiles: Mapping[str, RunnerProfile]) -> dict[str, set[str]]:
    """Per test file, what its own audit reads that the shared audit did not record for it (empty: none)."""
    shared = reads_per_file(inputs, profiles, shared=True)
    alone = reads_per_file(inputs, profiles, shared=False)
    return {p: alone[p] - shared[p] for p in alone if alone[p] - shared[p]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", type=Path)
    parser.add_argument("--schedule-file", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    inputs = AuditInput(root=args.tree, schedule_files=tuple(args.schedule_file))
    profiles = load_runners()
    shared = reads_per_file(inputs, profiles, shared=True)
    alone = reads_per_file(inputs, profiles, shared=False)
    gaps = {p: alone[p] - shared[p] for p in alone if alone[p] - shared[p]}
    print(
        f"{args.tree}: {len(alone)} test files; reads {sum(map(len, shared.values()))} shared, "
        f"{sum(map(len, alone.values()))} alone; files missing a read: {len(gaps)}"
    )
    for path, paths in sorted(gaps.items())[:20]:
        print(f"  {path}: {sorted(paths)[:5]}")
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main())
