"""ci/own_skips.py: every skip of this project's own CI run is one of a listed, reasoned set, counted exactly."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.ci_scripts import ci_script

ROOT = Path(__file__).resolve().parents[2]
OWN_SKIPS = ci_script("own_skips")
GROUPS = """
[[group]]
session = "tests*"
tests = "tests/test_kernels.py::*"
reason = '^needs a GPU'
count = 2
why = "the kernels need a GPU; the GPU job runs them"
"""
SUITE = """
import pytest

@pytest.mark.parametrize("n", [1, 2])
def test_kernel(n):
    pytest.skip("needs a GPU")

def test_plain():
    pass
"""


def run_report(pytester: pytest.Pytester, reports: Path, session: str, source: str) -> None:
    """The suite run with the plugin, its report written where SPECMATRIX_SKIP_REPORTS would put it."""
    (pytester.path / "tests").mkdir(exist_ok=True)
    (pytester.path / "tests" / "test_kernels.py").write_text(source, encoding="utf-8")
    reports.mkdir(exist_ok=True)
    pytester.runpytest_subprocess("tests", "-p", "no:cacheprovider", f"--matrix-report={reports / session}.json")


def check(capsys: pytest.CaptureFixture[str], reports: Path, groups: Path) -> tuple[int, str, str]:
    code = OWN_SKIPS.main([str(reports), "--groups", str(groups)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def groups(tmp_path: Path) -> Path:
    path = tmp_path / "own-skips.toml"
    path.write_text(GROUPS, encoding="utf-8")
    return path


def test_listed_skips_counted_exactly_pass(pytester, capsys, tmp_path, groups):
    run_report(pytester, tmp_path / "reports", "tests", SUITE)
    code, out, err = check(capsys, tmp_path / "reports", groups)
    assert (code, err) == (0, "")
    assert "own_skips: 2 skips in sessions tests; 1 groups in own-skips.toml: every skip listed, every count exact" in out


def test_a_new_skip_no_group_lists_fails(pytester, capsys, tmp_path, groups):
    planted = SUITE + "\n@pytest.mark.skip(reason='flaky here')\ndef test_new():\n    pass\n"
    run_report(pytester, tmp_path / "reports", "tests", planted)
    code, _, err = check(capsys, tmp_path / "reports", groups)
    assert code == 1
    assert "tests: tests/test_kernels.py::test_new skipped ('flaky here') and no group lists it" in err


@pytest.mark.parametrize(("cases", "says"), [("[1, 2, 3]", "3 skips, 2 listed: more skip"), ("[1]", "1 skips, 2 listed: lower")])
def test_a_group_that_grew_or_shrank_fails(pytester, capsys, tmp_path, groups, cases, says):
    run_report(pytester, tmp_path / "reports", "tests", SUITE.replace("[1, 2]", cases))
    code, _, err = check(capsys, tmp_path / "reports", groups)
    assert code == 1 and f"(tests*: tests/test_kernels.py::*) in tests: {says}" in err


def test_a_group_holds_in_every_session_it_names(pytester, capsys, tmp_path, groups):
    run_report(pytester, tmp_path / "reports", "tests", SUITE)
    run_report(pytester, tmp_path / "reports", "tests-python-3.12", SUITE.replace("[1, 2]", "[1, 2, 3]"))
    code, _, err = check(capsys, tmp_path / "reports", groups)
    assert code == 1 and "in tests-python-3.12: 3 skips, 2 listed" in err and " in tests: " not in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[group]]\nsession = 'tests'\n", "needs exactly the keys count, reason, session, tests, why"),
        (GROUPS.replace("count = 2", "count = 0"), "count must be a positive integer"),
        (GROUPS.replace("'^needs a GPU'", "'(['"), "reason is not a regular expression"),
        (GROUPS.replace('why = "the kernels need a GPU; the GPU job runs them"', 'why = " "'), "must be non-empty strings"),
        ("[[group]\n", "own-skips.toml: "),
    ],
)
def test_a_bad_groups_file_is_one_line_and_exit_2(capsys, tmp_path, text, message):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "tests.json").write_text("{}", encoding="utf-8")
    bad = tmp_path / "own-skips.toml"
    bad.write_text(text, encoding="utf-8")
    code, _, err = check(capsys, tmp_path / "reports", bad)
    assert code == 2 and err.count("\n") == 1 and err.startswith("own_skips: error: ") and message in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "not a run report"),
        ("{", "tests.json: "),
        (None, "no SESSION.json"),
        ('{"schema": "specmatrix.report-in-progress/1"}', "the session writing this report never finished"),
    ],
)
def test_a_missing_or_bad_report_is_one_line_and_exit_2(capsys, tmp_path, groups, text, message):
    (tmp_path / "reports").mkdir()
    if text is not None:
        (tmp_path / "reports" / "tests.json").write_text(text, encoding="utf-8")
    code, _, err = check(capsys, tmp_path / "reports", groups)
    assert code == 2 and err.count("\n") == 1 and message in err


def test_the_checked_in_groups_parse_and_each_says_why():
    groups = OWN_SKIPS.read_groups(ROOT / "ci" / "own-skips.toml")
    assert groups and all(len(g.why) > 40 for g in groups)
    sessions = {g["session"] for g in tomllib.loads((ROOT / "ci" / "own-skips.toml").read_text(encoding="utf-8"))["group"]}
    assert sessions <= {"*", "tests*", "tests", "integration"} | {s for s in sessions if s.startswith("tests-python-3.")}


def test_the_gpu_cells_are_a_group_of_their_own_counted_from_the_marker():
    """The GPU cells skip on a CPU host by design: a group lists them, and its count is what `-m gpu` collects."""
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/gpu", "-m", "gpu", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    items = [line for line in collected.splitlines() if "::" in line]
    (group,) = [g for g in OWN_SKIPS.read_groups(ROOT / "ci" / "own-skips.toml") if "needs-gpu" in g.reason.pattern]
    assert group.session == "tests*" and group.count == len(items) > 0


def test_ci_runs_the_check_over_the_reports_the_sessions_write():
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'export SPECMATRIX_SKIP_REPORTS="$PWD/.nox/own-skips"' in text
    assert text.index("nox -s workflows") < text.index("nox -s tests\n")  # the linters' tests find them installed
    assert text.index("apt-get install") < text.index("nox -s tests\n")
    assert 'python3 ci/own_skips.py "$SPECMATRIX_SKIP_REPORTS"' in text


def test_the_report_keeps_every_skip_with_its_reason(pytester, tmp_path):
    """What the check reads: the plugin's run report lists each skipped test with its reason (no count inferred)."""
    run_report(pytester, tmp_path / "reports", "tests", SUITE)
    doc = json.loads((tmp_path / "reports" / "tests.json").read_text(encoding="utf-8"))
    assert [s.nodeid for s in OWN_SKIPS.skips_of(doc, "tests", "r")] == [
        "tests/test_kernels.py::test_kernel[1]",
        "tests/test_kernels.py::test_kernel[2]",
    ]


def test_brackets_in_a_node_id_pattern_are_literal(pytester, capsys, tmp_path):
    """A parametrized id carries brackets: `test_kernel[1]` names that case, not a character class."""
    run_report(pytester, tmp_path / "reports", "tests", SUITE)
    exact = tmp_path / "exact.toml"
    exact.write_text(GROUPS.replace('"tests/test_kernels.py::*"', '"tests/test_kernels.py::test_kernel[1]"').replace("2", "1"))
    code, _, err = check(capsys, tmp_path / "reports", exact)
    assert code == 1 and err.count("\n") == 1 and "test_kernel[2] skipped" in err
