"""Coverage job: merge every shard report against the plan, write the step summary, fail on findings."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from matrix.cli.main import main as specmatrix


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reports", type=Path, required=True, help="folder the shard artifacts were downloaded into")
    parser.add_argument("--plan", type=Path, required=True, help="the shard-plan artifact (plan.json or its folder)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary", default=os.environ.get("GITHUB_STEP_SUMMARY"))
    args = parser.parse_args(argv)
    args.reports.mkdir(parents=True, exist_ok=True)  # no shard uploaded anything: still judge against the plan
    code = specmatrix(["coverage", str(args.reports), "--plan", str(args.plan), "--out", str(args.out)])
    summary = args.out / "summary.md"
    if args.summary and summary.is_file():
        with Path(args.summary).open("a", encoding="utf-8") as out:
            out.write(summary.read_text(encoding="utf-8"))
    return code


if __name__ == "__main__":
    sys.exit(main())
