"""An environment variable a test needs that no scheduled job sets: its tests never run, said with the name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from matrix.pytest_suites.audit import ItemOutcome, PytestAuditReport
from tests.pytest_suites.test_uncertain_guards import outcomes

Skipping = Callable[[PytestAuditReport], dict[str, str]]

MODULE_LEVEL = """
import os
import pytest
_OPTED_IN = os.environ.get("KIT_BACKEND", "").strip().lower() == "tiles"
@pytest.mark.skipif(not _OPTED_IN, reason="needs KIT_BACKEND=tiles")
def test_it():
    pass
"""
IN_THE_BODY = """
import os
import pytest
def test_it():
    if os.getenv("KIT_BACKEND") != "tiles":
        pytest.skip("opt-in")
"""


@pytest.mark.parametrize("text", [MODULE_LEVEL, IN_THE_BODY], ids=["module-level", "body"])
def test_an_opt_in_no_job_sets_never_runs(
    text: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    report = audit({"tests/test_case.py": text}, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {"tests/test_case.py::test_it": "environment"}
    (finding,) = [f.finding for f in report.findings if f.finding.scope == "tests/test_case.py::test_it"]
    assert "KIT_BACKEND" in finding.message


@pytest.mark.parametrize("text", [MODULE_LEVEL, IN_THE_BODY], ids=["module-level", "body"])
def test_a_job_that_sets_it_runs_the_test(
    text: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    plan = schedule(("1-gpu-h100", "pytest tests/"), env='env = { KIT_BACKEND = "tiles" }')
    report = audit({"tests/test_case.py": text}, plan)
    assert skipping(report) == {}
    assert report.undetermined == 0


def test_a_variable_a_ci_file_mentions_is_undetermined(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    workflow = """
    name: ci
    on: [push]
    jobs:
      lint:
        runs-on: ubuntu-latest
        steps:
          - run: echo "$KIT_BACKEND"
    """
    files = {"tests/test_case.py": MODULE_LEVEL, ".github/workflows/ci.yml": workflow}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {}
    assert report.undetermined == 1


CONTAINER_JOB = """
name: ci
on: [push]
jobs:
  gpu:
    runs-on: 1-gpu-h100
    env:
      KIT_BACKEND: tiles
    steps:
      - run: docker build -t kit-img -f ci/kit.Dockerfile .
      - run: docker run -d --name kit-box kit-img sleep infinity
      - run: docker exec {options} kit-box pytest tests/
"""


@pytest.mark.parametrize(
    ("options", "dockerfile", "outcome"),
    [
        ("", "FROM debian:12\n", "skips"),  # the job's env stays outside the container
        ("-e KIT_BACKEND=tiles", "FROM debian:12\n", "runs"),
        ("", "FROM debian:12\nENV KIT_BACKEND=tiles\n", "runs"),
        ("--env-file kit.env", "FROM debian:12\n", "undetermined"),
    ],
)
def test_in_a_container_only_what_it_is_given_counts(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, options: str, dockerfile: str, outcome: str
) -> None:
    files = {
        "tests/test_case.py": MODULE_LEVEL,
        ".github/workflows/ci.yml": CONTAINER_JOB.format(options=options),
        "ci/kit.Dockerfile": dockerfile,
    }
    report = audit(files)
    got = "skips" if skipping(report) else "undetermined" if report.undetermined else "runs"
    assert got == outcome


OPT_IN_BODY = """
import os
import pytest


@pytest.mark.skipif(os.environ.get("TILE_IMPL", "") != "tile", reason="opt-in")
def test_opted():
    pass
"""
SETS_IT = {
    "conftest-setdefault": {"tests/conftest.py": "import os\n\nos.environ.setdefault('TILE_IMPL', 'tile')\n"},
    "conftest-item": {"tests/conftest.py": "import os\n\nos.environ['TILE_IMPL'] = 'tile'\n"},
    "conftest-update": {"tests/conftest.py": "import os\n\nos.environ.update({'TILE_IMPL': 'tile', 'OTHER': '1'})\n"},
    "pytest-env-ini": {"pytest.ini": "[pytest]\nenv =\n    D:TILE_IMPL=tile\n"},
    "the-module-itself": {"tests/test_self.py": "import os\n\nos.environ['TILE_IMPL'] = 'tile'\n"},
}


@pytest.mark.parametrize("extra", list(SETS_IT.values()), ids=list(SETS_IT))
def test_a_variable_the_suite_sets_itself_is_not_an_unset_opt_in(tmp_path: Path, extra: dict[str, str]) -> None:
    """The conftest (imported before the test modules), the module itself or pytest-env's `env` option may set it:
    the opt-in is undetermined, not a certain skip."""
    files = {"tests/test_self.py": "", **extra}
    files["tests/test_self.py"] = files["tests/test_self.py"] + OPT_IN_BODY
    found = outcomes(tmp_path, files)
    assert found["tests/test_self.py::test_opted"] is ItemOutcome.UNDETERMINED


def test_a_conftest_of_another_folder_does_not_count(tmp_path: Path) -> None:
    files = {"other/conftest.py": "import os\n\nos.environ['TILE_IMPL'] = 'tile'\n", "tests/test_self.py": OPT_IN_BODY}
    assert outcomes(tmp_path, files)["tests/test_self.py::test_opted"] is ItemOutcome.SKIPS


def test_the_spellings_of_a_write() -> None:
    from matrix.guards.env_writes import ini_env_names, written_names

    text = (
        "import os\nos.environ['A'] = '1'\nos.environ.setdefault(\"B\", '1')\nos.putenv('C', '1')\n"
        "monkeypatch.setenv('D', '1')\nos.environ.update({'E': '1'}, F='2')\nif os.environ['G'] == '1':\n    pass\n"
    )
    assert written_names(text) == frozenset("ABCDEF")
    assert ini_env_names("\n  X=1\n  D:Y=2\n  R:Z=3\n  not a line\n") == ("X", "Y", "Z")
    assert ini_env_names(["W=1"]) == ("W",)
