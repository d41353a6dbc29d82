"""What joining a run costs `specmatrix pytest-audit`: a synthetic suite of N tests, the JUnit XML real pytest writes
for it, and the audit timed with and without `--junit`.

Usage: python ci/bench_junit_join.py [--tests 5000] [--repeat 5] [--target 0.5] [--keep DIR]

The suite (`--tests` tests in files of 50: plain tests, `skipif` on a variable the CI job sets, a module-level
`importorskip`, literal parametrizations) has one workflow job on `ubuntu-24.04`; real pytest runs it once to write
`--junitxml`. Then, alternating, fresh interpreters run `pytest-audit TREE --format json` and the same with
`--junit ubuntu-24.04=FILE` (`SPECMATRIX_NO_CACHE=1`, `--jobs 1`: one process, so the CPU seconds are the command's
own), and the medians of wall and CPU seconds are printed with the difference: on a shared machine these move with
its load. In this process, each step the join adds is timed by its least CPU seconds over the runs (reading the
file, the audit's per-runner verdicts, the join, the larger JSON report); exit 1 when their sum is over --target.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PER_FILE = 50
WORKFLOW = """\
on: [pull_request]
jobs:
  unit:
    runs-on: ubuntu-24.04
    env:
      BENCH_MODE: full
    steps:
      - run: pytest tests --junitxml=junit.xml
"""


def test_file(k: int) -> str:
    """Fifty tests: ten plain (in every fifth file, each calls `importorskip` of a module nowhere installed), ten
    under a skipif the job decides, ten with a literal parametrization of three (thirty cases, one skipped)."""
    head = "import os\n\nimport pytest\n\n"
    body = '    pytest.importorskip("bench_missing_module")\n' if k % 5 == 4 else ""
    plain = "".join(f"def test_plain_{i}():\n{body}    assert {i} + 1\n\n\n" for i in range(10))
    skip = "".join(
        f'@pytest.mark.skipif(os.environ.get("BENCH_MODE") != "full", reason="full mode only")\n'
        f"def test_mode_{i}():\n    assert True\n\n\n"
        for i in range(10)
    )
    params = "".join(
        f'@pytest.mark.parametrize("v", [1, 2, pytest.param(3, marks=pytest.mark.skip(reason="three is off"))])\n'
        f"def test_param_{i}(v):\n    assert v\n\n\n"
        for i in range(10)
    )
    return head + plain + skip + params


def write_suite(root: Path, tests: int) -> None:
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW, encoding="utf-8")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n', encoding="utf-8")
    for k in range(max(1, tests // PER_FILE)):
        folder = root / "tests" / f"area_{k // 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"test_bench_{k}.py").write_text(test_file(k), encoding="utf-8")


def write_junit(root: Path, out: Path) -> int:
    """Real pytest over the suite, writing `out`; returns the number of testcases."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | {"BENCH_MODE": "full"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:specmatrix", f"--junitxml={out}"]
    subprocess.run(command, cwd=root, env=env, capture_output=True, check=False, timeout=600)
    return out.read_text(encoding="utf-8").count("<testcase ")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> tuple[float, float]:
    env = {**os.environ, "SPECMATRIX_NO_CACHE": "1"}
    cpu, wall = children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()}")
    return wall, cpu


def least_cpu(step: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The least CPU seconds of `repeat` runs of `step` in this process (the least: other load only adds to it),
    and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        result = step()
        best = min(best, time.process_time() - start)
    return best, result


def in_process(root: Path, junit: Path, repeat: int) -> dict[str, float]:
    """The join's own steps in this process, in CPU seconds: reading the file, the audit without and with the
    per-runner verdicts (one process, no workers), the join, the JSON section and the whole JSON report."""
    from matrix.core.runner_files import load_runners
    from matrix.pytest_suites.joined import join_runs, read_runs
    from matrix.pytest_suites.joined_output import runs_doc
    from matrix.pytest_suites.render import to_json
    from matrix.pytest_suites.run import AuditInput, run_audit

    profiles = load_runners(())
    join = ("ubuntu-24.04",)
    t: dict[str, float] = {}
    t["read the JUnit file"], runs = least_cpu(lambda: read_runs([("ubuntu-24.04", junit)]), repeat)
    t["audit without --junit"], plain = least_cpu(lambda: run_audit(AuditInput(root=root), profiles), repeat)
    t["audit with per-runner verdicts"], report = least_cpu(lambda: run_audit(AuditInput(root=root, join=join), profiles), repeat)
    t["join"], result = least_cpu(lambda: join_runs(report.verdicts, runs, join), repeat)
    t["runs section (JSON)"], _ = least_cpu(lambda: runs_doc(result), repeat)
    joined = replace(report, findings=(*report.findings, *result.findings))
    t["JSON report without --junit"], _ = least_cpu(lambda: to_json(plain), repeat)
    t["JSON report with --junit"], _ = least_cpu(lambda: to_json(joined, runs=runs_doc(result)), repeat)
    t["the join adds (sum)"] = (
        t["read the JUnit file"]
        + t["audit with per-runner verdicts"]
        - t["audit without --junit"]
        + t["join"]
        + t["JSON report with --junit"]
        - t["JSON report without --junit"]
    )
    t["tests"] = float(plain.tests)
    t["rows"] = float(len(result.rows))
    t["findings of the join"] = float(len(result.findings))
    return t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--target", type=float, default=0.5, help="CPU seconds the join may add (median)")
    parser.add_argument("--keep", type=Path, help="write the suite and its JUnit file here and keep them")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="specmatrix-junit-bench-") as scratch:
        base = args.keep or Path(scratch)
        root, junit = base / "suite", base / "junit.xml"
        if not root.exists():
            write_suite(root, args.tests)
        cases = write_junit(root, junit)
        print(f"suite: {root} ({args.tests} tests); {junit}: {cases} testcases, {junit.stat().st_size / 1e6:.2f} MB")
        base_command = [sys.executable, "-m", "matrix", "pytest-audit", str(root), "--format", "json", "--jobs", "1"]
        joined = [*base_command, "--junit", f"ubuntu-24.04={junit}"]
        plain_runs, join_runs_ = [], []
        for k in range(args.repeat):
            plain_runs.append(timed(base_command))
            join_runs_.append(timed(joined))
            print(f"run {k + 1}: without {plain_runs[-1][0]:.3f} s wall {plain_runs[-1][1]:.3f} s CPU; "
                  f"with --junit {join_runs_[-1][0]:.3f} s wall {join_runs_[-1][1]:.3f} s CPU")  # fmt: skip
        wall = statistics.median(w for w, _ in join_runs_) - statistics.median(w for w, _ in plain_runs)
        cpu = statistics.median(c for _, c in join_runs_) - statistics.median(c for _, c in plain_runs)
        print(
            f"median: without {statistics.median(w for w, _ in plain_runs):.3f} s wall "
            f"{statistics.median(c for _, c in plain_runs):.3f} s CPU; with --junit "
            f"{statistics.median(w for w, _ in join_runs_):.3f} s wall {statistics.median(c for _, c in join_runs_):.3f} s CPU"
        )
        print(f"the join adds: {wall:+.3f} s wall, {cpu:+.3f} s CPU (target: {args.target} s)")
        steps = in_process(root, junit, args.repeat)
        counts = ("tests", "rows", "findings of the join")
        print(f"in this process, the least CPU seconds of {args.repeat} runs of each step:")
        print(textwrap.indent("\n".join(f"{k}: {v:.0f}" if k in counts else f"{k}: {v:.3f} s" for k, v in steps.items()), "  "))
        print(f"load average after the runs: {os.getloadavg()[0]:.2f}")
    return 0 if steps["the join adds (sum)"] <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
