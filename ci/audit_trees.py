"""Counts of `specmatrix schedule` and `specmatrix pytest-audit` on checkouts of other projects' trees.

Usage:
    python ci/audit_trees.py TREE [TREE ...]          # e.g. checkouts of Liger-Kernel, pytorch/ao, flashinfer
    python ci/audit_trees.py --findings 10 TREE ...   # also list the first N findings of each tree
    python ci/audit_trees.py --schedule-file flashinfer=ci/schedules/flashinfer-pr-test.toml TREE ...
    python ci/audit_trees.py --reasons 12 TREE ...    # the 12 most frequent undetermined reasons (default 8)

For each tree: the schedule's entries (and those read through a make target or a Modal function), the jobs not
read with their reasons grouped, the unknown runner labels, the files read (scripts, Makefiles, Modal files
included), the CPU seconds of a cold schedule read; then pytest-audit's counts (test files, tests, scheduled,
undetermined, tests only a job not read may run, findings by kind), the decided share
(1 - (undetermined + undetermined_unread) / tests) and the most frequent reasons a test is undetermined, with
their counts (from the JSON's `undetermined_tests`). `--schedule-file NAME=FILE` gives the tree whose folder is
named NAME a declared schedule (flashinfer's `ci/schedules/flashinfer-pr-test.toml`), as `pytest-audit
--schedule-file` does; a tree given one is reported twice, without and with it. Both commands run as a user runs
them (`python -m matrix.cli ...`, the cache off), so the figures are the CLI's own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "import sys; from matrix.cli.main import main; sys.exit(main(sys.argv[1:]))"]


def run_json(*argv: str) -> tuple[dict[str, Any], float, int]:
    """(the command's JSON output, its CPU seconds, its exit code)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPECMATRIX_NO_CACHE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([*CLI, *argv, "--format", "json"], capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout), cpu, done.returncode


def _followed(entry: dict[str, Any]) -> str:
    """Through what an entry was read: a Modal function, a make recipe, a script, or the workflow itself."""
    if any(label.startswith("modal-") for label in entry["labels"]):
        return "modal"
    file = entry["origin"]["file"]
    if file.endswith(("Makefile", ".mk")) or "/Makefile" in file:
        return "make"
    return "script" if not file.startswith(".github/") else "workflow"


def decided_share(audit: dict[str, Any]) -> float:
    """The share of a tree's tests the audit decides: 1 - (undetermined + undetermined_unread) / tests."""
    tests = audit["tests"]
    return 1 - (audit["undetermined"] + audit["undetermined_unread"]) / tests if tests else 1.0


def top_reasons(audit: dict[str, Any], limit: int) -> list[tuple[str, int]]:
    """The most frequent reasons a test is undetermined, with their counts (most first)."""
    counts = Counter(t["reason"] for t in audit.get("undetermined_tests", []))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


def report(tree: Path, findings: int, top_n: int = 8, schedule_files: tuple[Path, ...] = ()) -> list[str]:
    extra = [a for f in schedule_files for a in ("--schedule-file", str(f))]
    schedule, cpu, _ = run_json("schedule", str(tree), *extra)
    audit, _, code = run_json("pytest-audit", str(tree), *extra)
    entries = schedule["entries"]
    reasons = Counter(_reason_kind(u["reason"]) for u in schedule["unread"])
    labels = Counter(u["label"] for u in schedule["unknown_labels"])
    scripts = [s for s in schedule["sources"] if not s.startswith(".github/workflows/")]
    counts = audit["counts"]
    title = f"{tree.name} with {', '.join(str(f) for f in schedule_files)}" if schedule_files else tree.name
    out = [
        f"## {title}",
        "",
        f"- schedule: {len(entries)} entries ({_shares(Counter(_followed(e) for e in entries))}), "
        f"{len(schedule['unread'])} not read, {len(schedule['unknown_labels'])} unknown-label sightings "
        f"({len(labels)} labels), {len(schedule['sources'])} files read ({len(scripts)} besides the workflows); "
        f"cold read {cpu:.2f} s CPU",
        f"- not read, by reason: {_shares(reasons) or 'none'}",
        f"- unknown labels: {', '.join(sorted(labels)) or 'none'}",
        f"- pytest-audit (exit {code}): {audit['files']} test files, {audit['tests']} tests, {audit['scheduled_tests']} "
        f"scheduled, {audit['undetermined']} undetermined, {audit['undetermined_unread']} that only a job not read may run",
        f"- findings: {_shares(Counter({k: sum(v.values()) for k, v in counts.items() if v})) or 'none'}",
        f"- decided: {decided_share(audit):.1%} of {audit['tests']} tests "
        f"(1 - ({audit['undetermined']} + {audit['undetermined_unread']}) / {audit['tests']})",
    ]
    top = top_reasons(audit, top_n)
    if top:
        out += ["", f"Undetermined, top {len(top)} reasons:", ""]
        out += [f"- {count} tests: {reason[:300]}" for reason, count in top]
    if findings and audit["findings"]:
        out += ["", f"First {min(findings, len(audit['findings']))} findings:", ""]
        out += [f"{i}. `{f['kind']}` {f['test']} ({f['reason'][:120]})" for i, f in enumerate(audit["findings"][:findings], 1)]
    return [*out, ""]


def _reason_kind(reason: str) -> str:
    """A not-read reason without its particulars (paths, names), so that reasons group."""
    for key in (
        "a workflow of another repository",
        "known only at run time",
        "not in the tree",
        "outside the",
        "over the budget",
        "runs itself again",
        "parser cannot read",
        "launcher this reader does not know",
        "shell function",
        "make target",
        "Modal",
    ):
        if key in reason:
            return key
    return reason[:60]


def _shares(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counter.most_common())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path, help="checkouts to read")
    parser.add_argument("--findings", type=int, default=0, help="list the first N findings of each tree")
    parser.add_argument("--reasons", type=int, default=8, help="list the N most frequent undetermined reasons (default 8)")
    parser.add_argument(
        "--schedule-file",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a declared schedule for the tree whose folder is named NAME (repeatable)",
    )
    args = parser.parse_args(argv)
    declared: dict[str, list[Path]] = {}
    for given in args.schedule_file:
        name, eq, file = given.partition("=")
        if not eq or not name or not file:
            parser.error(f"--schedule-file {given!r}: expected NAME=FILE")
        if not Path(file).is_file():
            parser.error(f"--schedule-file {given!r}: {file} is not a file")
        declared.setdefault(name, []).append(Path(file).resolve())
    unknown = sorted(set(declared) - {t.resolve().name for t in args.trees})
    if unknown:
        parser.error(f"--schedule-file names no tree given: {', '.join(unknown)}")
    lines: list[str] = []
    for tree in args.trees:
        lines += report(tree.resolve(), args.findings, args.reasons)
        if tree.resolve().name in declared:
            lines += report(tree.resolve(), args.findings, args.reasons, tuple(declared[tree.resolve().name]))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
