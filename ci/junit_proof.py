"""The join on a real tree and real runs: how right the static verdicts were, as a table.

Usage: python ci/junit_proof.py TREE RUNNER=PATH [RUNNER=PATH ...] [--schedule-file FILE] [--commit SHA] [--all]

Runs `specmatrix pytest-audit TREE --junit RUNNER=PATH ... --format json` and prints, per runner and in total: the
certain verdicts and how many of them the runs confirmed ("skips here" and "runs here" apart), the contradicted
ones, the undetermined ones the runs resolved (skipped / ran), the tests that skipped in every run given, and the
tests absent from the runs. A run of a sample of the suite (some of its files) is judged on the files it holds:
a test of a file no run holds is "not sampled", not absent, unless `--all`. Then each contradicted test with the
guard the audit read and the message the run gave, and each test that skipped in every run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from matrix.cli.main import main as specmatrix  # noqa: E402


def commit_of(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "(not a git checkout: give --commit)"


def audit(argv: list[str]) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = specmatrix(argv)
    if code == 2:
        raise SystemExit(f"junit_proof: {err.getvalue().strip()}")
    return code, json.loads(out.getvalue()), err.getvalue()


def table(rows: list[dict[str, Any]], everywhere: list[dict[str, Any]], runners: list[str]) -> list[str]:
    head = ["runner", "certain", "confirmed", "skips here", "runs here", "contradicted", "undetermined", "resolved: skipped",
            "resolved: ran", "skipped in every run", "absent", "not collected"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for runner in [*runners, None]:
        mine = [r for r in rows if runner is None or r["runner"] == runner]
        judged = [r for r in mine if r["join"] in ("confirmed", "contradicted") and r["static"] in ("runs", "skips")]
        skips = [r for r in judged if r["static"] == "skips"]
        runs = [r for r in judged if r["static"] == "runs"]
        resolved = [r for r in mine if r["join"] == "resolved"]
        count = Counter(r["join"] for r in mine)
        cells = [
            f"`{runner}`" if runner else "**all**",
            str(len(judged)),
            str(count["confirmed"]),
            f"{sum(r['join'] == 'confirmed' for r in skips)} of {len(skips)}",
            f"{sum(r['join'] == 'confirmed' for r in runs)} of {len(runs)}",
            str(sum(r["join"] == "contradicted" for r in judged) + sum(r["static"] == "not-selected" for r in mine)),
            str(len(resolved)),
            str(sum(r["observed"] == "skipped" for r in resolved)),
            str(sum(r["observed"] != "skipped" for r in resolved)),
            str(sum(1 for f in everywhere if runner is None or runner in f["runners"])),
            str(count["absent"]),
            str(count["not-collected"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", type=Path)
    parser.add_argument("runs", nargs="+", metavar="RUNNER=PATH")
    parser.add_argument("--schedule-file", type=Path, action="append", default=[])
    parser.add_argument("--commit", default="", help="the tree's commit, when it is not a git checkout")
    parser.add_argument("--all", action="store_true", help="judge every test, not only those of files a run holds")
    args = parser.parse_args(argv)
    command = ["pytest-audit", str(args.tree), *(f"--junit={r}" for r in args.runs)]
    command += [f"--schedule-file={s}" for s in args.schedule_file]
    code, doc, _ = audit([*command, "--format", "json"])
    runs = doc["runs"]
    rows: list[dict[str, Any]] = runs["tests"]
    sampled = {r["path"] for r in rows if r["observed"] != "absent"}
    kept = rows if args.all else [r for r in rows if r["path"] in sampled]
    everywhere = [f for f in doc["findings"] if f["kind"] == "skipped-in-every-run" and (args.all or f["path"] in sampled)]
    runners = list(runs["runners"])
    print(f"tree: {args.tree} at {args.commit or commit_of(args.tree)}")
    print(f"command: specmatrix {' '.join(command)} (exit {code})")
    for run in runs["inputs"]:
        cases = sum(f["testcases"] for f in run["files"])
        matched = sum(f["matched"] for f in run["files"])
        print(f"run {run['runner']}: {run['path']}: {len(run['files'])} file(s), {cases} testcases, {matched} of this tree")
    print(f"tests judged: {len({r['test'] for r in kept})} in {len(sampled)} file(s) the runs hold", end="")
    print(
        ""
        if args.all
        else f" ({len({r['test'] for r in rows}) - len({r['test'] for r in kept})} tests of other files not sampled)"
    )
    print()
    print("\n".join(table(kept, everywhere, runners)))
    contradicted = [r for r in kept if r["join"] == "contradicted"]
    print(f"\ncontradicted: {len(contradicted)}")
    for r in contradicted:
        print(f"- {r['test']} on {r['runner']}: static {r['static']}, run {r['observed']}")
        print(f"    guard read: {r['guard'] or '(none)'}")
        print(f"    run's message: {r['message'] or '(none)'}")
    print(f"\nskipped in every run: {len(everywhere)}")
    for f in everywhere:
        print(f"- {f['test']}: {f['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
