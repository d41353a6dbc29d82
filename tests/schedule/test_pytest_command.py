"""pytest command lines and the shell scripts CI steps call, read into selections."""

from __future__ import annotations

import shlex

import pytest

from matrix.schedule.commands.pytest_command import PytestCommandReader, expand, read_script
from matrix.schedule.model import Origin, PytestSelection, StepContext

ORIGIN = Origin(file=".github/workflows/ci.yml", line=10, job="gpu")


def read(command: str, env: dict[str, str] | None = None, working_dir: str = ".") -> list[PytestSelection]:
    context = StepContext(working_dir=working_dir, env=env or {}, origin=ORIGIN)
    found = list(PytestCommandReader().selections(shlex.split(command), context))
    assert all(isinstance(s, PytestSelection) for s in found)
    return found  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("command", "paths", "extra"),
    [
        ("pytest -s tests/attention/test_a.py", ("tests/attention/test_a.py",), {}),
        ("python -m pytest tests/", ("tests",), {}),
        ("python3 -u -m pytest -v tests/x tests/y.py", ("tests/x", "tests/y.py"), {}),
        ("pytest tests/ --ignore=tests/slow --ignore tests/b.py", ("tests",), {"ignore": ("tests/slow", "tests/b.py")}),
        ("pytest tests/ --deselect tests/a.py::test_x", ("tests",), {"deselect": ("tests/a.py::test_x",)}),
        ("pytest tests -k 'not slow' -m gpu", ("tests",), {"keyword": "not slow", "markexpr": "gpu"}),
        ("pytest tests -knightly", ("tests",), {"keyword": "nightly"}),
        ("pytest -x --tb=short -n 4 --junitxml out.xml tests/a.py", ("tests/a.py",), {}),
        ("CUDA_VISIBLE_DEVICES=0 timeout 600 pytest tests/a.py", ("tests/a.py",), {}),
        ("pytest", (".",), {}),
    ],
)
def test_pytest_arguments(command: str, paths: tuple[str, ...], extra: dict[str, object]) -> None:
    (selection,) = read(command)
    assert selection.paths == paths
    for key, value in extra.items():
        assert getattr(selection, key) == value


def test_not_pytest_is_nothing() -> None:
    assert read("python tools/check.py tests/") == []
    assert read("nvidia-smi") == []


def test_working_dir_and_literal_defaults() -> None:
    (selection,) = read("pytest ${TEST_PATH:-tests/} --ignore=kernels/moe", working_dir="tests")
    assert selection.paths == ("tests/tests",)
    (selection,) = read("pytest kernels/core --ignore=kernels/core/test_x.py", working_dir="tests")
    assert selection.paths == ("tests/kernels/core",) and selection.ignore == ("tests/kernels/core/test_x.py",)
    (selection,) = read("pytest ${TEST_PATH:-tests/}")
    assert selection.paths == ("tests",)
    (selection,) = read("pytest ${TEST_PATH:-tests/}", env={"TEST_PATH": "tests/gemm"})
    assert selection.paths == ("tests/gemm",)


def test_shards_from_parallelism_variables() -> None:
    command = "pytest kernels --shard-id=$$BUILDKITE_PARALLEL_JOB --num-shards=$$BUILDKITE_PARALLEL_JOB_COUNT"
    (selection,) = read(command, env={"BUILDKITE_PARALLEL_JOB": "2", "BUILDKITE_PARALLEL_JOB_COUNT": "3"})
    assert selection.shard == (2, 3)


def test_a_variable_without_value_is_refused() -> None:
    from matrix.schedule.commands.pytest_command import UnexpandedVariable

    with pytest.raises(UnexpandedVariable):
        read("pytest $SUITE")
    assert expand("${A-x}${B:-y}$C", {"A": "", "C": "z"}) == "yz"


SCRIPTS = {
    "scripts/part1.sh": """#!/bin/bash
set -eo pipefail
: ${MAX_JOBS:=4}
# pytest tests/commented_out.py
pytest -s tests/a/test_one.py
pytest -s tests/a/test_two.py \\
    --deselect tests/a/test_two.py::test_slow
export SUITE=tests/b
python -m pytest $SUITE && echo done
bash scripts/inner.sh unit
bash scripts/missing.sh
helper() {
  pytest tests/only_in_function.py
}
""",
    "scripts/inner.sh": "pytest tests/c -k 'not multirank'\nbash scripts/inner.sh\n",
}


def test_script_lines_nested_scripts_and_what_is_not_read() -> None:
    context = StepContext(working_dir=".", env={}, origin=ORIGIN)
    result = read_script("scripts/part1.sh", SCRIPTS.get, (PytestCommandReader(),), context)
    selections = [s for s, _ in result.selections]
    paths = [s.paths for s in selections if isinstance(s, PytestSelection)]
    assert paths[:4] == [("tests/a/test_one.py",), ("tests/a/test_two.py",), ("tests/b",), ("tests/c",)]
    two = selections[1]
    assert isinstance(two, PytestSelection) and two.deselect == ("tests/a/test_two.py::test_slow",)
    lines = [origin.line for _, origin in result.selections[:3]]
    assert lines == [5, 6, 9]
    reasons = [why for _, why in result.unread]
    assert "the script is not in the tree" in reasons
    assert any("helper()" in why for why in reasons)
    assert any("runs itself again (scripts/part1.sh -> scripts/inner.sh -> scripts/inner.sh)" in why for why in reasons)
    assert all("only_in_function" not in str(p) for p in paths)
