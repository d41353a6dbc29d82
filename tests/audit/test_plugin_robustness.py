"""Reports that cannot lie: stale paths marked, every collected test counted once, XML that parses, bad input one line."""

from __future__ import annotations

import json
import os
import re
import xml.dom.minidom
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from matrix.cli.main import main

from .conftest import STRICT, report_of, write

ORDER = """
import pytest

def test_first_plain():
    pass

def test_first_failing():
    assert False

def test_cell(matrix_cell):
    pass

def test_middle_plain():
    pass

@pytest.mark.skip(reason="ordinary")
def test_last_skip():
    pass
"""


def _outcome_total(result: pytest.RunResult) -> int:
    outcomes = result.parseoutcomes()
    return sum(outcomes.get(k, 0) for k in ("passed", "failed", "skipped", "xfailed", "xpassed", "errors", "error"))


def _collected(result: pytest.RunResult) -> int:
    match = re.search(r"collected (\d+) item", result.stdout.str()) or re.search(r"\[(\d+) items?\]", result.stdout.str())
    assert match, result.stdout.str()
    return int(match.group(1))


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.parametrize(
    "extra",
    [pytest.param((), id="local"), pytest.param(("-n", "2"), id="xdist"), pytest.param(("-x",), id="stop-first")],
)
@pytest.mark.usefixtures("tiny", "b200")
def test_pytest_and_the_audit_count_the_same_tests(pytester: pytest.Pytester, extra: tuple[str, ...]) -> None:
    """Tests that ran before the first matrix item once went uncounted (pytest 1,113 vs audit 945), and tests
    never reached after -x vanished instead of being `not-run`."""
    write(pytester, "test_order.py", ORDER)
    result = pytester.runpytest(*STRICT, "-p", "no:randomly", *extra, "--matrix-report", "out/report.json")
    doc = report_of(pytester)
    statuses = [c["status"] for c in doc["cells"]] + [o["status"] for o in doc["outside"]]
    nodeids = [c["nodeid"] for c in doc["cells"]] + [o["nodeid"] for o in doc["outside"]]
    assert len(nodeids) == len(set(nodeids))
    if extra == ("-x",):
        assert len(nodeids) == _collected(result) == 8  # 2 plain + 4 cells + middle + last
        outside = {o["nodeid"].split("::")[1]: o["status"] for o in doc["outside"]}
        assert outside == {
            "test_first_plain": "passed",
            "test_first_failing": "failed",
            "test_middle_plain": "not-run",
            "test_last_skip": "not-run",
        }
        assert statuses.count("not-run") == 6
        return
    assert len(nodeids) == _outcome_total(result) == _collected(result) == 8
    outside = {o["nodeid"].split("::")[1]: o["status"] for o in doc["outside"]}
    assert outside == {
        "test_first_plain": "passed",
        "test_first_failing": "failed",
        "test_middle_plain": "passed",
        "test_last_skip": "skipped",
    }


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_an_unengaged_run_counts_tests_before_the_first_matrix_item_under_xdist(pytester: pytest.Pytester) -> None:
    """No option engages the audit: it wakes at the first matrix report and still counts what ran before."""
    write(pytester, "test_a_plain.py", "def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    write(pytester, "test_b_cells.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest("-n", "1", "-p", "no:randomly")
    text = result.stdout.str()
    assert "specmatrix skip audit" in text
    assert "outside the matrix: 2 test(s) (2 passed)" in text


@pytest.mark.usefixtures("tiny", "b200")
def test_a_session_marks_its_report_path_stale_until_it_finishes(pytester: pytest.Pytester) -> None:
    """A run that died before writing (a segfault, no xdist) once left the previous report, and `audit` said ok."""
    write(pytester, "test_ok.py", "def test_cell(matrix_cell):\n    pass\n")
    assert pytester.runpytest(*STRICT, "--matrix-report", "out/report.json").ret == 0
    assert (pytester.path / "out/report.xml").exists()
    (pytester.path / "test_ok.py").unlink()
    write(pytester, "test_dies.py", "import os\n\ndef test_cell(matrix_cell):\n    os._exit(3)\n")
    result = pytester.runpytest_subprocess(*STRICT, "--matrix-report", "out/report.json")
    assert result.ret == 3
    doc = json.loads((pytester.path / "out/report.json").read_text(encoding="utf-8"))
    assert doc["schema"] == "specmatrix.report-in-progress/1"
    assert not (pytester.path / "out/report.xml").exists()
    assert not (pytester.path / "out/report.md").exists()
    assert main(["audit", str(pytester.path / "out/report.json")]) == 2


def test_audit_rejects_planned_zero_and_duplicate_node_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = {
        "schema": "specmatrix.report/1",
        "matrix": "m",
        "runner": {"name": "cpu", "gpus": 0, "capability": None},
        "versions": {},
        "created": "2026-11-30T00:00:00+00:00",
        "cells": [],
    }
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(base), encoding="utf-8")
    assert main(["audit", str(empty)]) == 2
    assert "planned 0 matrix items" in capsys.readouterr().err
    cell = {"nodeid": "t.py::t[c]", "cell": "c", "test": "t", "expected": "run", "rule": None, "reason": "", "status": "passed"}
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(dict(base, cells=[cell, cell])), encoding="utf-8")
    assert main(["audit", str(twice)]) == 2
    assert "listed twice" in capsys.readouterr().err


NASTY = "bad \\x00\\x01\\x08\\x0b\\x0c\\x1b\\x1f \\udcff ]]> <&> end"

NASTY_TESTS = f"""
import pytest

def test_cell(matrix_cell):
    if matrix_cell.id == "alpha-s1":
        pytest.skip("{NASTY}")
    if matrix_cell.id == "alpha-s2":
        raise AssertionError("{NASTY}")

def test_plain_skip():
    pytest.skip("{NASTY}")

def test_plain_fail():
    raise AssertionError("{NASTY}")
"""


@pytest.mark.usefixtures("tiny", "b200")
def test_control_characters_and_lone_surrogates_keep_every_output_well_formed(pytester: pytest.Pytester) -> None:
    """A lone surrogate once raised in pytest_sessionfinish (no .xml, no .md, a leftover .xml.tmp), and control
    characters made the JUnit file invalid XML."""
    write(pytester, "test_nasty.py", NASTY_TESTS)
    result = pytester.runpytest(*STRICT, "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*specmatrix skip audit*"])
    out = pytester.path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md", "report.xml"]
    data = (out / "report.xml").read_bytes()
    root = ET.fromstring(data)  # strict parsers: both must accept the file
    xml.dom.minidom.parseString(data)
    texts = " ".join((el.get("message") or "") + (el.text or "") for el in root.iter())
    assert "\\x00" in texts and "\\x1b" in texts and "]]>" in texts and "<&>" in texts
    doc = report_of(pytester)
    skip = next(c for c in doc["cells"] if c["cell"] == "alpha-s1")
    assert "\ufffd" in skip["skip_reason"]
    (out / "report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("special", ["fifo", "directory", "devnull"])
@pytest.mark.usefixtures("tiny", "b200")
def test_a_special_report_path_is_a_usage_error_before_any_test_runs(pytester: pytest.Pytester, special: str) -> None:
    """`--matrix-report /dev/full` (as root) once replaced the device node with a regular file."""
    write(pytester, "test_ok.py", "def test_cell(matrix_cell):\n    pass\n")
    if special == "devnull":
        target = Path(os.devnull)
    else:
        target = pytester.path / "special.json"
        os.mkfifo(target) if special == "fifo" else target.mkdir()
    result = pytester.runpytest(*STRICT, "--matrix-report", str(target))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*specmatrix: *not a regular file; refusing to replace it*"])
    assert "Traceback" not in result.stderr.str() and "INTERNALERROR" not in result.stdout.str()
    assert target.is_char_device() if special == "devnull" else (target.is_fifo() if special == "fifo" else target.is_dir())


@pytest.mark.usefixtures("tiny", "b200")
def test_a_binary_select_file_is_one_usage_error(pytester: pytest.Pytester) -> None:
    """`--matrix-select=@binary-file` was an INTERNALERROR."""
    write(pytester, "test_ok.py", "def test_cell(matrix_cell):\n    pass\n")
    (pytester.path / "cells.bin").write_bytes(bytes(range(256)))
    result = pytester.runpytest(*STRICT, "--matrix-select=@cells.bin")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*specmatrix: --matrix-select @cells.bin: not UTF-8 text*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(
    ("select", "message"),
    [
        ("{" * 2000 + "a" + "}" * 2000, "braces nested more than 16 deep"),
        ("{a,b}" * 16, "expands to more than 10,000 patterns"),
    ],
    ids=["deep-braces", "brace-explosion"],
)
@pytest.mark.usefixtures("tiny", "b200")
def test_selector_limits_hold_in_the_plugin(pytester: pytest.Pytester, select: str, message: str) -> None:
    write(pytester, "test_ok.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest(*STRICT, f"--matrix-select={select}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "RecursionError" not in result.stdout.str() + result.stderr.str()


ALWAYS_SKIPS = "import pytest\n\ndef test_cell(matrix_cell):\n    pytest.skip('not here')\n"


@pytest.mark.usefixtures("tiny")
def test_an_unparsable_detected_version_is_an_error_not_expected_skips(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`0.5.23-dirty` once made every version-gated cell an expected skip: `planned 2 = 2 skipped-expected`, exit 0."""
    matrix = pytester.path / "tiny.toml"
    matrix.write_text(
        matrix.read_text(encoding="utf-8")
        + '\n[[rule]]\nid = "new-sglang"\nkind = "library"\nwhen = { backend = { in = ["alpha"] } }\n'
        'versions = { sglang = ">=0.5.23" }\nreason = "fixed in 0.5.23"\nsource = "tests/audit"\n',
        encoding="utf-8",
    )
    write(pytester, "test_skips.py", ALWAYS_SKIPS)
    monkeypatch.setenv("SPECMATRIX_DETECT", '{"gpus":4,"capability":[10,0],"versions":{"sglang":"0.5.23-dirty"}}')
    result = pytester.runpytest(*STRICT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*sglang version '0.5.23-dirty' is not a PEP 440 version*"])
    monkeypatch.setenv("SPECMATRIX_DETECT", '{"gpus":4,"capability":[10,0],"versions":{"sglang":"0.5.23+cu130"}}')
    result = pytester.runpytest(*STRICT, "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert report_of(pytester)["counts"]["skipped-unexpected"] == 2


@pytest.mark.usefixtures("tiny")
def test_a_runner_file_may_replace_a_builtin_profile_only_when_asked(pytester: pytest.Pytester) -> None:
    write(pytester, "test_ok.py", "def test_cell(matrix_cell):\n    pass\n")
    (pytester.path / "mine.toml").write_text('[runner.cpu]\ngpus = 0\nlabels = ["self-hosted"]\n', encoding="utf-8")
    result = pytester.runpytest("--matrix-runner", "cpu", "--matrix-runners", "mine.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*runner 'cpu' is already a built-in profile*--replace-runner cpu*"])
    result = pytester.runpytest(
        "--matrix-runner", "cpu", "--matrix-runners", "mine.toml", "--matrix-replace-runner", "cpu", "--matrix-report", "r.json"
    )
    assert result.ret == pytest.ExitCode.OK
    assert json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["runner"]["labels"] == ["self-hosted"]


@pytest.mark.usefixtures("tiny")
def test_an_unengaged_run_still_audits_a_matrix_module_that_skipped_at_import(pytester: pytest.Pytester) -> None:
    """No option, and the only matrix test sits in a module that skips at import: the dormant plugin must wake."""
    write(
        pytester,
        "test_gone.py",
        "import pytest\npytest.skip('no kernels here', allow_module_level=True)\n\ndef test_cell(matrix_cell):\n    pass\n",
    )
    write(pytester, "test_plain.py", "def test_a():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*specmatrix skip audit*", "planned 4 = 2 skipped-expected + 2 skipped-unexpected"])
