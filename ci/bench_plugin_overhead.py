"""Overhead of the skip audit: N trivial matrix cells with the audit on vs a plain parametrize of the same count.

    python ci/bench_plugin_overhead.py [--cells 20000] [--repeat 3]

Both runs collect and run N trivial tests in a fresh pytest process; the audit run claims the cpu runner over a
generated N-cell matrix and writes its JSON/JUnit/Markdown report, the plain run has the plugin disabled
(`-p no:specmatrix`). Prints the best-of-`repeat` wall and CPU times and their ratios (target <= 1.15 for both);
exits 1 above it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET = 1.15


def matrix_toml(cells: int) -> str:
    """A matrix of exactly `cells` cells (a x b x c), with rules that apply to every cell and allow it on cpu."""
    b_values, c_values = 10, 100
    a_values = -(-cells // (b_values * c_values))
    if a_values * b_values * c_values != cells:
        raise SystemExit(f"--cells must be a multiple of {b_values * c_values}")
    return f"""
name = "bench-{cells}"

[[axis]]
name = "a"
values = {list(range(a_values))}
id = "a{{}}"

[[axis]]
name = "b"
values = {list(range(b_values))}
id = "b{{}}"

[[axis]]
name = "c"
values = {list(range(c_values))}
id = "c{{}}"

[[group]]
name = "all"
a = {list(range(a_values))}
b = {list(range(b_values))}
c = {list(range(c_values))}

[[rule]]
id = "c-in-range"
kind = "kernel"
require = {{ c = {{ lt = {c_values} }} }}
reason = "always satisfied: every cell is judged by a rule"
source = "ci/bench_plugin_overhead.py"

[[rule]]
id = "b-in-range"
kind = "config"
when = {{ a = {{ ge = 0 }} }}
require = {{ b = {{ ge = 0 }} }}
reason = "always satisfied"
source = "ci/bench_plugin_overhead.py"
"""


def write_project(root: Path, cells: int) -> None:
    (root / "matrix.toml").write_text(matrix_toml(cells), encoding="utf-8")
    (root / "test_audit.py").write_text("def test_cell(matrix_cell):\n    pass\n", encoding="utf-8")
    (root / "test_plain.py").write_text(
        f"import pytest\n\n\n@pytest.mark.parametrize('value', range({cells}))\ndef test_cell(value):\n    pass\n",
        encoding="utf-8",
    )


@dataclass(frozen=True, kw_only=True)
class Timing:
    wall: float
    cpu: float  # user + system of the pytest process: steadier than wall time on a shared machine


def timed(root: Path, args: list[str], env: dict[str, str]) -> Timing:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    done = subprocess.run(command, check=False, cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall=wall, cpu=cpu)


def _line(label: str, runs: list[Timing]) -> str:
    walls = ", ".join(f"{t.wall:.2f}" for t in runs)
    return f"{label}: wall {min(t.wall for t in runs):.2f}s cpu {min(t.cpu for t in runs):.2f}s  (walls: {walls})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECMATRIX_") and k != "GITHUB_STEP_SUMMARY"}
    with tempfile.TemporaryDirectory(prefix="specmatrix-bench-") as tmp:
        root = Path(tmp)
        write_project(root, args.cells)
        audit_env = {**env, "SPECMATRIX_MATRIX": str(root / "matrix.toml"), "SPECMATRIX_DETECT": json.dumps({"gpus": 0})}
        audit_args = ["test_audit.py", "--matrix-runner", "cpu", "--matrix-report", "out/report.json"]
        plain_args = ["test_plain.py", "-p", "no:specmatrix"]
        plain: list[Timing] = []
        audit: list[Timing] = []
        for _ in range(args.repeat):  # interleaved, so drift in machine load hits both alike
            plain.append(timed(root, plain_args, env))
            audit.append(timed(root, audit_args, audit_env))
        report = json.loads((root / "out/report.json").read_text(encoding="utf-8"))
        if report["planned"] != args.cells or report["counts"]["passed"] != args.cells:
            raise SystemExit(
                f"the audit run planned {report['planned']} and passed {report['counts']['passed']}, not {args.cells}"
            )
    wall_ratio = min(t.wall for t in audit) / min(t.wall for t in plain)
    cpu_ratio = min(t.cpu for t in audit) / min(t.cpu for t in plain)
    print(f"cells: {args.cells}, best of {args.repeat} interleaved runs each")
    print(_line("plain parametrize (plugin disabled)", plain))
    print(_line("matrix_cell + audit + reports     ", audit))
    print(f"ratio: wall {wall_ratio:.3f}, cpu {cpu_ratio:.3f} (target <= {TARGET})")
    return 0 if max(wall_ratio, cpu_ratio) <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
