"""A hand-checked sample of `specmatrix pytest-audit` findings on a real tree, and the misses searched for.

Usage:
    python ci/pytest_audit_sample.py TREE --schedule-file S.toml --runners R.toml --verdicts ci/data/V.toml
        [--propose]                   # list a spread sample of the current findings to check by hand
        [--write results/pytest-audit.md]  # replace this tree's sample section of the page

The verdict file holds the hand check: `[[finding]]` test (node id), verdict ("TRUE" / "FALSE"), why (one
line); `[[miss]]` test, why: a test read by hand as never running in CI, to see whether the audit reports it.
The script audits TREE, says for each sampled finding whether it is still reported, for each miss what the
audit says of it, and prints the counts (exit 1 when a sampled finding is no longer reported).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from matrix.core.atomic import write_text_atomic  # noqa: E402
from matrix.core.runner_files import load_runners  # noqa: E402
from matrix.pytest_suites.audit import PytestAuditReport  # noqa: E402
from matrix.pytest_suites.run import AuditInput, run_audit  # noqa: E402

REPORTED = ("silent-skip", "silent-pass", "never-runs", "unscheduled")


def audit(tree: Path, schedules: list[Path], runners: list[Path]) -> PytestAuditReport:
    inputs = AuditInput(root=tree, schedule_files=tuple(schedules))
    return run_audit(inputs, load_runners(tuple(runners)))


def by_subject(report: PytestAuditReport) -> dict[str, list[tuple[str, str]]]:
    """Node id (or file path) -> (kind, message) of every finding about it."""
    out: dict[str, list[tuple[str, str]]] = {}
    for f in report.findings:
        out.setdefault(f.finding.scope or f.finding.path, []).append((f.finding.kind, f.finding.message))
    return out


def propose(report: PytestAuditReport, count: int) -> list[str]:
    """One test per (file, guard) of the silent skips and passes, spread evenly over the sorted groups."""
    groups: dict[tuple[str, str], str] = {}
    for f in sorted(report.findings, key=lambda f: f.finding.scope):
        if f.finding.kind in ("silent-skip", "silent-pass"):
            groups.setdefault((f.finding.path, f.finding.source), f.finding.scope)
    tests = [groups[k] for k in sorted(groups)]
    step = max(1, len(tests) // count)
    return tests[::step][:count]


def said_of(test: str, found: dict[str, list[tuple[str, str]]]) -> str:
    path = test.split("::", maxsplit=1)[0]
    kinds = [k for k, _ in found.get(test, [])] + [k for k, _ in found.get(path, []) if k in ("never-runs", "unscheduled")]
    return ", ".join(dict.fromkeys(kinds)) or "not reported (runs or undetermined)"


def section(name: str, tree: Path, report: PytestAuditReport, verdicts: dict[str, list[dict[str, str]]], command: str) -> str:
    found = by_subject(report)
    counts = Counter(f.finding.kind for f in report.findings)
    sample = verdicts.get("finding", [])
    tally = Counter(v["verdict"] for v in sample)
    misses = verdicts.get("miss", [])
    caught = [m for m in misses if said_of(m["test"], found) != "not reported (runs or undetermined)"]
    lines = [
        f"<!-- sample {name} start -->",
        f"### {name}",
        "",
        f"- command: `{command}`",
        f"- {report.files} test files, {report.tests} tests ({report.scheduled_tests} scheduled) on "
        f"{', '.join(report.runners)}; {report.undetermined} scheduled tests undetermined",
        "- findings: " + ", ".join(f"{k} {counts[k]}" for k in REPORTED),
        f"- sample of {len(sample)} findings checked by hand: {tally['TRUE']} TRUE, {tally['FALSE']} FALSE",
        f"- misses searched for: {len(misses)}, reported now: {len(caught)}",
        "",
        "| finding | audit says | verdict | why |",
        "|---|---|---|---|",
    ]
    for v in sample:
        lines.append(f"| <code>{v['test']}</code> | {said_of(v['test'], found)} | {v['verdict']} | {v['why']} |")
    lines += ["", "| miss searched for | audit says | why it never runs |", "|---|---|---|"]
    for m in misses:
        lines.append(f"| <code>{m['test']}</code> | {said_of(m['test'], found)} | {m['why']} |")
    lines.append(f"<!-- sample {name} end -->")
    return "\n".join(lines) + "\n"


def write_section(page: Path, name: str, text: str) -> None:
    current = page.read_text(encoding="utf-8") if page.exists() else ""
    start, end = f"<!-- sample {name} start -->", f"<!-- sample {name} end -->\n"
    if start in current and end in current:
        head, rest = current.split(start, 1)
        current = head + text + rest.split(end, 1)[1]
    else:
        current = current.rstrip("\n") + "\n\n" + text
    write_text_atomic(page, current)


def _shown(path: Path) -> str:
    """A path as the page shows it: relative to this repository when inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else path.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", type=Path)
    parser.add_argument("--schedule-file", type=Path, action="append", default=[])
    parser.add_argument("--runners", type=Path, action="append", default=[])
    parser.add_argument("--verdicts", type=Path, required=True)
    parser.add_argument("--propose", action="store_true")
    parser.add_argument("--write", type=Path)
    args = parser.parse_args(argv)
    report = audit(args.tree, args.schedule_file, args.runners)
    if args.propose:
        for test in propose(report, 10):
            print(test)
        return 0
    verdicts = tomllib.loads(args.verdicts.read_text(encoding="utf-8"))
    name = str(verdicts["tree"]["name"])
    options = " ".join(f"--schedule-file {_shown(s)}" for s in args.schedule_file)
    options += "".join(f" --runners {_shown(r)}" for r in args.runners)
    command = f"specmatrix pytest-audit {name.upper()} {options}".rstrip()
    text = section(name, args.tree, report, verdicts, command)
    print(text)
    if args.write is not None:
        write_section(args.write, name, text)
    found = by_subject(report)
    gone = [v["test"] for v in verdicts.get("finding", []) if not found.get(v["test"])]
    for test in gone:
        print(f"no longer reported: {test}", file=sys.stderr)
    return 1 if gone else 0


if __name__ == "__main__":
    sys.exit(main())
