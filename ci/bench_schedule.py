"""CPU seconds of reading a repository's GitHub workflows into a schedule (`read_github`), in fresh interpreters.

    python ci/bench_schedule.py REPO [--repeat 7] [--readers guards|schedule] [--against CHECKOUT] [--gc default]
    python ci/bench_schedule.py REPO --instructions [--against CHECKOUT]    # instructions, under valgrind

Each run is a new interpreter that imports the package (and PyYAML) first, then times one `read_github` of REPO
with `time.process_time` (so another process on the machine does not count), split into the YAML reading of the
workflow files and the rest (walking jobs, expressions, shell lines, readers). `--readers guards` reads as
`specmatrix guards --workflows REPO` does (sglang's run_suite.py reader); `schedule` as `specmatrix schedule REPO`
does (every reader, the scripts steps run). With `--against CHECKOUT` the same is timed with CHECKOUT's package
on PYTHONPATH, runs interleaved (this, other, this, ...), so both see the same load. The cyclic collector runs
with the threshold a `specmatrix` command sets (`--gc default`: Python's). Prints min and median.
`--instructions` counts the instructions of one read instead (valgrind's callgrind, hash seed 0: a run minus the
same run stopped before the read), which a loaded machine does not move.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Run in the child: the YAML share is timed by wrapping the loader the walker calls, so it is the same work.
CHILD = """
import json, sys, time
from pathlib import Path
import yaml
from matrix.core.runner_files import load_runners
from matrix.schedule.github import walk as github
from matrix.schedule.load import TreeLoader, all_readers, default_readers
root, readers = Path(sys.argv[1]), sys.argv[2]
if sys.argv[3] == "cli-gc":  # the collector's threshold a command runs with (matrix.cli.main), where it has one
    import gc, importlib
    cli = importlib.import_module("matrix.cli.main")  # the module: `matrix.cli.main` is also the function's name
    every = getattr(cli, "COLLECT_EVERY", None)
    if every is not None:
        gc.set_threshold(max(gc.get_threshold()[0], every), *gc.get_threshold()[1:])
runners = load_runners()
spent = [0.0]
load_yaml = github.load_yaml
def timed_yaml(text, name):
    start = time.process_time()
    try:
        return load_yaml(text, name)
    finally:
        spent[0] += time.process_time() - start
github.load_yaml = timed_yaml
chosen = default_readers() if readers == "guards" else all_readers()
scripts = TreeLoader(github.workflow_files(root)[0]) if readers == "schedule" else None
if sys.argv[4] == "skip":  # everything but the read: what an instruction count subtracts
    print(json.dumps({"from": github.__file__}))
    sys.exit(0)
start = time.process_time()
schedule = github.read_github(root, chosen, runners, scripts=scripts)
total = time.process_time() - start
print(json.dumps({"total": total, "yaml": spent[0], "entries": len(schedule.entries), "from": github.__file__}))
"""
_COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(repo: Path, readers: str, checkout: Path, gc_mode: str) -> int:
    """Instructions `read_github` executes (valgrind's callgrind, hash seed fixed): a run minus the same run
    stopped before the read. Unlike CPU seconds it does not move with the machine's load."""
    counts = []
    for mode in ("skip", "read"):
        env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-P", "-c", CHILD]
        done = subprocess.run([*command, str(repo), readers, gc_mode, mode], capture_output=True, text=True, env=env, check=False)
        found = _COLLECTED.search(done.stderr)
        if done.returncode != 0 or found is None:
            sys.exit(f"bench_schedule: valgrind under {checkout} failed: {done.stderr.strip().splitlines()[-1:]}")
        counts.append(int(found.group(1)))
    return counts[1] - counts[0]


def one_run(repo: Path, readers: str, checkout: Path, gc_mode: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    # -P: the working directory is not put first on sys.path, so PYTHONPATH decides which package is timed.
    done = subprocess.run(
        [sys.executable, "-P", "-c", CHILD, str(repo), readers, gc_mode, "read"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"bench_schedule: the run under {checkout} failed: {done.stderr.strip().splitlines()[-1:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    if not str(result.pop("from")).startswith(str(checkout)):
        sys.exit(f"bench_schedule: the run meant for {checkout} imported another copy of the package")
    return result


def summary(label: str, runs: list[dict[str, Any]]) -> str:
    def figures(key: str) -> str:
        values = [r[key] for r in runs]
        return f"min {min(values):.3f}, median {statistics.median(values):.3f}"

    walk = [{"walk": r["total"] - r["yaml"]} for r in runs]
    walk_values = [w["walk"] for w in walk]
    return (
        f"{label}: read_github CPU {figures('total')} s (yaml {figures('yaml')}; "
        f"the rest min {min(walk_values):.3f}, median {statistics.median(walk_values):.3f}); "
        f"{int(runs[0]['entries'])} entries"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a repository with .github/workflows")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--readers", choices=("guards", "schedule"), default="guards")
    parser.add_argument("--against", type=Path, help="another checkout of the package, timed interleaved")
    parser.add_argument(
        "--gc",
        choices=("default", "cli-gc"),
        default="cli-gc",
        help="the collector threshold: Python's default, or the one `specmatrix` commands run with (the default)",
    )
    parser.add_argument(
        "--instructions", action="store_true", help="count the read's instructions under valgrind instead (one run each)"
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.instructions:
        for checkout in (ROOT, *((args.against.resolve(),) if args.against is not None else ())):
            count = instructions(args.repo, args.readers, checkout, args.gc)
            print(f"{checkout} ({args.readers} readers, --gc {args.gc}): read_github {count / 1e6:,.0f} M instructions")
        return 0
    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    mine: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        mine.append(one_run(args.repo, args.readers, ROOT, args.gc))
        if args.against is not None:
            other.append(one_run(args.repo, args.readers, args.against.resolve(), args.gc))
    print(summary(f"this checkout ({args.readers} readers)", mine))
    if other:
        print(summary(f"{args.against} ({args.readers} readers)", other))
        if other[0]["entries"] != mine[0]["entries"]:
            print("the two checkouts read a different number of entries", file=sys.stderr)
            return 1
    print(f"load average before: {load_before}, after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
