"""The workflow's fan-out on CPU: every planned cell is accounted for, and a lost shard report fails the gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import run_cells

pytestmark = pytest.mark.integration

SIMULATE = Path(__file__).resolve().parents[2] / "ci" / "simulate_fanout.py"


def simulate(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SIMULATE), "--out", str(out), *args], capture_output=True, text=True, check=False, timeout=240
    )


def reported_cells(out: Path) -> list[str]:
    return [c["cell"] for p in sorted((out / "reports").glob("shard-*.json")) for c in json.loads(p.read_text())["cells"]]


@pytest.mark.parametrize(
    ("shards", "workers", "tests"), [(2, "2", "stand-in"), (3, "0", "gpu")], ids=["xdist-per-gpu", "gpu-tests"]
)
def test_every_planned_cell_is_run_once_and_the_merge_passes(tmp_path, default_matrix, runners, shards, workers, tests):
    """stand-in: one test per cell, each exactly once. gpu: the real GPU test module leaves no RUN cell untested."""
    done = simulate(tmp_path, "--shards", str(shards), "--workers", workers, "--tests", tests)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cells = reported_cells(tmp_path)
    wanted = sorted(run_cells(default_matrix, runners["4-gpu-b200"]))
    assert (sorted(cells) if tests == "stand-in" else sorted(set(cells))) == wanted
    assert f"{len(wanted)} of {len(wanted)} planned cells accounted for; coverage gate exit 0" in done.stdout
    shards_seen = {json.loads(p.read_text())["shard"] for p in (tmp_path / "reports").glob("shard-*.json")}
    assert shards_seen == {str(k) for k in range(1, shards + 1)}
    assert (tmp_path / "coverage" / "heatmap.png").is_file()


def test_deleting_one_shard_report_fails_the_merge(tmp_path):
    done = simulate(tmp_path, "--shards", "3", "--workers", "0", "--drop-shard", "2")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "missing-report: shard 2 of 3 on 4-gpu-b200" in done.stdout
    coverage = json.loads((tmp_path / "coverage" / "coverage.json").read_text())
    assert coverage["totals"]["never-ran"] > 0
    assert {f["kind"] for f in coverage["findings"]} == {"missing-report", "never-ran"}


def test_shard_job_reads_its_cells_from_a_selector_file(tmp_path):
    """Long shards travel as `@FILE`; pytest must hand that to the plugin, not read it as its own argument file."""
    wanted = ["draft-trtllm_mha-topk2-page16-hd128-gqa4-bf16-graph", "draft-triton-topk8-page1-hd256-gqa4-bf16-eager"]
    (tmp_path / "shard-1.txt").write_text("\n".join(wanted) + "\n")
    (tmp_path / "test_cells.py").write_text("def test_cell(matrix_cell):\n    assert matrix_cell.id\n")
    env = {**os.environ, "SPECMATRIX_DETECT": '{"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}'}
    gha_shard = SIMULATE.parent / "gha_shard.py"
    command = [sys.executable, str(gha_shard), "--shard", "1", "--runner", "4-gpu-b200", "--select", "@shard-1.txt"]
    command += ["--reports", "reports", "--workers", "0", "--launcher", "pytest", "test_cells.py"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "reports" / "shard-1.json").read_text())
    assert sorted(c["cell"] for c in report["cells"]) == sorted(wanted)
    assert {c["status"] for c in report["cells"]} == {"passed"}
