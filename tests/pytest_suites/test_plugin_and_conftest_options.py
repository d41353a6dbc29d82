"""Options of pytest plugins, of specmatrix's own plugin and of the checkout's conftest files: their values are never
test paths, and a command using them is read as pytest reads it (pytest's parser with the options registered)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport
from matrix.schedule.commands.pytest_command import parse_pytest_arguments

Audit = Callable[..., PytestAuditReport]
# Tests that run: a value read as a path would leave "runs" uncertain (undetermined), never a finding.
FILES = {
    "checks/test_alpha.py": "def test_one():\n    pass\n",
    "checks/test_beta.py": "def test_two():\n    pass\n",
}
BOTH = {"checks/test_alpha.py::test_one", "checks/test_beta.py::test_two"}
ALPHA = {"checks/test_alpha.py::test_one"}
OPTIONS_HOOK = """
def pytest_addoption(parser):
    parser.addoption("--run-perf", action="store_true", default=False)
    parser.addoption("--torch_ver", default="2.6")
    extra = parser.getgroup("extra")
    extra.addoption("--sizes", nargs="+")
"""


def _entry(command: str) -> str:
    return f'[[entry]]\njob = "j"\nlabels = ["1-gpu-h100"]\npytest = {command!r}\n'


def _decided(report: PytestAuditReport) -> tuple[int, int]:
    """(tests scheduled, of which undetermined)."""
    assert not report.findings or {f.finding.kind for f in report.findings} == {GuardFindingKind.UNSCHEDULED}
    return report.scheduled_tests, report.undetermined


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        pytest.param("pytest -n 4 checks/test_alpha.py", ALPHA, id="xdist-n"),
        pytest.param("pytest --reruns 2 --reruns-delay 5 checks/test_alpha.py", ALPHA, id="rerunfailures"),
        pytest.param("pytest --cov src --cov-report term checks/test_alpha.py", ALPHA, id="cov-with-value"),
        # argparse gives an optional value the next word that is not an option: the path is --cov's source, and
        # pytest runs its rootdir (both files)
        pytest.param("pytest --cov checks/test_alpha.py", BOTH, id="cov-takes-the-path"),
        pytest.param("pytest checks/test_alpha.py --cov", ALPHA, id="cov-without-value"),
        pytest.param("pytest --timeout=60 --timeout-method thread checks/test_alpha.py", ALPHA, id="timeout"),
        pytest.param("pytest --max-worker-restart 1 --dist loadfile checks/test_alpha.py", ALPHA, id="xdist-dist"),
        pytest.param("pytest --count 3 --repeat-scope module checks/test_alpha.py", ALPHA, id="repeat"),
        pytest.param("pytest --random-order-bucket global checks/test_alpha.py", ALPHA, id="random-order"),
        pytest.param("pytest --asyncio-mode auto checks/test_alpha.py", ALPHA, id="asyncio"),
        pytest.param("pytest --json-report-omit log keywords --html out.html checks/test_alpha.py", ALPHA, id="json-report-many"),
        pytest.param("pytest --matrix-runner a10g --matrix-report out/a.json checks/test_alpha.py", ALPHA, id="own-plugin"),
        pytest.param(
            "pytest --matrix-select 'backend=x' --matrix-run-expected-skips checks/test_alpha.py", ALPHA, id="own-switch"
        ),
    ],
)
def test_a_plugin_option_takes_its_values(audit: Audit, command: str, runs: set[str]) -> None:
    report = audit(FILES, _entry(command))
    assert _decided(report) == (len(runs), 0)


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        pytest.param("pytest --torch_ver 2.7 checks/test_alpha.py", ALPHA, id="valued"),
        pytest.param("pytest --torch_ver=2.7 --run-perf checks/test_alpha.py", ALPHA, id="switch"),
        pytest.param("pytest --run-perf checks/test_alpha.py", ALPHA, id="switch-before-path"),
        pytest.param("pytest --sizes 1 2 3 --run-perf checks/test_alpha.py", ALPHA, id="group-option-many-values"),
    ],
)
def test_a_conftest_option_takes_its_values(audit: Audit, command: str, runs: set[str]) -> None:
    report = audit({**FILES, "conftest.py": OPTIONS_HOOK}, _entry(command))
    assert _decided(report) == (len(runs), 0)


@pytest.mark.parametrize(
    ("conftest", "undetermined"), [pytest.param(OPTIONS_HOOK, 0, id="declared"), pytest.param("", 1, id="not")]
)
def test_an_option_no_conftest_declares_stays_a_doubt(audit: Audit, conftest: str, undetermined: int) -> None:
    # A test that runs: with the option unknown, `2.7` may be a path, so "runs" is not certain.
    files = {"checks/test_gamma.py": "def test_three():\n    pass\n", "conftest.py": conftest}
    report = audit(files, _entry("pytest --torch_ver 2.7 checks/test_gamma.py"))
    assert report.undetermined == undetermined


def test_a_table_option_of_a_plugin_not_known_installed_is_said(audit: Audit) -> None:
    report = audit(FILES, _entry("pytest -n 4 checks/test_alpha.py"))
    assert any(a.startswith("-n read as an option of pytest-xdist") for a in report.assumptions)


@pytest.mark.parametrize(
    ("words", "paths"),
    [
        pytest.param(["tests/gpu", "--matrix-runner", "a10g", "--matrix-report", "out/a.json"], ("tests/gpu",), id="own"),
        pytest.param(["-n", "4", "--cov", "--cov-report", "xml", "t"], ("t",), id="cov-no-value"),
        pytest.param(["--cov", "src", "t"], ("t",), id="cov-value"),
        pytest.param(["--reruns", "2", "--only-rerun", "Timeout", "t"], ("t",), id="reruns"),
        pytest.param(["-n4", "t"], ("t",), id="short-attached"),
    ],
)
def test_the_schedule_reader_keeps_option_values_out_of_paths(words: list[str], paths: tuple[str, ...]) -> None:
    assert parse_pytest_arguments(words, ".").paths == paths


def test_a_plugin_the_job_installs_is_no_assumption(audit: Audit) -> None:
    workflow = (
        "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/setup-python@v5\n      - run: pip install pytest pytest-xdist\n"
        "      - run: pytest -n 4 --reruns 2 checks/test_alpha.py\n"
    )
    report = audit({**FILES, ".github/workflows/ci.yml": workflow})
    assert _decided(report) == (1, 0)
    notes = [a for a in report.assumptions if " read as " in a]
    assert notes == [
        "--reruns read as an option of pytest-rerunfailures (pytest-rerunfailures 16.7 wheel, pytest_rerunfailures.py, "
        "pytest_addoption): the job does not name it in its installs"
    ]
