"""Each reader construct with its support switched off: the fixture's expectation must then fail."""

from __future__ import annotations

import shlex

import pytest
import yaml

from matrix.core.runner_files import load_runners
from matrix.schedule.commands import pytest_command
from matrix.schedule.commands.pytest_command import PytestCommandReader, read_script
from matrix.schedule.model import Gate, Origin, PytestSelection, StepContext
from matrix.schedule.services import buildkite

CONTEXT = StepContext(working_dir=".", env={}, origin=Origin(file="ci.yml", line=1, job="j"))
STEP = """
steps:
- key: sharded
  device: l4
  parallelism: 2
  optional: true
  working_dir: /vllm-workspace/tests
  commands:
    - pytest kernels --shard-id=$$BUILDKITE_PARALLEL_JOB --num-shards=$$BUILDKITE_PARALLEL_JOB_COUNT
"""


def _script_paths() -> list[tuple[str, ...]]:
    scripts = {"a.sh": "bash b.sh\n", "b.sh": "pytest tests/b.py\n"}
    result = read_script("a.sh", scripts.get, (PytestCommandReader(),), CONTEXT)
    return [s.paths for s, _ in result.selections if isinstance(s, PytestSelection)]


def _default_paths() -> tuple[str, ...]:
    (selection,) = PytestCommandReader().selections(shlex.split("pytest ${TEST_PATH:-tests/}"), CONTEXT)
    assert isinstance(selection, PytestSelection)
    return selection.paths


def _step() -> list[tuple[tuple[str, ...], tuple[int, int] | None, tuple[Gate, ...]]]:
    schedule = buildkite.read_test_area(yaml.safe_load(STEP), "k.yaml", load_runners(), (PytestCommandReader(),))
    return sorted((e.selection.paths, e.selection.shard, e.gates) for e in schedule.entries)  # type: ignore[union-attr]


SHARDED = [
    (("tests/kernels",), (0, 2), (Gate.SCHEDULE, Gate.MANUAL)),
    (("tests/kernels",), (1, 2), (Gate.SCHEDULE, Gate.MANUAL)),
]


def test_with_support() -> None:
    assert _script_paths() == [("tests/b.py",)]
    assert _default_paths() == ("tests",)
    assert _step() == SHARDED


@pytest.mark.parametrize(
    ("construct", "switch_off"),
    [
        ("nested script", lambda m: m.setattr(pytest_command, "_called_script", lambda words, wd: None)),
        ("literal default", lambda m: m.setattr(pytest_command, "_VARIABLE", pytest_command.re.compile(r"(?!x)x"))),
        ("parallelism", lambda m: m.setattr(buildkite, "MAX_PARALLELISM", 1)),
        ("working_dir", lambda m: m.setattr(buildkite, "repo_dir", lambda wd: ".")),
        (
            "optional",
            lambda m: m.setattr(
                buildkite, "Gate", type("G", (), {"SCHEDULE": Gate.ALWAYS, "MANUAL": Gate.ALWAYS, "ALWAYS": Gate.ALWAYS})
            ),
        ),
    ],
)
def test_without_support(construct: str, switch_off: object, monkeypatch: pytest.MonkeyPatch) -> None:
    assert callable(switch_off)
    switch_off(monkeypatch)
    observed = {"nested script": _script_paths, "literal default": _default_paths}.get(construct, _step)()
    expected = {"nested script": [("tests/b.py",)], "literal default": ("tests",)}.get(construct, SHARDED)
    assert observed != expected
