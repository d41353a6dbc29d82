"""Crash isolation on CPU: how a child's exit is classified, and that a crash is reported `crashed`."""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import pytest

from matrix.core.levels import Level
from matrix.gpu.isolation import RESULT_PREFIX, ChildOutcome, classify, run_child

HERE = Path(__file__).parent

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


# The real cell runner, with the named level's check swapped for one that reports what it was given: the child
# goes through argument parsing, the matrix, draft_case and the result line exactly as on a GPU host.
CHILD = """
import sys
from matrix.gpu import cellrun, checks

def report_case(case, **kwargs):
    report = checks.CheckReport(level=sys.argv[3])
    report.errors["q_len"] = float(case.q_len)
    return report

checks.CHECKS[sys.argv[3]] = report_case
sys.exit(cellrun.main())
"""
LEVEL_CELLS_USED = {
    Level.KERNEL: "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph",
    Level.SGLANG: "draft-triton-topk4-page16-hd128-gqa4-bf16-graph",
    Level.RUNNER: "draft-triton-topk8-page64-hd128-gqa4-bf16-graph",
    Level.TARGET: "target-trtllm_mha-topk1-page64-hd128-dt4-gqa4-bf16-graph",
    Level.TARGET_SGLANG: "target-triton-topk1-page16-hd128-dt4-gqa4-bf16-graph",
}


@pytest.mark.parametrize("level", list(Level))
def test_every_level_runs_in_a_child(tmp_path: Path, level: Level) -> None:
    """Crash isolation accepts every level the tests use: a target cell runs in a child and reports back."""
    (tmp_path / "child.py").write_text(CHILD, encoding="utf-8")
    cell = LEVEL_CELLS_USED[level]
    result = run_child([cell, "--level", level.value], timeout=120, entry=[str(tmp_path / "child.py")])
    assert result.outcome is ChildOutcome.PASSED, result.message
    assert result.report["level"] == level.value
    assert result.report["errors"] == {"q_len": 4.0 if level.value.startswith("target") else 1.0}


def test_every_level_the_tests_use_is_known_to_the_cell_runner() -> None:
    used = {m.group(1) for m in re.finditer(r"draft_check\(Level\.(\w+)", (HERE / "test_draft_decode.py").read_text())}
    assert used == {level.name for level in Level}
    assert set(LEVEL_CELLS_USED) == set(Level)


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


@pytest.mark.parametrize("runner", ["4-gpu-b200", "1-gpu-h200"])
def test_the_cell_runner_accepts_every_case_register_writes(runner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every (cell, level) a generated registered module passes to `python -m matrix.gpu.cellrun` reaches that level's
    check with the cell's own case (target cells with their draft tokens, draft cells with the target set apart)."""
    from matrix.core.expect import effective_versions, expectations
    from matrix.core.loader import load_matrix, load_runners
    from matrix.core.model import Outcome
    from matrix.gpu import cellrun, checks
    from matrix.register.modules import cell_cases

    matrix = load_matrix()
    exps = expectations(matrix, load_runners()[runner], effective_versions(matrix, {}))
    seen: list[tuple[str, str, int, str]] = []

    def record(level: str) -> object:
        def check(case: object, **kwargs: object) -> checks.CheckReport:
            seen.append((level, case.cell_id, case.q_len, case.target))  # type: ignore[attr-defined]
            return checks.CheckReport(level=level)

        return check

    for level in list(checks.CHECKS):
        monkeypatch.setitem(checks.CHECKS, level, record(level))
    cases = cell_cases([c.id for c in matrix.cells if exps[c.id].outcome is Outcome.RUN])
    for cell, level in cases:
        assert cellrun.main([cell, "--level", level]) == 0, (cell, level)
    assert [(lv, c) for lv, c, _, _ in seen] == [(lv, c) for c, lv in cases]
    for _, cell_id, q_len, target in seen:
        cell = matrix.cell(cell_id)
        assert q_len == (int(cell.num_draft_tokens) if cell.role == "target" else 1)
        assert target == (cell.backend if cell.get("target_backend") in (None, "same") else cell.target_backend)
