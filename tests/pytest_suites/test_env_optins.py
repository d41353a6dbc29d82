"""An environment variable a test needs that no scheduled job sets: its tests never run, said with the name."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites.audit import PytestAuditReport

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
