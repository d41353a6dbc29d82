"""`python -m tools.gpu.smoke` and `nox -s bench` report failures in their text and their exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from matrix.gpu import checks
from tools.gpu import smoke
from tools.gpu.bench import bench_verdict

CELL = "draft-triton-topk4-page16-hd128-gqa4-bf16-graph"
PROBLEM = "graph-bs8: max error 0.9 > 0.03; graph-vs-eager-bs8: max error 0.9 > 0.03"


def _report(problems: list[str]) -> Any:
    def check(case: Any, **kwargs: Any) -> checks.CheckReport:
        return checks.CheckReport(level="sglang", problems=list(problems))

    return check


@pytest.mark.parametrize(("problems", "code"), [([], 0), ([PROBLEM], 1)])
def test_smoke_prints_the_whole_failure_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], problems: list[str], code: int
) -> None:
    monkeypatch.setitem(checks.CHECKS, "sglang", _report(problems))
    assert smoke.main([f"{CELL}:sglang"]) == code
    out = capsys.readouterr().out
    if problems:
        assert f"{CELL}:sglang: FAIL {PROBLEM}" in out
        assert "smoke: 0 ok, 1 failed of 1" in out
    else:
        assert f"{CELL}:sglang: ok" in out


def test_smoke_prints_an_exception_as_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def boom(case: Any, **kwargs: Any) -> checks.CheckReport:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setitem(checks.CHECKS, "sglang", boom)
    assert smoke.main([f"{CELL}:sglang"]) == 1
    out = capsys.readouterr().out
    assert f"{CELL}:sglang: ERROR" in out and "illegal memory access" in out


def test_bench_exits_1_and_names_each_failed_timing(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_verdict(3, {}, "x") == 0
    assert bench_verdict(3, {"cell-a flashinfer-fa2": "RuntimeError: no kernel"}, "x") == 1
    captured = capsys.readouterr()
    assert "bench FAILED cell-a flashinfer-fa2: RuntimeError: no kernel" in captured.err
    assert "bench: 3 timings, 1 failures, x" in captured.out


CPU_HOST = '{"gpus": 0, "capability": null}'
BENCH = Path(__file__).resolve().parents[2] / "ci" / "bench_kernels.py"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        ([], "bench_kernels: cannot run: runner cpu runs none of the cells 'draft-{triton,trtllm_mha}-*-graph' selects"),
        (["--runner", "no-such-runner"], "bench_kernels: error: unknown runner 'no-such-runner'"),
        (["--select", "zzz*"], "bench_kernels: error: selector 'zzz*' matches no cell"),
    ],
)
def test_bench_on_a_host_it_cannot_time_is_one_line_and_exit_2(tmp_path: Path, argv: list[str], line: str) -> None:
    """`nox -s bench --force` on a CPU host ends here: one line and exit 2, never a traceback."""
    env = {**os.environ, "SPECMATRIX_DETECT": CPU_HOST}
    out = ["--out", str(tmp_path / "out")]
    done = subprocess.run([sys.executable, str(BENCH), *argv, *out], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(line), done.stderr
    assert not (tmp_path / "out").exists()


def test_bench_without_cuda_torch_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.gpu.bench import cannot_run

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    why = cannot_run("4-gpu-b200", 12, "draft-*")
    assert why is not None and why.startswith("needs torch with CUDA (") and "`nox -s bench` installs it" in why
