"""Crash isolation on CPU: how a child's exit is classified, and that a crash is reported `crashed`."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from matrix.gpu.isolation import RESULT_PREFIX, ChildOutcome, classify, run_child

# GPU images carry pytest-benchmark, which warns (an error here) whenever xdist is loaded.
QUIET = ("-p", "no:cacheprovider", "-p", "no:benchmark")
ILLEGAL = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"


@pytest.mark.parametrize(
    ("rc", "stdout", "stderr", "outcome", "message"),
    [
        (0, RESULT_PREFIX + json.dumps({"message": ""}), "", ChildOutcome.PASSED, ""),
        (1, RESULT_PREFIX + json.dumps({"message": "max error 0.9"}), "", ChildOutcome.FAILED, "max error 0.9"),
        (1, "", f"Traceback ...\n{ILLEGAL}\n", ChildOutcome.CRASHED, ILLEGAL),
        (-11, "", "", ChildOutcome.CRASHED, "child exited with -11: "),
        (0, RESULT_PREFIX + json.dumps({"message": ""}), ILLEGAL, ChildOutcome.CRASHED, ILLEGAL),
    ],
    ids=["passed", "failed", "cuda-error", "segfault", "cuda-error-after-result"],
)
def test_classify(rc: int, stdout: str, stderr: str, outcome: ChildOutcome, message: str) -> None:
    result = classify(rc, stdout, stderr)
    assert (result.outcome, result.message) == (outcome, message)


def test_a_child_that_dies_is_a_crash_not_a_missing_result() -> None:
    result = run_child(["no-such-cell", "--level", "nonsense"], timeout=60)
    assert result.outcome is ChildOutcome.CRASHED
    assert "child exited with 2" in result.message


CRASHING_TEST = """
import pytest
from matrix.plugin import CRASHED_PROPERTY

@pytest.mark.matrix(select="draft-triton-topk{1,2}-page16-hd128-gqa4-bf16-graph")
def test_cell(matrix_cell, request):
    if matrix_cell.topk == 2:
        text = "CUDA error: an illegal memory access was encountered"
        request.node.user_properties.append((CRASHED_PROPERTY, text))
        pytest.fail(f"crashed: {text}", pytrace=False)
"""


def test_isolated_crash_is_reported_crashed_with_the_cuda_text(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECMATRIX_DETECT", json.dumps({"gpus": 1, "capability": [9, 0], "name": "NVIDIA H200"}))
    pytester.makepyfile(test_crash=CRASHING_TEST)
    installed = any(e.value == "matrix.plugin" for e in importlib.metadata.entry_points(group="pytest11"))
    load = () if installed else ("-p", "matrix.plugin")  # a plain checkout (the offline GPU host) has no entry point
    result = pytester.runpytest(*load, "--matrix-runner", "1-gpu-h200", "--matrix-report", "out/report.json", *QUIET)
    result.assert_outcomes(passed=1, failed=1)
    doc = json.loads((pytester.path / "out" / "report.json").read_text(encoding="utf-8"))
    status = {c["cell"]: (c["status"], c["message"]) for c in doc["cells"]}
    assert status["draft-triton-topk1-page16-hd128-gqa4-bf16-graph"] == ("passed", None)
    crashed, message = status["draft-triton-topk2-page16-hd128-gqa4-bf16-graph"]
    assert crashed == "crashed"
    assert "CUDA error: an illegal memory access" in message
    assert doc["counts"]["crashed"] == 1
