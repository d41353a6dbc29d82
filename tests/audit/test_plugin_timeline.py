"""Item start times reach the report, and `specmatrix timeline` reads them back (with and without xdist)."""

from __future__ import annotations

import itertools
import re

import pytest

from matrix.audit.timeline import Scaling, timeline
from matrix.cli.main import main
from matrix.core.report import read_report

from .conftest import report_of, write

SLEEPY = """
import time

def test_cell(matrix_cell):
    time.sleep(0.3)


def test_helper():
    time.sleep(0.2)
"""


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_items_carry_their_start_and_two_workers_halve_the_wall(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write(pytester, "test_sleepy.py", SLEEPY)
    args = ("--matrix-runner", "4-gpu-b200", "--matrix-run-expected-skips")
    pytester.runpytest(*args, "-p", "no:xdist", "--matrix-report", "one/report.json").assert_outcomes(passed=5)
    pytester.runpytest(*args, "-n", "2", "--matrix-report", "two/report.json").assert_outcomes(passed=5)
    for name in ("one/report.json", "two/report.json"):
        doc = report_of(pytester, name)
        assert all(c["started"] >= 0 and c["started"] + c["duration"] <= doc["wall_seconds"] for c in doc["cells"])
        (helper,) = doc["outside"]
        assert helper["duration"] >= 0.2 and helper["started"] >= 0 and helper["worker"] in ("gw0", "gw1", None)
    one = timeline(read_report(pytester.path / "one/report.json"))
    two = timeline(read_report(pytester.path / "two/report.json"))
    assert [w.worker for w in one.workers] == ["main"] and [w.items for w in one.workers] == [4]
    assert [w.worker for w in two.workers] == ["gw0", "gw1"] and sum(w.items for w in two.workers) == 4
    starts = sorted(c.started or 0.0 for c in read_report(pytester.path / "one/report.json").cells)
    assert all(b - a >= 0.3 for a, b in itertools.pairwise(starts))  # one process: strictly one after another
    assert one.busy >= 1.2 and two.busy >= 1.2 and one.other_busy >= 0.2 and two.other_busy >= 0.2
    scaling = Scaling(base=one, scaled=two)
    assert scaling.worker_ratio == 2
    assert main(["timeline", str(pytester.path / "two/report.json"), "--reference", str(pytester.path / "one/report.json")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  gw0: \d items, ", out, re.MULTILINE) and re.search(r"^  main: 4 items, ", out, re.MULTILINE)
    assert f"speedup {scaling.speedup:.2f}x on 2x the workers" in out
