"""Plan job: `specmatrix shard --format github` into $GITHUB_OUTPUT (matrix, shards) plus a step summary."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

from matrix.cli.main import main as specmatrix

DURATIONS_DIR = Path(__file__).resolve().parent / "data" / "durations"


def shard_command(args: argparse.Namespace) -> list[str]:
    command = ["shard", "--runner", args.runner, "--format", "github", "--plan-dir", args.plan_dir]
    command += ["--shards", str(args.shards)] if args.shards else ["--budget", str(args.budget)]
    durations = list(args.durations)
    if not durations and args.durations_dir.is_dir():
        durations = [str(p) for p in sorted(args.durations_dir.glob("*.json"))]
    if durations:
        command += ["--durations", *durations]
    if args.cached_configs:
        command += ["--cached-configs", *args.cached_configs]
    return command


def summary_table(matrix: dict[str, list[dict[str, object]]]) -> str:
    rows = ["| shard | runner | cells | est. minutes |", "|---:|---|---:|---:|"]
    rows += [f"| {e['shard']}/{e['shards']} | {e['runner']} | {e['cells']} | {e['est_minutes']} |" for e in matrix["include"]]
    return "### specmatrix shard plan\n\n" + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runner", required=True)
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--budget", type=float, help="minutes per GPU job")
    size.add_argument("--shards", type=int)
    parser.add_argument("--plan-dir", required=True)
    parser.add_argument("--durations", nargs="*", default=[], help="measured reports (default: every *.json in --durations-dir)")
    parser.add_argument("--durations-dir", type=Path, default=DURATIONS_DIR, help="checked-in measured reports, if any")
    parser.add_argument(
        "--cached-configs", nargs="*", default=[], help="what restored JIT caches hold (manifests or key lists): no compile cost"
    )
    parser.add_argument("--github-output", default=os.environ.get("GITHUB_OUTPUT"))
    parser.add_argument("--summary", default=os.environ.get("GITHUB_STEP_SUMMARY"))
    args = parser.parse_args(argv)
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        code = specmatrix(shard_command(args))
    if code:
        return code
    line = captured.getvalue().strip()
    matrix = json.loads(line)
    outputs = f"matrix={line}\nshards={len(matrix['include'])}\n"
    if args.github_output:
        with Path(args.github_output).open("a", encoding="utf-8") as out:
            out.write(outputs)
    else:
        sys.stdout.write(outputs)
    if args.summary:
        with Path(args.summary).open("a", encoding="utf-8") as out:
            out.write(summary_table(matrix))
    return 0


if __name__ == "__main__":
    sys.exit(main())
