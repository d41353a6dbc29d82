"""`python -m tools.gpu.smoke` and `nox -s bench` report failures in their text and their exit status."""

from __future__ import annotations

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
