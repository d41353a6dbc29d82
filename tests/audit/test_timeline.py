"""The run timeline: per-worker start, busy and finish; speedup and efficiency between two runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.audit.timeline import Scaling, timeline
from matrix.cli.main import main
from matrix.core.errors import ReportError
from matrix.core.report import CellResult, CellStatus, OutsideResult, Report, RunnerInfo, read_report, to_json


def _cell(i: int, worker: str | None, started: float | None, duration: float, **kw: float) -> CellResult:
    return CellResult(
        nodeid=f"t.py::test[c{i}]",
        cell=f"c{i}",
        test="t.py::test",
        expected="run",
        rule=None,
        reason="",
        status=CellStatus.PASSED,
        duration=duration,
        started=started,
        worker=worker,
        **kw,  # type: ignore[arg-type]
    )


def _report(wall: float | None, *cells: CellResult, gpus: int = 1, outside: tuple[OutsideResult, ...] = ()) -> Report:
    return Report(
        matrix="m",
        runner=RunnerInfo(name=f"{gpus}-gpu-h200", gpus=gpus, capability=(9, 0)),
        versions={},
        detection_overridden=False,
        created="2026-11-30T00:00:00+00:00",
        cells=cells,
        outside=outside,
        wall_seconds=wall,
    )


ONE = _report(100.0, _cell(0, "gw0", 10.0, 40.0, setup_seconds=5.0), _cell(1, "gw0", 50.0, 45.0, compile_seconds=30.0))
TWO = _report(
    60.0,
    _cell(0, "gw0", 11.0, 40.0, setup_seconds=5.0),
    _cell(1, "gw1", 12.0, 45.0, compile_seconds=30.0),
    _cell(2, "gw1", None, 0.0),  # never ran: no start, left out
    gpus=2,
)


def test_per_worker_lines_and_the_losses_around_them() -> None:
    t = timeline(TWO)
    assert [(w.worker, w.items, w.first_start, w.last_end, w.busy) for w in t.workers] == [
        ("gw0", 1, 11.0, 51.0, 40.0),
        ("gw1", 1, 12.0, 57.0, 45.0),
    ]
    assert (t.start_gap, t.spread, t.tail) == (11.0, 6.0, 3.0)
    assert t.utilisation == pytest.approx(85.0 / 120.0)
    assert (t.workers[0].setup, t.workers[1].compile) == (5.0, 30.0)


def test_speedup_and_efficiency() -> None:
    s = Scaling(base=timeline(ONE), scaled=timeline(TWO))
    assert (s.speedup, s.worker_ratio) == (pytest.approx(100 / 60), 2.0)
    assert s.efficiency == pytest.approx(100 / 60 / 2)


def test_items_without_a_worker_are_the_main_process() -> None:
    t = timeline(_report(5.0, _cell(0, None, 1.0, 2.0)))
    assert [w.worker for w in t.workers] == ["main"]


@pytest.mark.parametrize(
    ("report", "message"),
    [
        (_report(None, _cell(0, "gw0", 1.0, 1.0)), "has no wall_seconds"),
        (_report(9.0, _cell(0, "gw0", None, 1.0)), "no item has a start time"),
    ],
)
def test_a_report_it_cannot_place_is_an_error(report: Report, message: str) -> None:
    with pytest.raises(ReportError, match=message):
        timeline(report)


def test_cli_prints_both_runs_and_the_speedup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, report in (("one.json", ONE), ("two.json", TWO)):
        (tmp_path / name).write_text(json.dumps(to_json(report)), encoding="utf-8")
    assert read_report(tmp_path / "two.json").cells[0].started == 11.0
    assert main(["timeline", str(tmp_path / "two.json"), "--reference", str(tmp_path / "one.json")]) == 0
    out = capsys.readouterr().out
    assert "start-up to first item 11.0 s; workers finish 6.0 s apart; after the last item 3.0 s" in out
    assert "speedup 1.67x on 2x the workers (100.0 s -> 60.0 s), efficiency 0.83" in out
    # The old spelling (before "baseline" meant only the guard audit's acknowledged findings) still works.
    assert main(["timeline", str(tmp_path / "two.json"), "--baseline", str(tmp_path / "one.json")]) == 0
    old = capsys.readouterr()
    assert old.out == out and old.err == "specmatrix: warning: --baseline REPORT is deprecated; use --reference REPORT\n"


def test_cli_json_carries_both_runs_and_the_speedup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, report in (("one.json", ONE), ("two.json", TWO)):
        (tmp_path / name).write_text(json.dumps(to_json(report)), encoding="utf-8")
    argv = ["timeline", str(tmp_path / "two.json"), "--reference", str(tmp_path / "one.json"), "--format", "json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "specmatrix.timeline/1"
    assert (doc["timeline"]["wall"], doc["reference"]["wall"]) == (60.0, 100.0)
    assert doc["timeline"]["start_gap"] == 11.0 and doc["timeline"]["spread"] == 6.0
    assert round(doc["scaling"]["speedup"], 2) == 1.67 and round(doc["scaling"]["efficiency"], 2) == 0.83


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda d: d["cells"][0].update(started="soon"), "cells[0]: field 'started' has the wrong type"),
        (lambda d: d.update(wall_seconds=[1]), "field 'wall_seconds' has the wrong type"),
        (lambda d: d["cells"].clear(), "says 3 planned but lists 0 cells"),
    ],
)
def test_cli_on_a_corrupt_report_says_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mangle: object, message: str
) -> None:
    doc = to_json(TWO)
    mangle(doc)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["timeline", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_tests_outside_the_matrix_are_the_workers_other_time() -> None:
    other = OutsideResult(nodeid="t.py::test_helper", status="passed", duration=5.0, started=52.0, worker="gw0")
    t = timeline(_report(60.0, *TWO.cells, gpus=2, outside=(other,)))
    assert [(w.worker, w.items, w.others, w.other_busy, w.last_end) for w in t.workers] == [
        ("gw0", 1, 1, 5.0, 57.0),
        ("gw1", 1, 0, 0.0, 57.0),
    ]
    assert (t.busy, t.other_busy, t.spread, t.tail) == (85.0, 5.0, 0.0, 3.0)
    untimed = OutsideResult(nodeid="t.py::test_old", status="passed")
    assert timeline(_report(60.0, *TWO.cells, outside=(other, untimed))).untimed_others == 1
    only_others = timeline(_report(9.0, outside=(other,)))
    assert [(w.worker, w.items, w.others) for w in only_others.workers] == [("gw0", 0, 1)]
