"""The adversary's sixth round (tests/ci/test_adversary_round6.py) with the CPU time and peak memory of every
command it runs, each in its own child process; or the same round against another revision's package.

    python ci/adversary_round.py                  # the table, slowest first; exit 1 when a case fails
    python ci/adversary_round.py --code 4b10649   # the round against that revision's matrix/ (which cases are red)

The bound of every command is 10 s of CPU and 1 GiB of peak resident memory (the harness fails a case past it).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_SUMMARY = re.compile(r"^\d+ (passed|failed)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", help="a revision whose matrix/ the commands run (default: this checkout's)")
    parser.add_argument("--slowest", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        table = Path(work) / "table.jsonl"
        env = {"SPECMATRIX_ADVERSARY_TABLE": str(table)}
        if options.code:
            old = Path(work) / "old"
            old.mkdir()
            archive = subprocess.run(["git", "-C", str(REPO), "archive", options.code, "matrix"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
            # -S: no site hooks, so the editable install of this checkout does not shadow the old package
            site = sysconfig.get_paths()["purelib"]
            env["SPECMATRIX_ADVERSARY_PYTHON"] = f"/usr/bin/env PYTHONPATH={old}:{site} {sys.executable} -S"
        argv = [sys.executable, "-m", "pytest", "tests/ci/test_adversary_round6.py", "-q", "-n", "0", "-p", "no:cacheprovider"]
        done = subprocess.run(argv, cwd=REPO, env={**_environ(), **env}, capture_output=True, text=True, check=False)
        shown = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR")) or _SUMMARY.match(line)]
        print("\n".join(shown))
        rows = [json.loads(line) for line in table.read_text(encoding="utf-8").splitlines()] if table.exists() else []
    slowest = sorted(rows, key=lambda r: -r["cpu"])
    print(f"{len(rows)} commands; the slowest {options.slowest}:")
    for row in slowest[: options.slowest]:
        print(f"  {row['case']:50} {row['command']:13} {row['cpu']:6.2f} s CPU {row['mb']:6d} MB  exit {row['exit']}")
    print(f"largest: {max((r['mb'] for r in rows), default=0)} MB")
    return done.returncode


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("SPECMATRIX_")}


if __name__ == "__main__":
    sys.exit(main())
