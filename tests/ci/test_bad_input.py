"""Every reproduced bad input (files, options, environment, a full stdout) is one line on stderr and exit 2.

Each case once ended in a traceback, a hang, a wrong verdict or a half-written output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.model import RunnerProfile
from matrix.core.report import CellStatus, to_json

from .conftest import make_report

B200 = '{"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}'
DEEP = "[" * 100_000 + "]" * 100_000
BIG_INT = "9" * 5000


def one_line_exit_2(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("specmatrix: error: "), err
    assert "Traceback" not in err
    return err


@pytest.fixture
def good_report(tmp_path: Path, default_matrix, runners: dict[str, RunnerProfile]) -> dict[str, object]:
    runner = runners["4-gpu-b200"]
    cells = [c.id for c in default_matrix.cells[:3]]
    return to_json(make_report(default_matrix, runner, dict.fromkeys(cells, CellStatus.PASSED)))


def _mangled(doc: dict[str, object], how: str) -> str:
    doc = json.loads(json.dumps(doc))
    cells = doc["cells"]
    assert isinstance(cells, list)
    if how == "deep":
        return '{"schema": "specmatrix.report/1", "extra": ' + DEEP + "}"
    if how == "big-int":
        return json.dumps(doc).replace('"planned": 3', f'"planned": {BIG_INT}')
    if how == "duration-1e999":
        return json.dumps(doc).replace('"duration": 0.5', '"duration": 1e999', 1)
    if how == "nan":
        return json.dumps(doc).replace('"duration": 0.5', '"duration": NaN', 1)
    if how == "wrong-type-cells":
        doc["cells"] = {"not": "a list"}
    elif how == "wrong-type-versions":
        doc["versions"] = ["x"]
    elif how == "garbage-version":
        doc["versions"] = {"sglang": "garbage"}
    elif how == "wrong-type-labels":
        doc["runner"]["labels"] = 5  # type: ignore[index]
    elif how == "wrong-type-message":
        cells[0]["message"] = {"a": 1}
    elif how == "wrong-type-outside":
        doc["outside"] = 7
    elif how == "duplicate-nodeid":
        cells.append(dict(cells[0]))
        doc["planned"] = len(cells)
        doc.pop("counts")
    elif how == "capability-junk":
        doc["runner"]["capability"] = ["a", None]  # type: ignore[index]
    elif how == "extra-deep":
        extra: object = {}
        for _ in range(40):
            extra = {"x": extra}
        doc["extra"] = extra
    return json.dumps(doc)


MANGLES = [
    ("deep", "nested too deeply"),
    ("big-int", "integer of 5000 digits"),
    ("duration-1e999", "out of range"),
    ("nan", "NaN is not a JSON number"),
    ("wrong-type-cells", "field 'cells' has the wrong type"),
    ("wrong-type-versions", "versions"),
    ("garbage-version", "sglang version 'garbage' is not a PEP 440 version"),
    ("wrong-type-labels", "field 'labels' must be a list of strings"),
    ("wrong-type-message", "field 'message' must be a string or null"),
    ("wrong-type-outside", "field 'outside' must be a list"),
    ("duplicate-nodeid", "is listed twice"),
    ("capability-junk", "capability"),
    ("extra-deep", "field 'extra'"),
]


@pytest.mark.parametrize("command", ["audit", "timeline", "coverage", "shard-durations"])
@pytest.mark.parametrize(("how", "message"), MANGLES, ids=[m[0] for m in MANGLES])
def test_a_bad_report_is_one_line_for_every_reader(capsys, tmp_path, good_report, command, how, message, monkeypatch):
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)
    path = tmp_path / "bad.json"
    path.write_text(_mangled(good_report, how), encoding="utf-8")
    argv = {
        "audit": ["audit", str(path)],
        "timeline": ["timeline", str(path)],
        "coverage": ["coverage", "--out", str(tmp_path / "out"), "--no-heatmap", str(path)],
        "shard-durations": ["shard", "--runner", "4-gpu-b200", "--shards", "2", "--durations", str(path)],
    }[command]
    err = one_line_exit_2(capsys, *argv)
    assert message in err
    assert not (tmp_path / "out").exists()  # nothing written for a report that was never read


def test_a_garbage_version_in_a_report_no_longer_hides_never_ran_cells(capsys, tmp_path, good_report, monkeypatch):
    """It once made every version-gated cell an expected skip, so coverage stopped asking for them."""
    path = tmp_path / "r.json"
    path.write_text(_mangled(good_report, "garbage-version"), encoding="utf-8")
    err = one_line_exit_2(capsys, "coverage", "--out", str(tmp_path / "out"), "--no-heatmap", str(path))
    assert "'garbage'" in err and "sglang" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cells", "--select", "!*"], "excludes every cell"),
        (["cells", "--select", "{" * 2000 + "a" + "}" * 2000], "braces nested more than 16 deep"),
        (["cells", "--select", "{a,b}" * 16], "expands to more than 10,000 patterns"),
        (["cells", "--select", "x" * (5 * 1024 * 1024)], "characters; at most"),
        (["shard", "--runner", "4-gpu-b200", "--budget", "nan"], "--budget must be a positive, finite number"),
        (["shard", "--runner", "4-gpu-b200", "--budget", "inf"], "--budget must be a positive, finite number"),
        (["shard", "--runner", "4-gpu-b200", "--budget=-inf"], "--budget must be a positive, finite number"),
    ],
    ids=["exclude-all", "deep-braces", "brace-explosion", "huge-selector", "budget-nan", "budget-inf", "budget-minus-inf"],
)
def test_bad_options_are_one_line(capsys, monkeypatch, argv, message):
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)
    assert message in one_line_exit_2(capsys, *argv)


MINIMAL_MATRIX = """
[[axis]]
name = "backend"
values = ["triton"]
[[group]]
name = "g"
backend = "triton"
"""


@pytest.mark.parametrize(
    ("file", "text", "argv", "message"),
    [
        (
            "runners.toml",
            "[runner.x]\ngpus = 1\ncapability = [9, 0]\nrunner_configs = 5\n",
            ["--runners", "{f}", "runners"],
            "runner_configs: expected a list of strings",
        ),
        (
            "runners.toml",
            "[runner.x]\ngpus = 1\ncapability = [9, 0]\nlabels = 5\n",
            ["--runners", "{f}", "runners"],
            "labels: expected a list of strings",
        ),
        (
            "runners.toml",
            "[runner.x]\ngpus = 1\ncapability = [9, 0]\ndevice_name = 5\n",
            ["--runners", "{f}", "runners"],
            "device_name: expected a non-empty string",
        ),
        (
            "runners.toml",
            "[runner.x]\ngpus = 10000000\ncapability = [9, 0]\n",
            ["--runners", "{f}", "runners"],
            "gpus must be a non-negative integer",
        ),
        ("runners.toml", "a = " + "[" * 3000 + "]" * 3000 + "\n", ["--runners", "{f}", "runners"], "nested too deeply"),
        (
            "matrix.toml",
            MINIMAL_MATRIX + "[cost.backend.triton]\nconfig_axes = 5\n",
            ["--matrix", "{f}", "cells"],
            "config_axes: expected a list of strings",
        ),
        (
            "matrix.toml",
            MINIMAL_MATRIX + "[cost]\nshard_seconds = nan\n",
            ["--matrix", "{f}", "cells"],
            "expected a finite non-negative number, got nan",
        ),
        ("matrix.toml", MINIMAL_MATRIX + "[cost.backend.triton]\ncell_seconds = inf\n", ["--matrix", "{f}", "cells"], "got inf"),
        (
            "matrix.toml",
            MINIMAL_MATRIX + '[pins]\nsglang = "0.5.23-dirty"\n',
            ["--matrix", "{f}", "cells"],
            "sglang version '0.5.23-dirty' is not a PEP 440 version",
        ),
        ("pyproject.toml", "[tool]\n", ["cells"], None),  # a plain empty [tool] table is fine
        ("pyproject.toml", "tool = 5\n", ["cells"], "[tool] must be a table"),
        ("pyproject.toml", "[tool]\nspecmatrix = 5\n", ["cells"], "[tool.specmatrix] must be a table"),
        ("pyproject.toml", "[tool.specmatrix]\nrunner = 5\n", ["cells"], "runner: expected a non-empty string"),
        ("pyproject.toml", "[tool.specmatrix]\nrunners = [1]\n", ["cells"], "runners: expected a string or a list of strings"),
        ("bin.toml", None, ["--matrix", "{f}", "cells"], "not UTF-8 text"),
    ],
    ids=[
        "runner_configs-5",
        "labels-5",
        "device_name-5",
        "gpus-10M",
        "toml-deep",
        "config_axes-5",
        "cost-nan",
        "cost-inf",
        "pins-invalid-version",
        "pyproject-empty-tool",
        "pyproject-tool-5",
        "pyproject-specmatrix-5",
        "pyproject-runner-5",
        "pyproject-runners-ints",
        "binary-toml",
    ],
)
def test_bad_files_are_one_line(capsys, monkeypatch, tmp_path, file, text, argv, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)
    path = tmp_path / file
    if text is None:
        path.write_bytes(bytes(range(256)))
    else:
        path.write_text(text, encoding="utf-8")
    argv = [a.replace("{f}", str(path)) for a in argv]
    if message is None:
        assert main(argv) == 0
        return
    assert message in one_line_exit_2(capsys, *argv)


@pytest.mark.parametrize(
    ("detect", "message"),
    [
        ('{"gpus": 10000000, "capability": [10, 0]}', "gpus must be an integer from 0 to 1024"),
        ('{"gpus": 4, "capability": [10, 0], "versions": {"sglang": "0.5.23-dirty"}}', "sglang version '0.5.23-dirty'"),
        ('{"gpus": 4, "capability": [10, 0], "versions": {"torch": 2}}', "versions must map library names"),
        ('{"gpus": ' + BIG_INT + "}", "integer of 5000 digits"),
        ('{"gpus": 4, "capability": [10, 0], "x": ' + "[" * 20_000 + "]" * 20_000 + "}", "nested too deeply"),
        ('{"gpus": NaN}', "NaN is not a JSON number"),
        ('{"gpus": 4, "capability": [true, 0]}', "capability must be [major, minor]"),
        ('{"gpus": 1, "capability": [9, 0], "name": 5}', "name must be a device name string"),
    ],
    ids=["gpus-10M", "dirty-version", "int-version", "big-int", "deep", "nan", "bool-capability", "int-name"],
)
def test_bad_detection_overrides_are_one_line(capsys, monkeypatch, detect, message):
    monkeypatch.setenv("SPECMATRIX_DETECT", detect)
    assert message in one_line_exit_2(capsys, "cells", "--runner", "4-gpu-b200")


def test_timeline_of_a_zero_wall_report_is_one_line(capsys, tmp_path, good_report):
    doc = dict(good_report, wall_seconds=0)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert "wall_seconds is 0" in one_line_exit_2(capsys, "timeline", str(path))


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (DEEP, "nested too deeply"),
        (
            '{"schema": "specmatrix.shard-plan/1", "runner": "4-gpu-b200", "shards": [{"index": ' + BIG_INT + ', "cells": []}]}',
            "5000 digits",
        ),
        ('{"schema": "specmatrix.shard-plan/1", "runner": 5, "shards": []}', "malformed 'shards' or 'runner'"),
        ('{"schema": "specmatrix.shard-plan/1", "runner": "r", "shards": [{"index": 1.5, "cells": []}]}', "integer 'index'"),
        ('{"schema": "specmatrix.shard-plan/1", "runner": "r", "shards": [{"index": 1, "cells": [[]]}]}', "list of cell ids"),
    ],
    ids=["deep", "big-int", "runner-int", "index-float", "cells-nested"],
)
def test_bad_plans_are_one_line(capsys, tmp_path, plan, message):
    path = tmp_path / "plan.json"
    path.write_text(plan, encoding="utf-8")
    assert message in one_line_exit_2(capsys, "coverage", "--out", str(tmp_path / "out"), "--plan", str(path))


@pytest.mark.parametrize("target", ["out-is-a-file", "plan-dir-is-a-file"])
def test_unwritable_output_folders_are_one_line(capsys, monkeypatch, tmp_path, report_file, runners, default_matrix, target):
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be", encoding="utf-8")
    if target == "out-is-a-file":
        report = report_file("r.json", runners["4-gpu-b200"], {default_matrix.cells[0].id: CellStatus.PASSED})
        err = one_line_exit_2(capsys, "coverage", "--out", str(blocker / "sub"), "--no-heatmap", str(report))
    else:
        err = one_line_exit_2(capsys, "shard", "--runner", "4-gpu-b200", "--shards", "2", "--plan-dir", str(blocker / "sub"))
    assert "cannot" in err
    assert blocker.read_text(encoding="utf-8") == "a file where a folder should be"


@pytest.mark.parametrize("special", ["fifo", "directory"])
def test_special_files_are_refused_not_replaced(capsys, tmp_path, report_file, runners, default_matrix, special):
    out = tmp_path / "out"
    out.mkdir()
    target = out / "coverage.json"
    if special == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    report = report_file("r.json", runners["4-gpu-b200"], {default_matrix.cells[0].id: CellStatus.PASSED})
    err = one_line_exit_2(capsys, "coverage", "--out", str(out), "--no-heatmap", str(report))
    assert "not a regular file; refusing to replace it" in err
    assert target.is_fifo() if special == "fifo" else target.is_dir()


def test_coverage_without_matplotlib_writes_the_tables_and_says_the_heatmap_is_left_out(
    capsys, monkeypatch, tmp_path, report_file, runners, default_matrix
):
    """The tables need no plotting library: they are written, the picture is not, and one line says why."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    report = report_file("r.json", runners["4-gpu-b200"], {default_matrix.cells[0].id: CellStatus.PASSED})
    out = tmp_path / "out"
    code = main(["coverage", "--out", str(out), str(report)])
    err = capsys.readouterr().err
    assert code == 1  # the cells that never ran are findings; the missing picture is not
    assert (
        err
        == "specmatrix coverage: no heatmap: the heatmap needs matplotlib: pip install 'specmatrix[plot]' (--no-heatmap leaves it out quietly)\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["coverage.json", "coverage.md", "summary.md"]
    assert "heatmap" not in (out / "coverage.md").read_text()


def test_gha_format_never_prints_a_non_finite_number(capsys, monkeypatch):
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)
    assert main(["shard", "--runner", "4-gpu-b200", "--shards", "3", "--format", "gha"]) == 0
    out = capsys.readouterr().out

    def refuse(name: str) -> object:
        raise AssertionError(f"{name} in --format gha output")

    json.loads(out, parse_constant=refuse)


def test_stdout_on_a_full_disk_is_one_line(tmp_path):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w", encoding="utf-8") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "matrix", "cells", "--runner", "4-gpu-b200"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SPECMATRIX_DETECT": B200},
            check=False,
        )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "specmatrix: error: standard output: No space left on device\n"


def test_stdout_closed_early_is_quiet_like_a_unix_tool(tmp_path):
    proc = subprocess.Popen(  # --json: far more than a pipe buffer holds, so the writer is still writing
        [sys.executable, "-m", "matrix", "cells", "--runner", "4-gpu-b200", "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "SPECMATRIX_DETECT": B200},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait() == 141  # 128 + SIGPIPE, as for a Unix tool whose reader went away
    assert err == ""


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        pytest.param('{"suites": [' + BIG_INT + "]}", "an integer of 5000 digits", id="huge-integer"),
        pytest.param('["base-b-test-4-gpu-b200", NaN]', "NaN is not a JSON number", id="nan"),
    ],
)
def test_suites_file_with_a_huge_integer_is_one_line(capsys, tmp_path, content, cause):
    """`guards --suites` reads JSON through the core's bounded reader: the line names the file and what it refused."""
    suites = tmp_path / "suites.json"
    suites.write_text(content, encoding="utf-8")
    folder = tmp_path / "suite"
    folder.mkdir()
    err = one_line_exit_2(capsys, "guards", str(folder), "--suites", str(suites))
    assert f"--suites {suites}: JSON not accepted: {cause}" in err


def test_an_unbounded_integer_conversion_behind_the_boundary_is_one_line(capsys, monkeypatch):
    """A reader that skipped the bounded reader: CPython's digit-limit ValueError still ends as one line, exit 2."""
    from matrix.cli import core

    def converts_a_huge_integer(*_: object) -> int:
        return int(BIG_INT)

    monkeypatch.setattr(core, "cmd_runners", converts_a_huge_integer)
    assert "input holds an integer with too many digits" in one_line_exit_2(capsys, "runners")


def test_suites_file_nested_deeply_is_one_line(capsys, tmp_path):
    suites = tmp_path / "suites.json"
    suites.write_text(DEEP, encoding="utf-8")
    folder = tmp_path / "suite"
    folder.mkdir()
    assert "nested too deeply" in one_line_exit_2(capsys, "guards", str(folder), "--suites", str(suites))


def test_a_lone_surrogate_in_a_report_prints_escaped(tmp_path):
    """With a strict UTF-8 stdout, printing a finding about `t[c\\udcff]` raised UnicodeEncodeError."""
    doc = {
        "schema": "specmatrix.report/1",
        "matrix": "m",
        "runner": {"name": "cpu", "gpus": 0, "capability": None},
        "versions": {},
        "created": "2026-11-30T00:00:00+00:00",
        "cells": [
            {
                "nodeid": "t.py::t[c\udcff]",
                "cell": "c",
                "test": "t",
                "expected": "run",
                "rule": None,
                "reason": "",
                "status": "skipped-unexpected",
                "skip_reason": "bad \udcff",
            }
        ],
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "matrix", "audit", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "t.py::t[c\\udcff]" in proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("detect", "nearest"),
    [
        ('{"gpus": 3, "capability": [10, 0], "name": "NVIDIA B200"}', "  4-gpu-b200: needs 4 GPU(s), sees 3"),
        ('{"gpus": 1, "capability": [8, 0], "name": "NVIDIA A100-SXM4-80GB"}', "needs sm90, sees sm80"),
        ('{"gpus": 8, "capability": [9, 0], "name": "NVIDIA H100 80GB HBM3"}', "  4-gpu-h100: needs 4 GPU(s), sees 8"),
    ],
    ids=["3xB200", "1xA100", "8xH100"],
)
def test_detect_without_a_fitting_profile_lists_the_nearest(capsys, monkeypatch, detect, nearest):
    monkeypatch.setenv("SPECMATRIX_DETECT", detect)
    assert main(["detect"]) == 2
    out, err = capsys.readouterr()
    assert "runner profile: none fits; nearest:" in out and nearest in out
    assert err.count("\n") == 1 and "no runner profile fits this machine" in err and "nearest:" in err
    assert main(["detect", "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["runner"] is None and len(doc["nearest"]) == 3


def test_eight_h200_are_not_eight_h20(capsys, monkeypatch):
    monkeypatch.setenv("SPECMATRIX_DETECT", '{"gpus": 8, "capability": [9, 0], "name": "NVIDIA H200"}')
    assert main(["detect"]) == 0
    assert "runner profile: 8-gpu-h200" in capsys.readouterr().out


def test_a_runner_file_reusing_a_builtin_name_needs_replace_runner(capsys, tmp_path):
    """`--runners FILE` once silently turned 4-gpu-b200 into a 2-GPU sm80 profile."""
    mine = tmp_path / "mine.toml"
    mine.write_text("[runner.4-gpu-b200]\ngpus = 2\ncapability = [8, 0]\n", encoding="utf-8")
    err = one_line_exit_2(capsys, "--runners", str(mine), "runners")
    assert "runner '4-gpu-b200' is already a built-in profile" in err and "--replace-runner 4-gpu-b200" in err
    assert main(["--runners", str(mine), "--replace-runner", "4-gpu-b200", "runners", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)["runners"]}
    assert (rows["4-gpu-b200"]["gpus"], rows["4-gpu-b200"]["capability"]) == (2, [8, 0])
