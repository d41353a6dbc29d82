"""One import per host on CPU: xdist workers forked from the preloading server, and the plain path when unsafe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.gpu.forkserver import PRELOAD_ENV, forked_args

ROOT = Path(__file__).resolve().parents[2]
PROBE = "import os\nSERVER_PID = os.getpid()\n"
# A torch stand-in whose CUDA is initialised as soon as it is imported (what a preload must never do before fork).
EAGER_TORCH = "class cuda:\n    @staticmethod\n    def is_initialized():\n        return True\n"
TEST = """
import os, sys

def test_worker_holds_the_preloaded_module():
    probe = sys.modules.get("specmatrix_probe")
    assert probe is not None, "not preloaded"
    assert probe.SERVER_PID == os.getppid() != os.getpid()

def test_runs_on_an_xdist_worker():
    assert os.environ.get("PYTEST_XDIST_WORKER")
"""


def _run(tmp_path: Path, preload: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    (tmp_path / "specmatrix_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "torch.py").write_text(EAGER_TORCH, encoding="utf-8")
    (tmp_path / "test_probe.py").write_text(TEST, encoding="utf-8")
    env = {**os.environ, PRELOAD_ENV: preload, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    status = tmp_path / "status.json"
    command = [sys.executable, "-m", "matrix.gpu.forkserver", "run", "--status", str(status), "--"]
    command += ["-n", "2", "-p", "no:cacheprovider", "-p", "no:benchmark", "-q", "test_probe.py"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)
    return done, json.loads(status.read_text(encoding="utf-8"))


def test_workers_are_forked_from_the_preloading_server(tmp_path: Path) -> None:
    done, status = _run(tmp_path, "specmatrix_probe")
    assert status["state"] == "ready", status
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout


def test_a_preload_that_initialises_cuda_keeps_the_plain_path(tmp_path: Path) -> None:
    """Planted: torch comes up with CUDA initialised; the server refuses to fork and names the import; the workers
    then import for themselves (the probe is not preloaded, so that one test fails: proof of the plain path)."""
    done, status = _run(tmp_path, "specmatrix_probe,torch")
    assert status["state"] == "unsafe" and status["module"] == "torch", status
    assert "plain path" in done.stdout
    assert "1 failed, 1 passed" in done.stdout, done.stdout[-3000:]
    assert "not preloaded" in done.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-n", "4", "x"], ["x", "--tx", "4*popen//python=C", "--dist", "load"]),
        (["-n4", "--dist", "loadgroup"], ["--dist", "loadgroup", "--tx", "4*popen//python=C"]),
        (["--numprocesses=2", "-q"], ["-q", "--tx", "2*popen//python=C", "--dist", "load"]),
        (["-q"], None),
        (["-n", "auto"], None),
    ],
)
def test_the_worker_count_becomes_forked_workers(args: list[str], expected: list[str] | None) -> None:
    assert forked_args(args, Path("C")) == expected
