"""The Python version of a job's interpreter, read from the steps that make it (`JobEnvironment.python`)."""

from __future__ import annotations

import pytest

from matrix.schedule.environment.build import environment_of
from matrix.schedule.environment.images import dockerfile_steps
from matrix.schedule.environment.installs import fresh_python, install_step
from matrix.schedule.environment.model import InstallStep, environment_fields, environment_of_fields


def _python(steps: list[InstallStep]) -> str:
    return environment_of(steps, lambda path: None).python


def _steps(*lines: str) -> list[InstallStep]:
    found = [install_step(line.split()) for line in lines]
    assert all(s is not None for s in found)
    return [s for s in found if s is not None]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param([fresh_python("uses: actions/setup-python@v5", "3.11")], "3.11", id="setup-python"),
        pytest.param([fresh_python("uses: actions/setup-python@v5", "3.x")], "", id="setup-python-range"),
        pytest.param(_steps("conda create -n ci python=3.9 numpy -y", "conda activate ci"), "3.9", id="conda"),
        pytest.param(_steps("conda create --name=ci python==3.12 -y", "conda activate ci"), "3.12", id="conda-long"),
        pytest.param(_steps("conda create -n ci python=3.9 -y"), "", id="conda-not-entered"),
        pytest.param(_steps("conda create -n ci python=3.9 -y", "conda activate ci", "python -m venv v"), "", id="then-venv"),
        pytest.param(list(dockerfile_steps("FROM python:3.12-slim\nRUN pip install pyyaml\n", "Dockerfile")), "3.12", id="image"),
    ],
)
def test_the_jobs_python(steps: list[InstallStep], expected: str) -> None:
    assert _python(steps) == expected


def test_the_python_version_survives_the_schedule_cache() -> None:
    environment = environment_of([fresh_python("uses: actions/setup-python@v5", "3.10")], lambda path: None)
    assert environment_of_fields(environment_fields(environment)) == environment
