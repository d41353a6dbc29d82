"""Run the GPU workflow's fan-out locally on CPU: plan, one pytest process per shard, merge, account.

Every step runs the same ci/gha_*.py script the workflow runs; SPECMATRIX_DETECT fakes the runner's GPUs.
`--tests gpu` (default) runs the real GPU test module (tests/gpu/test_draft_decode.py) with its check replaced
by one that only records the call, so a RUN cell that no GPU test covers shows up as never-ran; `--tests
stand-in` runs a one-line module that requests `matrix_cell` for every cell. --drop-shard K deletes shard K's report before the
merge, which must then fail. Exit status: the coverage gate's (0 clean, 1 findings, 2 bad input).
Usage: python ci/simulate_fanout.py --out DIR [--runner 4-gpu-b200] [--shards 3] [--workers 0] [--drop-shard K]
       [--tests gpu|stand-in] [--cached-configs FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKE_HOSTS = {
    "4-gpu-b200": {"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"},
    "8-gpu-b200": {"gpus": 8, "capability": [10, 0], "name": "NVIDIA B200"},
    "1-gpu-h200": {"gpus": 1, "capability": [9, 0], "name": "NVIDIA H200"},
    "4-gpu-h100": {"gpus": 4, "capability": [9, 0], "name": "NVIDIA H100"},
}
TEST_MODULE = '''"""Stands in for the GPU tests: one test over every matrix cell."""


def test_cell(matrix_cell):
    assert matrix_cell.id
'''
GPU_TESTS = HERE.parent / "tests" / "gpu" / "test_draft_decode.py"
RECORDING_CONFTEST = '''"""The GPU tests' check, replaced by one that accepts the (level, cell) it is given: no GPU needed."""

import pytest


@pytest.fixture
def draft_check():
    def run(level, cell):
        assert cell.id and str(level)

    return run
'''


def run(command: list[str], *, cwd: Path, env: dict[str, str]) -> int:
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, cwd=cwd, env=env, check=False).returncode


def print_plan(path: Path) -> None:
    """One line per shard: its cells, configurations and estimated seconds; then the makespan and compile total."""
    plan = json.loads(path.read_text(encoding="utf-8"))
    for shard in plan["shards"]:
        cells, configs = len(shard["cells"]), len(shard["configs"])
        print(f"  shard {shard['index']}: {cells} cells, {configs} configurations, est {shard['est_seconds']} s")
    keys = ("makespan_seconds", "setup_seconds")
    print("  " + ", ".join(f"{k} {plan[k]}" for k in keys if k in plan), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runner", default="4-gpu-b200", choices=sorted(FAKE_HOSTS))
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--workers", type=int, help="xdist workers per shard (default: the plan's, one per GPU; 0: none)")
    parser.add_argument("--drop-shard", type=int, help="delete this shard's report before merging")
    parser.add_argument("--tests", choices=["gpu", "stand-in"], default="gpu", help="the test module the shards run")
    parser.add_argument(
        "--cached-configs",
        type=Path,
        help="configurations a restored JIT cache holds (a cache manifest or key list): the plan without it is printed "
        "first, then the fan-out runs the plan with it",
    )
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    (out / "tests").mkdir(parents=True, exist_ok=True)
    if args.tests == "gpu":
        (out / "tests" / GPU_TESTS.name).write_text(GPU_TESTS.read_text(encoding="utf-8"), encoding="utf-8")
        (out / "tests" / "conftest.py").write_text(RECORDING_CONFTEST, encoding="utf-8")
    else:
        (out / "tests" / "test_cells.py").write_text(TEST_MODULE, encoding="utf-8")
    (out / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECMATRIX_", "GITHUB_"))}
    env["SPECMATRIX_DETECT"] = json.dumps(FAKE_HOSTS[args.runner])
    env["GITHUB_OUTPUT"] = str(out / "github_output")
    (out / "github_output").write_text("", encoding="utf-8")

    plan_dir = out / "shard-plan"
    plan_command = [sys.executable, str(HERE / "gha_plan.py"), "--runner", args.runner, "--shards", str(args.shards)]
    if args.cached_configs is not None:
        print("-- the plan without a restored JIT cache (every configuration compiles):", flush=True)
        code = run([*plan_command, "--plan-dir", str(out / "shard-plan-cold")], cwd=out, env=env)
        if code:
            return code
        print_plan(out / "shard-plan-cold" / "plan.json")
        plan_command += ["--cached-configs", str(args.cached_configs.resolve())]
        print("-- the plan with the restored JIT cache (its configurations compile nothing):", flush=True)
    (out / "github_output").write_text("", encoding="utf-8")
    code = run([*plan_command, "--plan-dir", str(plan_dir)], cwd=out, env=env)
    if code:
        return code
    if args.cached_configs is not None:
        print_plan(plan_dir / "plan.json")
    outputs = dict(line.split("=", 1) for line in (out / "github_output").read_text(encoding="utf-8").splitlines())
    include = json.loads(outputs["matrix"])["include"]
    for entry in include:
        workers = entry["workers"] if args.workers is None else args.workers
        run(
            [
                *(sys.executable, str(HERE / "gha_shard.py"), "--shard", str(entry["shard"]), "--runner", entry["runner"]),
                *("--select", entry["select"], "--workers", str(workers), "--reports", str(out / "reports")),
                *("--launcher", "pytest", "--", str(out / "tests")),
            ],
            cwd=out,
            env=env,
        )
    if args.drop_shard is not None:
        for path in (out / "reports").glob(f"shard-{args.drop_shard}.*"):
            path.unlink()
            print(f"dropped {path}")
    code = run(
        [
            sys.executable,
            str(HERE / "gha_coverage.py"),
            "--reports",
            str(out / "reports"),
            "--plan",
            str(plan_dir),
            "--out",
            str(out / "coverage"),
        ],
        cwd=out,
        env=env,
    )
    planned = json.loads((plan_dir / "plan.json").read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for report in sorted((out / "reports").glob("shard-*.json")):
        for cell in json.loads(report.read_text(encoding="utf-8"))["cells"]:
            seen[cell["cell"]] = cell["status"]
    print(f"\n{'shard':>5} {'planned':>7} {'reported':>8}  statuses")
    for shard in planned["shards"]:
        got = [seen[c] for c in shard["cells"] if c in seen]
        statuses = ", ".join(f"{s} {got.count(s)}" for s in sorted(set(got))) or "no report"
        print(f"{shard['index']:>5} {len(shard['cells']):>7} {len(got):>8}  {statuses}")
    accounted = sum(1 for s in planned["shards"] for c in s["cells"] if c in seen)
    print(f"{accounted} of {planned['cells']} planned cells accounted for; coverage gate exit {code}")
    return code


if __name__ == "__main__":
    sys.exit(main())
