"""The bug class this project exists for: sglang's old test_trtllm_mha.py class guard skipped everything on B200.

The guard `not (is_sm90_supported() or is_sm120_supported())` hid the whole class on the 4-gpu-b200 suite (sm100)
and CI stayed green. Planted here with the default matrix, it must fail the session naming the class; with
`is_sm100_supported()` added, the same run passes.
"""

from __future__ import annotations

import functools

import pytest

from matrix.core.expect import expectations
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Outcome
from matrix.core.selectors import select

from .conftest import B200, STRICT, report_of, write

BUGGY = "not (is_sm90_supported() or is_sm120_supported())"
FIXED = "not (is_sm90_supported() or is_sm100_supported() or is_sm120_supported())"

TEST_TRTLLM_MHA = '''
import json
import os
import unittest

import pytest

from matrix.audit.items import run_unittest_case


def _capability():
    """What torch.cuda.get_device_capability() would say; faked through SPECMATRIX_DETECT here."""
    facts = json.loads(os.environ["SPECMATRIX_DETECT"])
    return tuple(facts["capability"]) if facts.get("gpus") else (0, 0)


def is_sm90_supported():
    return _capability()[0] == 9


def is_sm100_supported():
    return _capability()[0] == 10


def is_sm120_supported():
    return _capability()[0] == 12


@unittest.skipIf({guard}, "Test requires SM90 or SM120")
class TestTRTLLMMHA(unittest.TestCase):
    __test__ = False  # run per cell by test_trtllm_mha below, not once more as a plain unittest class

    def test_decode(self):
        cell = self.matrix_cell
        self.assertEqual(cell.backend, "trtllm_mha")
        self.assertGreaterEqual(cell.page_size, 16)


@pytest.mark.matrix(select="draft-trtllm_mha-*")
def test_trtllm_mha(matrix_cell):
    run_unittest_case(TestTRTLLMMHA, "test_decode", matrix_cell)
'''


@functools.cache  # the same default matrix for all four runs
def _must_run_on_b200() -> int:
    matrix = load_matrix()
    runner = load_runners()["4-gpu-b200"]
    exps = expectations(matrix, runner, matrix.pins)
    cells = select(matrix.cells, ["draft-trtllm_mha-*"])
    return sum(exps[c.id].outcome is Outcome.RUN for c in cells)


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.parametrize("xdist", [False, True], ids=["local", "xdist"])
@pytest.mark.parametrize(("guard", "broken"), [(BUGGY, True), (FIXED, False)], ids=["old-guard", "fixed-guard"])
def test_the_old_trtllm_mha_guard_fails_on_b200(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, guard: str, broken: bool, xdist: bool
) -> None:
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)
    write(pytester, "test_trtllm_mha.py", TEST_TRTLLM_MHA.format(guard=guard))
    # Two workers show the skip crossing from a worker to the controller as well as four would (the pinning of
    # one GPU per worker is tests/audit/test_plugin_gpus.py's subject), at half the nested interpreters.
    extra = ("-n", "2") if xdist else ()
    result = pytester.runpytest(*STRICT, *extra, "--matrix-report", "out/report.json")
    doc = report_of(pytester)
    must_run = _must_run_on_b200()
    assert must_run > 0
    if broken:
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(
            [
                "UNEXPECTED SKIP test_trtllm_mha.py::test_trtllm_mha*: skipped (TestTRTLLMMHA.test_decode: Test requires SM90 or SM120)*"
            ]
        )
        assert doc["counts"]["skipped-unexpected"] == must_run
        assert doc["counts"]["passed"] == 0
    else:
        assert result.ret == pytest.ExitCode.OK
        assert doc["counts"]["passed"] == must_run
        assert doc["counts"]["skipped-unexpected"] == 0
    assert doc["counts"]["skipped-expected"] == doc["planned"] - must_run  # page_size 1: an expected skip either way
