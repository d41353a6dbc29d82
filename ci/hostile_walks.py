"""Time and peak memory of `specmatrix schedule` on workflows built to make the GitHub walk expensive.

Usage: python ci/hostile_walks.py [--jobs N]

Each case is written to a temporary folder and read once by the CLI (cache off) in a child process; the script prints
its wall seconds and peak resident memory (the acceptance bound of every case: 10 s and 1 GB). Cases: a local
composite action that uses itself 50 times, two actions that use each other 50 times each, both called from N jobs of
four matrix legs each (the walk expands each job's steps), and a `steps: 5` composite.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
USES = "    - uses: ./.github/actions/{}\n"
RUN = "    - shell: bash\n      run: pytest tests\n"


def _composite(*steps: str) -> str:
    return "runs:\n  using: composite\n  steps:\n" + "".join(steps)


def _workflow(jobs: int) -> str:
    one = (
        "  j{i}:\n    runs-on: sm86\n    strategy:\n      matrix:\n        x: [1, 2, 3, 4]\n"
        "    steps:\n      - uses: ./.github/actions/first\n      - run: pytest tests\n"
    )
    return "on: [pull_request]\njobs:\n" + "".join(one.format(i=i) for i in range(jobs))


def cases() -> dict[str, dict[str, str]]:
    return {
        "an action using itself 50 times": {"first": _composite(RUN, *[USES.format("first")] * 50)},
        "two actions using each other 50 times": {
            "first": _composite(*[USES.format("second")] * 50),
            "second": _composite(RUN, *[USES.format("first")] * 50),
        },
        "steps: 5": {"first": "runs:\n  using: composite\n  steps: 5\n"},
    }


_CHILD = (
    "import resource, sys\n"
    "from matrix.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def measure(folder: Path) -> tuple[float, int, int]:
    """(wall seconds, peak resident KB, exit code) of one `schedule` run in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPECMATRIX_NO_CACHE": "1"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, "schedule", str(folder), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=ROOT,
    )
    seconds = time.perf_counter() - started
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "0"
    return seconds, int(last) if last.isdigit() else 0, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20, help="jobs (of four matrix legs) that call the action")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for number, (name, actions) in enumerate(cases().items()):
            root = Path(tmp) / f"case{number}"
            files = {"tests/test_a.py": "def test_a():\n    pass\n", ".github/workflows/ci.yml": _workflow(args.jobs)}
            files |= {f".github/actions/{action}/action.yml": text for action, text in actions.items()}
            for path, text in files.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text, encoding="utf-8")
            seconds, peak, code = measure(root)
            print(f"{name} ({args.jobs} jobs x 4 legs): exit {code}, {seconds:.2f} s, peak {peak / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
