"""A test file or conftest.py that does not parse: pytest reports a collection error and, without
`--continue-on-collection-errors`, runs no test of that command; a conftest it loads at startup stops it even with it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport
from tests.pytest_suites.test_pytest_oracle import Case, check

PLAIN = "def test_{0}():\n    pass\n"
BROKEN = "import pytest\n\nHOLD = (\n"

TREES = {
    "sub-conftest": {
        "tests/test_near.py": PLAIN.format("near"),
        "tests/deep/test_far.py": PLAIN.format("far"),
        "tests/deep/conftest.py": BROKEN,
        "elsewhere/test_apart.py": PLAIN.format("apart"),
    },
    "startup-conftest": {
        "tests/test_near.py": PLAIN.format("near"),
        "tests/conftest.py": BROKEN,
        "elsewhere/test_apart.py": PLAIN.format("apart"),
    },
    "test-file": {
        "tests/test_near.py": PLAIN.format("near"),
        "tests/test_torn.py": "def test_torn(:\n    pass\n",
        "elsewhere/test_apart.py": PLAIN.format("apart"),
    },
}
COMMANDS = [
    "pytest",
    "pytest tests",
    "pytest tests -k near",
    "pytest tests --continue-on-collection-errors",
    "pytest --continue-on-collection-errors",
    "pytest elsewhere",
    "pytest tests/test_near.py",
    "pytest tests/deep/test_far.py --continue-on-collection-errors",
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("tree", sorted(TREES))
def test_collection_errors_agree_with_pytest(tree: str, command: str, tmp_path: Path, oracle_stub: Path) -> None:
    if "deep" in command and "tests/deep/test_far.py" not in TREES[tree]:
        pytest.skip("the command names a file this tree lacks")
    check(Case(files=TREES[tree], command=command), tmp_path, oracle_stub)


def test_a_conftest_that_does_not_parse_is_a_finding_and_its_tests_do_not_run(
    audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]
) -> None:
    report = audit(TREES["sub-conftest"], schedule(("1-gpu-h100", "pytest tests")))
    (broken,) = report.of_kind(GuardFindingKind.UNPARSABLE)
    assert broken.finding.scope == "tests/deep/conftest.py"
    assert "line 3" in broken.finding.message and broken.finding.line == 3
    assert any("tests/deep/conftest.py" in a and "runs no test" in a for a in report.assumptions)
    assert report.scheduled_tests == 0
    # Selected by the command, which stops first: never runs (not "no CI entry selects it").
    stopped = {f.finding.scope: f.finding.message for f in report.of_kind(GuardFindingKind.NEVER_RUNS)}
    assert sorted(stopped) == ["tests/deep/test_far.py", "tests/test_near.py"]
    assert all("tests/deep/conftest.py does not parse" in m for m in stopped.values())
    assert [f.finding.scope for f in report.of_kind(GuardFindingKind.UNSCHEDULED)] == ["elsewhere/test_apart.py"]


def test_a_test_file_that_does_not_parse_stops_the_commands_that_collect_it(
    audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]
) -> None:
    plan = schedule(("1-gpu-h100", "pytest tests"), ("2-gpu-h100", "pytest elsewhere"))
    report = audit(TREES["test-file"], plan)
    assert [f.finding.scope for f in report.of_kind(GuardFindingKind.UNPARSABLE)] == ["tests/test_torn.py"]
    # pytest stops on the collection error before running anything: the other file of that command never runs.
    stopped = {f.finding.scope: f.finding.message for f in report.of_kind(GuardFindingKind.NEVER_RUNS)}
    assert list(stopped) == ["tests/test_near.py"]
    assert "tests/test_torn.py does not parse" in stopped["tests/test_near.py"]
    assert report.scheduled_tests == 1  # elsewhere/test_apart.py, run by the other command
