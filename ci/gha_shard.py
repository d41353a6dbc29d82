"""GPU job: run one planned shard through pytest (via `nox -s gpu`), one xdist worker per GPU; stdlib only."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def pytest_args(*, shard: int, runner: str, select: str, reports: Path, workers: int) -> list[str]:
    """What the shard passes to pytest: the runner it claims, its cells, where its report goes."""
    # `=` keeps pytest from reading a separate `@FILE` argument as its own response file.
    args = ["--matrix-runner", runner, f"--matrix-select={select}", "--matrix-shard", str(shard)]
    args += ["--matrix-report", str(reports / f"shard-{shard}.json")]
    # loadgroup: tests/gpu groups cells by kernel configuration, so a host compiles each one once.
    return [*args, "-n", str(workers), "--dist", "loadgroup"] if workers > 0 else [*args, "-p", "no:xdist"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shard", type=int, required=True)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--select", required=True, help="a selector, or @FILE with one cell id per line")
    parser.add_argument("--reports", type=Path, required=True)
    parser.add_argument("--workers", type=int, required=True, help="pytest-xdist workers, one per GPU (0: no xdist)")
    parser.add_argument("--launcher", choices=["nox", "pytest"], default="nox", help="pytest: run in this interpreter")
    parser.add_argument(
        "--fork-server",
        action="store_true",
        help="fork the workers from the host's fork server (SPECMATRIX_FORK_SERVER; nox launcher only)",
    )
    parser.add_argument("extra", nargs="*", help="more pytest arguments (test paths), after --")
    args = parser.parse_args(argv)
    workers = args.workers
    args.reports.mkdir(parents=True, exist_ok=True)
    forwarded = [
        *args.extra,
        *pytest_args(shard=args.shard, runner=args.runner, select=args.select, reports=args.reports, workers=workers),
    ]
    if args.fork_server and args.launcher != "nox":
        parser.error("--fork-server needs the nox launcher (the gpu session starts the forked workers)")
    if args.launcher == "nox":
        # A session flag (noxfile.py FORK_SERVER): a server that is not up, or unsafe, leaves the plain path.
        command = [sys.executable, "-m", "nox", "-s", "gpu", "--", *forwarded, *(["--matrix-fork-server"] * args.fork_server)]
    else:
        command = [sys.executable, "-m", "pytest", *forwarded]
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
