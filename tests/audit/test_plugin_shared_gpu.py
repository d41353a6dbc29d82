"""--matrix-workers-per-gpu: several xdist workers on one GPU, opted into, and still refused past the limit."""

from __future__ import annotations

import pytest

from matrix.audit.hooks import SlotPool, check_workers, pinned_env, shared_slots
from matrix.core.errors import UsageError

from .conftest import STRICT, report_of, write

SHARED = """
import os

def test_cell(matrix_cell):
    assert os.environ["CUDA_VISIBLE_DEVICES"] == os.environ["SPECMATRIX_GPU"]
    assert os.environ["CUDA_VISIBLE_DEVICES"] in os.environ["OUTER_VISIBLE"].split(",")
    with open(os.path.join(os.environ["OUT_DIR"], os.environ["PYTEST_XDIST_WORKER"]), "w") as handle:
        handle.write(os.environ["CUDA_VISIBLE_DEVICES"] + " " + os.environ["SPECMATRIX_GPU_INDEX"])
"""


def test_shared_slots_spread_round_robin() -> None:
    assert shared_slots(("6", "7"), 1) == ("6", "7")
    assert shared_slots(("6", "7"), 3) == ("6", "7", "6", "7", "6", "7")
    pool = SlotPool(shared_slots(("6", "7"), 2))
    taken = [pool.take(f"gw{i}") for i in range(4)]
    # Workers fill every GPU once before any GPU gets a second worker.
    assert [pinned_env(slot, shared_slots(("6", "7"), 2))["CUDA_VISIBLE_DEVICES"] for slot in taken] == ["6", "7", "6", "7"]
    # The index stays the device's index, whatever slot the worker holds.
    assert pinned_env(3, shared_slots(("6", "7"), 2))["SPECMATRIX_GPU_INDEX"] == "1"


@pytest.mark.parametrize(("workers", "per_gpu", "ok"), [(4, 2, True), (5, 2, False), (2, 1, True), (3, 1, False)])
def test_check_workers_counts_shared_slots(workers: int, per_gpu: int, ok: bool) -> None:
    if ok:
        check_workers(workers, ("0", "1"), "r", per_gpu)
        return
    with pytest.raises(UsageError, match=rf"use -n {2 * per_gpu} or fewer") as info:
        check_workers(workers, ("0", "1"), "r", per_gpu)
    assert "has 2 GPU(s) (0,1)" in str(info.value)


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_two_workers_share_one_gpu_when_asked(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setenv("OUTER_VISIBLE", "3")
    out = pytester.mkdir("seen")
    monkeypatch.setenv("OUT_DIR", str(out))
    write(pytester, "test_shared.py", SHARED)
    refused = pytester.runpytest(*STRICT, "-n", "2")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*-n 2 starts 2 xdist workers but runner '4-gpu-b200' has 1 GPU(s) (3)*"])
    args = ("-n", "2", "--matrix-workers-per-gpu", "2", "--matrix-run-expected-skips", "--matrix-report", "r.json")
    pytester.runpytest(*STRICT, *args).assert_outcomes(passed=4)
    assert {p.read_text() for p in out.iterdir()} == {"3 0"}
    assert len(list(out.iterdir())) == 2  # both workers ran cells, each pinned to GPU 3
    assert report_of(pytester, "r.json")["counts"]["passed"] == 4


@pytest.mark.parametrize("value", ["0", "17", "-1"])
@pytest.mark.usefixtures("tiny", "b200")
def test_workers_per_gpu_out_of_range_is_one_line(pytester: pytest.Pytester, value: str) -> None:
    write(pytester, "test_any.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest(*STRICT, f"--matrix-workers-per-gpu={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: specmatrix: --matrix-workers-per-gpu must be 1 to 16, got {value}"])
    assert "Traceback" not in result.stderr.str()
