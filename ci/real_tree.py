"""Run the guard audit on a fetched sglang checkout and say what it found and what it believed.

    python ci/real_tree.py CHECKOUT [--tests test/registered] [--code DIR]

CHECKOUT holds `test/registered`, `.github/workflows` and `scripts/ci` of an sglang commit (for example
`git --git-dir=MIRROR archive COMMIT .github scripts/ci test/registered | tar -x -C CHECKOUT`). Prints:
counts per finding kind without workflows (`--no-workflows`) and with them; the schedule read (entries per
workflow file, unread jobs, labels no profile knows); the `unscheduled` findings by cause; and, for every suite
still unscheduled, where its name appears in the workflow files: only on commented-out lines, nowhere, or on a
live line (which would mean the walker missed a job, and is flagged). `--code DIR` runs another checkout of
specmatrix (its `matrix` package) instead of this one, for before/after figures. Exit 0, or 1 when a still
unscheduled suite appears on a live workflow line.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from pathlib import Path


def run_matrix(code: Path | None, checkout: Path, *args: str) -> tuple[int, str, str]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    done = subprocess.run(
        [sys.executable, "-m", "matrix", *args], cwd=checkout, env=env, capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout, done.stderr


def counts(doc: dict[str, object]) -> dict[str, int]:
    raw = doc["counts"]
    assert isinstance(raw, dict)
    return {k: int(v) for k, v in raw.items()}


def cause(reason: str) -> str:
    if reason.startswith("no workflow job runs suite"):
        return "no workflow job runs the suite"
    if "only runs with --nightly" in reason:
        return "nightly=False, but the suite only runs with --nightly"
    if "only runs without --nightly" in reason:
        return "nightly=True, but the suite only runs without --nightly"
    if "--suites list" in reason:
        return "not in the --suites list"
    return reason.split(";", maxsplit=1)[0][:80]


def suite_lines(workflows: Path, suite: str) -> tuple[list[str], list[str]]:
    """(commented lines, live lines) of the workflow files that name `suite` as a whole word."""
    pattern = re.compile(rf"(?<![\w-]){re.escape(suite)}(?![\w-])")
    commented: list[str] = []
    live: list[str] = []
    for path in sorted(workflows.glob("*.y*ml")):
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if not pattern.search(line):
                continue
            if line.lstrip().startswith("#"):
                commented.append(f"{path.name}:{number}")
            elif "suite" in line or line.strip().startswith("- "):
                # A live line that runs or lists a suite: `--suite NAME`, `suite: NAME`, a matrix item `- NAME`.
                live.append(f"{path.name}:{number}")
    return commented, live


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--tests", default="test/registered")
    parser.add_argument("--code", type=Path, help="another specmatrix checkout to run (default: this one)")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    docs: dict[str, dict[str, object]] = {}
    for label, extra in (("without workflows", ["--no-workflows"]), ("with workflows", ["--workflows", "."])):
        code, out, err = run_matrix(args.code, checkout, "guards", args.tests, "--json", "--no-cache", *extra)
        if code == 2 and "unrecognized arguments: --no-workflows" in err:
            # Code from before --no-workflows: it reads no workflows unless told to.
            code, out, err = run_matrix(args.code, checkout, "guards", args.tests, "--json", "--no-cache")
        if code not in (0, 1):
            print(f"{label}: exit {code}: {err.strip()}", file=sys.stderr)
            return 2
        docs[label] = json.loads(out)
    kinds = list(counts(docs["with workflows"]))
    print(f"counts per kind ({args.tests} of {checkout.name}):")
    print(f"  {'kind':<18} {'without':>8} {'with':>8}")
    for kind in kinds:
        print(f"  {kind:<18} {counts(docs['without workflows']).get(kind, 0):>8} {counts(docs['with workflows'])[kind]:>8}")
    code, out, err = run_matrix(args.code, checkout, "schedule", ".", "--format", "json")
    flagged = 0
    if code == 0:
        schedule = json.loads(out)
        per_file = collections.Counter(e["origin"]["file"] for e in schedule["entries"])
        hw = collections.Counter(str(e["selection"].get("hw")) for e in schedule["entries"])
        print(
            f"\nschedule: {len(schedule['entries'])} entries from {len(schedule['sources'])} files; by --hw: "
            + ", ".join(f"{k} {v}" for k, v in sorted(hw.items()))
        )
        for name, n in per_file.most_common():
            print(f"  {n:>4} {name}")
        cuda = [e for e in schedule["entries"] if e["selection"].get("hw") in ("cuda", "cpu", None)]
        unmapped = collections.Counter(", ".join(e["labels"]) for e in cuda if not e["profiles"])
        print(
            f"  unread jobs: {len(schedule['unread'])}; cuda/cpu entries on labels no profile knows: "
            + (", ".join(f"{k} ({v})" for k, v in unmapped.most_common()) or "none")
        )
        for item in schedule["unread"]:
            print(f"    unread: {item['origin']['file']}:{item['origin']['line']} {item['reason']}")
    else:
        print(f"\nschedule: not printed ({err.strip()})")
    findings = docs["with workflows"]["findings"]
    assert isinstance(findings, list)
    unscheduled = [f for f in findings if f["kind"] == "unscheduled"]
    print(f"\nunscheduled with workflows: {len(unscheduled)}, by cause:")
    for name, n in collections.Counter(cause(f["reason"]) for f in unscheduled).most_common():
        print(f"  {n:>4} {name}")
    suites: collections.Counter[str] = collections.Counter()
    missing: set[str] = set()
    for f in unscheduled:
        for part in f["reason"].split(" | "):
            found = re.search(r"suite (\S+)", part)
            if found:
                suites[found.group(1)] += 1
                if cause(part) == "no workflow job runs the suite":
                    missing.add(found.group(1))
    print("\nremaining unscheduled suites against the workflow lines (a live line is expected only for a nightly mismatch):")
    for suite, n in suites.most_common():
        commented, live = suite_lines(checkout / ".github" / "workflows", suite)
        if live:
            miss = suite in missing
            flagged += miss
            where = ("MISSED BY THE WALKER? live at " if miss else "nightly mismatch; run at ") + ", ".join(live[:3])
        elif commented:
            where = "only commented out: " + ", ".join(commented[:3])
        else:
            where = "in no workflow file"
        print(f"  {n:>4} {suite}: {where}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
