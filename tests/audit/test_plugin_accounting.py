"""Accounting: every planned item gets exactly one status, whatever happens to the run (crashes, -x, xdist)."""

from __future__ import annotations

import pytest

from .conftest import ALPHA, BETA, STRICT, by_cell, literal, report_of, statuses, write

MIXED = """
import pytest

def test_cell(matrix_cell):
    assert matrix_cell.size == 1, "size 2 is broken"

@pytest.mark.matrix(select="alpha-*")
def test_skips(matrix_cell):
    pytest.skip("not today")

def test_plain():
    pass

@pytest.mark.skip(reason="ordinary skip")
def test_plain_skip():
    pass
"""


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_xdist_and_local_runs_account_identically(pytester: pytest.Pytester) -> None:
    write(pytester, "test_mixed.py", MIXED)
    pytester.runpytest(*STRICT, "--matrix-report", "out/local.json")
    pytester.runpytest(*STRICT, "-n", "2", "--matrix-report", "out/xdist.json")
    local, xdist = report_of(pytester, "out/local.json"), report_of(pytester, "out/xdist.json")
    assert statuses(local) == statuses(xdist)
    assert (
        local["counts"]
        == xdist["counts"]
        == {
            "passed": 1,
            "failed": 1,
            "error": 0,
            "skipped-expected": 2,
            "skipped-unexpected": 2,
            "crashed": 0,
            "not-run": 0,
        }
    )
    assert {o["nodeid"]: o["status"] for o in xdist["outside"]} == {
        "test_mixed.py::test_plain": "passed",
        "test_mixed.py::test_plain_skip": "skipped",
    }
    assert {c["worker"] for c in xdist["cells"] if c["status"] != "skipped-expected"} <= {"gw0", "gw1"}
    failed = next(c for c in local["cells"] if c["status"] == "failed")
    assert "size 2 is broken" in failed["message"]


CRASHY = """
import os

def test_cell(matrix_cell):
    if matrix_cell.id == "alpha-s1":
        os._exit(3)  # what a CUDA abort or a segfault looks like from the outside
"""


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_a_dead_worker_leaves_crashed_and_not_run_items(pytester: pytest.Pytester) -> None:
    write(pytester, "test_crash.py", CRASHY)
    result = pytester.runpytest(*STRICT, "-n", "1", "--max-worker-restart", "0", "--matrix-report", "out/report.json")
    assert result.ret != 0
    doc = report_of(pytester)
    assert by_cell(doc) == {"alpha-s1": "crashed", "alpha-s2": "not-run", "beta-s1": "not-run", "beta-s2": "not-run"}
    crashed = next(c for c in doc["cells"] if c["status"] == "crashed")
    assert "worker 'gw0' crashed while running 'test_crash.py::test_cell[alpha-s1]'" in crashed["message"]
    assert "worker error" in crashed["message"]
    assert {f["kind"] for f in doc["findings"]} == {"crashed", "not-run"}
    result.stdout.fnmatch_lines([f"CRASHED {literal('test_crash.py::test_cell[alpha-s1]')}: *", "NOT RUN *"])


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_a_restarted_worker_runs_the_rest(pytester: pytest.Pytester) -> None:
    write(pytester, "test_crash.py", CRASHY)
    # One worker: with a second one alive it, not the replacement, could run the rest.
    result = pytester.runpytest(*STRICT, "-n", "1", "--max-worker-restart", "3", "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = report_of(pytester)
    assert by_cell(doc) == {
        "alpha-s1": "crashed",
        "alpha-s2": "passed",
        "beta-s1": "skipped-expected",
        "beta-s2": "skipped-expected",
    }
    workers = {c["cell"]: c["worker"] for c in doc["cells"] if c["status"] != "skipped-expected"}
    assert workers == {"alpha-s1": "gw0", "alpha-s2": "gw1"}  # gw1: the replacement xdist started for gw0


@pytest.mark.usefixtures("tiny", "b200")
def test_stopping_early_leaves_not_run_items(pytester: pytest.Pytester) -> None:
    write(pytester, "test_stop.py", "def test_cell(matrix_cell):\n    assert False\n")
    result = pytester.runpytest(*STRICT, "-x", "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert by_cell(report_of(pytester)) == {
        "alpha-s1": "failed",
        "alpha-s2": "not-run",
        "beta-s1": "not-run",
        "beta-s2": "not-run",
    }


@pytest.mark.parametrize(
    ("body", "status", "finding", "ret"),
    [
        pytest.param("pass", "passed", "rule-too-strict", pytest.ExitCode.OK, id="rule-too-strict"),
        pytest.param(
            "assert matrix_cell.backend == 'alpha'", "failed", "guard-missing", pytest.ExitCode.TESTS_FAILED, id="guard-missing"
        ),
    ],
)
@pytest.mark.usefixtures("tiny", "b200")
def test_running_expected_skips_checks_the_rules(
    pytester: pytest.Pytester, body: str, status: str, finding: str, ret: pytest.ExitCode
) -> None:
    write(pytester, "test_rules.py", f"def test_cell(matrix_cell):\n    {body}\n")
    result = pytester.runpytest(*STRICT, "--matrix-run-expected-skips", "--matrix-report", "out/report.json")
    assert result.ret == ret
    doc = report_of(pytester)
    assert by_cell(doc) == dict.fromkeys(ALPHA, "passed") | dict.fromkeys(BETA, status)
    assert [(f["kind"], f["subject"].split("[")[1]) for f in doc["findings"]] == [(finding, f"{c}]") for c in BETA]
    assert all("beta-hopper" in f["message"] for f in doc["findings"])


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.parametrize("xdist", [False, True], ids=["local", "xdist"])
@pytest.mark.usefixtures("tiny", "b200")
def test_compile_and_setup_seconds_reach_the_report(pytester: pytest.Pytester, xdist: bool) -> None:
    write(
        pytester,
        "test_timing.py",
        """
        import pytest

        @pytest.mark.matrix(select="alpha-s1")
        def test_fixture(matrix_cell, matrix_timing):
            matrix_timing.record("compile_seconds", 8.0)
            matrix_timing.record("compile_seconds", 0.5)
            with matrix_timing.setup():
                pass

        @pytest.mark.matrix(select="alpha-s2")
        def test_properties(matrix_cell, request):
            request.node.user_properties.append(("setup_seconds", 2.5))
        """,
    )
    extra = ("-n", "1") if xdist else ()  # one worker already sends every recorded second through the controller
    pytester.runpytest(*STRICT, *extra, "--matrix-report", "out/report.json").assert_outcomes(passed=2)
    cells = {c["cell"]: c for c in report_of(pytester)["cells"]}
    assert cells["alpha-s1"]["compile_seconds"] == 8.5
    assert 0 <= cells["alpha-s1"]["setup_seconds"] < 1
    assert cells["alpha-s2"]["compile_seconds"] is None
    assert cells["alpha-s2"]["setup_seconds"] == 2.5
    assert all(c["duration"] > 0 for c in cells.values())


@pytest.mark.usefixtures("tiny", "b200")
def test_a_module_that_fails_to_import_accounts_its_cells_as_errors(pytester: pytest.Pytester) -> None:
    write(pytester, "test_broken.py", "import no_such_module_xyz\n\ndef test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest(*STRICT, "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    doc = report_of(pytester)
    assert by_cell(doc) == dict.fromkeys((*ALPHA, *BETA), "error")
    assert all("No module named 'no_such_module_xyz'" in c["message"] for c in doc["cells"])


LOOKALIKE = """
import pytest

@pytest.mark.parametrize("name", ["alpha-s1", "x-beta-s2"])
def test_lookalike(name):
    pass
"""


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.parametrize("named", [False, True], ids=["lazy", "runner-named"])
@pytest.mark.usefixtures("tiny", "b200")
def test_an_ordinary_test_whose_id_looks_like_a_cell_is_not_planned(pytester: pytest.Pytester, named: bool) -> None:
    write(pytester, "test_look.py", LOOKALIKE)
    # Named: both workers' collections list the look-alikes; lazy: one worker already shows the audit staying off.
    args = (*STRICT, "-n", "2", "--matrix-report", "out/report.json") if named else ("-n", "1")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=2)
    if not named:
        assert "specmatrix skip audit" not in result.stdout.str()  # no matrix test anywhere: the audit stays off
        return
    doc = report_of(pytester)
    assert doc["planned"] == 0
    assert sorted(o["nodeid"] for o in doc["outside"]) == [
        "test_look.py::test_lookalike[alpha-s1]",
        "test_look.py::test_lookalike[x-beta-s2]",
    ]


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny")
def test_a_controller_with_no_runner_named_engages_on_the_first_matrix_report(pytester: pytest.Pytester) -> None:
    write(pytester, "test_lazy.py", MIXED)
    result = pytester.runpytest("-n", "2")  # cpu machine, runner auto: alpha must run, beta is an expected skip
    result.stdout.fnmatch_lines(["runner cpu *", "planned 6 = 1 passed + 1 failed + 2 skipped-expected + 2 skipped-unexpected"])


ORDINARY_FIRST = """
import pytest

@pytest.mark.parametrize("name", ["alpha-s1", "beta-s2"])
def test_a_ordinary(name):
    assert name
"""


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_ordinary_ids_that_spell_cells_reported_before_the_audit_engages_are_not_planned(pytester: pytest.Pytester) -> None:
    """No runner named: the audit engages at the first matrix item, after the look-alikes already reported."""
    write(pytester, "test_a_lookalike.py", ORDINARY_FIRST)
    write(pytester, "test_b_cells.py", "def test_cell(matrix_cell):\n    pass\n")
    result = pytester.runpytest("-n", "1")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["planned 4 = 2 passed + 2 skipped-expected"])
    result.stdout.no_fnmatch_line("NOT RUN*")
