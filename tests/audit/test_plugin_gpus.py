"""One xdist worker per GPU: pinning, the detection handed to workers, and refusing more workers than GPUs."""

from __future__ import annotations

import pytest

from matrix.audit.hooks import SlotPool, check_workers, gpu_slots, pinned_env
from matrix.core.errors import UsageError

from .conftest import STRICT, report_of, write

PINNED = """
import os

def test_cell(matrix_cell):
    visible = os.environ["OUTER_VISIBLE"].split(",")
    index = int(os.environ["SPECMATRIX_GPU_INDEX"])
    assert index < int(os.environ["OUTER_WORKERS"])
    assert os.environ["CUDA_VISIBLE_DEVICES"] == visible[index] == os.environ["SPECMATRIX_GPU"]
    if os.environ.get("CHECK_WORKER_INDEX"):
        assert index == int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw"))
"""


# GPU UUIDs ("GPU-aa,GPU-bb") take the same path as "4,5,6,7" once split: test_gpu_slots reads them.
@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.parametrize("visible", [None, "4,5,6,7"])
@pytest.mark.usefixtures("tiny", "b200")
def test_each_worker_pins_its_own_gpu(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, visible: str | None) -> None:
    if visible is not None:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    monkeypatch.setenv("OUTER_VISIBLE", visible or "0,1,2,3")
    monkeypatch.setenv("OUTER_WORKERS", "2")
    monkeypatch.setenv("CHECK_WORKER_INDEX", "1")
    write(pytester, "test_pin.py", PINNED)
    result = pytester.runpytest(*STRICT, "-n", "2", "--matrix-run-expected-skips")
    result.assert_outcomes(passed=4)


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_a_restarted_worker_takes_over_the_dead_workers_gpu(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTER_VISIBLE", "0,1,2,3")
    monkeypatch.setenv("OUTER_WORKERS", "1")
    write(
        pytester,
        "test_pin.py",
        PINNED.replace("def test_cell(matrix_cell):", "def test_cell(matrix_cell):\n    _maybe_die(matrix_cell)"),
    )
    write(
        pytester,
        "conftest.py",
        """
        import builtins, os

        def _maybe_die(cell):
            if cell.id in ("alpha-s1", "beta-s1"):
                os._exit(1)

        builtins._maybe_die = _maybe_die
        """,
    )
    args = ("-n", "1", "--max-worker-restart", "4", "--matrix-run-expected-skips", "--matrix-report", "out/r.json")
    pytester.runpytest(*STRICT, *args)
    doc = report_of(pytester, "out/r.json")
    # gw0 dies on alpha-s1; its replacements (gw1, gw2) run the rest on the same single GPU slot.
    statuses = {c["cell"]: c["status"] for c in doc["cells"]}
    assert statuses == {"alpha-s1": "crashed", "alpha-s2": "passed", "beta-s1": "crashed", "beta-s2": "passed"}
    assert {c["worker"] for c in doc["cells"] if c["status"] == "passed"} <= {"gw1", "gw2"}


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_a_pinned_worker_plans_with_the_controllers_detection(pytester: pytest.Pytester) -> None:
    # A worker that detected for itself would see one GPU and refuse the 4-GPU claim.
    write(
        pytester,
        "conftest.py",
        """
        import os
        if os.environ.get("PYTEST_XDIST_WORKER"):
            os.environ["SPECMATRIX_DETECT"] = '{"gpus": 1, "capability": [10, 0], "name": "NVIDIA B200"}'
        """,
    )
    write(pytester, "test_plan.py", "def test_cell(matrix_cell):\n    pass\n")
    pytester.runpytest(*STRICT, "-n", "1").assert_outcomes(passed=2, skipped=2)  # one pinned worker shows it


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny")
def test_cpu_runner_does_not_pin(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        "test_cpu.py",
        "import os\n\ndef test_cell(matrix_cell):\n    assert 'CUDA_VISIBLE_DEVICES' not in os.environ\n    assert 'SPECMATRIX_GPU_INDEX' not in os.environ\n",
    )
    pytester.runpytest("--matrix-runner", "cpu", "-n", "1").assert_outcomes(passed=2, skipped=2)  # the worker runs the cells


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_more_workers_than_gpus_is_refused(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    write(pytester, "test_any.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest(*STRICT, "-n", "3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: specmatrix: -n 3 starts 3 xdist workers but runner '4-gpu-b200' has 2 GPU(s) (2,3); use -n 2*"]
    )


@pytest.mark.parametrize(
    ("env", "gpus", "slots"),
    [
        pytest.param({}, 4, ("0", "1", "2", "3"), id="all"),
        pytest.param({"CUDA_VISIBLE_DEVICES": "6, 7"}, 8, ("6", "7"), id="existing-list"),
        pytest.param({"CUDA_VISIBLE_DEVICES": "GPU-aa,GPU-bb"}, 4, ("GPU-aa", "GPU-bb"), id="uuids"),
        pytest.param({"CUDA_VISIBLE_DEVICES": ""}, 8, (), id="hidden"),
    ],
)
def test_gpu_slots(env: dict[str, str], gpus: int, slots: tuple[str, ...]) -> None:
    assert gpu_slots(env, gpus) == slots


def test_slot_pool_reuses_the_lowest_free_slot() -> None:
    pool = SlotPool(("4", "5"))
    assert (pool.take("gw0"), pool.take("gw1")) == (0, 1)
    pool.release("gw0")
    assert pool.take("gw2") == 0
    with pytest.raises(UsageError, match="no free GPU for xdist worker gw3"):
        pool.take("gw3")
    assert pinned_env(1, ("4", "5")) == {"CUDA_VISIBLE_DEVICES": "5", "SPECMATRIX_GPU_INDEX": "1", "SPECMATRIX_GPU": "5"}


@pytest.mark.parametrize(("workers", "ok"), [(2, True), (3, False)])
def test_check_workers(workers: int, ok: bool) -> None:
    if ok:
        check_workers(workers, ("0", "1"), "r")
    else:
        with pytest.raises(UsageError, match="use -n 2 or fewer"):
            check_workers(workers, ("0", "1"), "r")
