"""What the schedule reader read of a checkout's CI, and what pytest-audit concluded from it, as counts.

    python ci/schedule_read_counts.py CHECKOUT [CHECKOUT ...] [--no-audit]

For each checkout (a repository root with `.github/workflows`): runs `specmatrix schedule CHECKOUT --format json`
and `specmatrix pytest-audit CHECKOUT --format json` in fresh processes and prints the exit codes, wall seconds,
the entries (by the profile or non-CUDA runner they name, or "no profile"), the jobs not read grouped by reason
(the reason without its varying names), the jobs GitHub never starts, the labels no profile knows, and the audit's
counts (scheduled, undetermined, findings per kind). A traceback in either command is reported and makes the exit 1.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "matrix", *args], capture_output=True, text=True, cwd=ROOT, check=False, timeout=600
    )
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - start


def reason_class(reason: str) -> str:
    """A reason without the names that vary (paths, workflow references, expressions, numbers)."""
    text = re.sub(r"\$\{\{.*?\}\}", "${{ ... }}", reason)
    text = re.sub(r"[\w./-]+/[\w./@-]+", "PATH", text)
    text = re.sub(r"\d+", "N", text)
    return text[:110]


def report(checkout: Path, audit: bool) -> bool:
    clean = True
    code, out, err, seconds = run("schedule", str(checkout), "--format", "json")
    print(f"== {checkout}")
    print(f"schedule: exit {code}, {seconds:.1f} s")
    if "Traceback" in err:
        print("  TRACEBACK:", err.strip().splitlines()[-1])
        clean = False
    if code == 0:
        doc = json.loads(out)
        where = collections.Counter(
            ", ".join(e["profiles"])
            or ("other: " + "; ".join(e.get("other_runners", [])) if e.get("other_runners") else "no profile")
            for e in doc["entries"]
        )
        print(f"  entries: {len(doc['entries'])}")
        for name, count in where.most_common():
            print(f"    {count:5d}  {name[:100]}")
        unread = collections.Counter(reason_class(u["reason"]) for u in doc["unread"])
        print(f"  unread: {len(doc['unread'])}")
        for name, count in unread.most_common():
            print(f"    {count:5d}  {name}")
        never = collections.Counter(reason_class(u["reason"]) for u in doc.get("not_run", []))
        print(f"  never started: {len(doc.get('not_run', []))}")
        for name, count in never.most_common():
            print(f"    {count:5d}  {name}")
        print(f"  labels no profile knows: {sorted({u['label'] for u in doc['unknown_labels']})}")
    if not audit:
        return clean
    code, out, err, seconds = run("pytest-audit", str(checkout), "--format", "json", "--jobs", "1")
    print(f"pytest-audit: exit {code}, {seconds:.1f} s")
    if "Traceback" in err:
        print("  TRACEBACK:", err.strip().splitlines()[-1])
        clean = False
    if code in (0, 1):
        doc = json.loads(out)
        kinds = collections.Counter(f["kind"] for f in doc["findings"])
        print(
            f"  files {doc['files']}, tests {doc['tests']}, scheduled {doc['scheduled_tests']}, "
            f"undetermined {doc['undetermined']} (+{doc.get('undetermined_unread', 0)} only an unread job may run), "
            f"jobs not read {len(doc['unread'])}"
        )
        print(f"  findings: {dict(kinds)}")
    else:
        print("  " + err.strip()[:300])
    return clean


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", type=Path, nargs="+")
    parser.add_argument("--no-audit", action="store_true", help="only the schedule")
    args = parser.parse_args()
    results = [report(c, not args.no_audit) for c in args.checkouts]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
