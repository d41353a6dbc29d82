"""A step that runs a test file as a script (`python tests/test_x.py`) or `python -m unittest` is read or listed as
unread with its reason, never dropped: a file whose `__main__` block calls `pytest.main([__file__])` or
`unittest.main()` is scheduled; anything else is unread (bounded to the file where only the file can run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.schedule.commands.python_scripts import main_block, python_run, unittest_reach

WITH_PYTEST_MAIN = (
    'import pytest\n\ndef test_alpha():\n    pass\n\nif __name__ == "__main__":\n    pytest.main([__file__, "-q"])\n'
)
WITH_UNITTEST_MAIN = (
    "import unittest\n\nclass TestBeta(unittest.TestCase):\n    def test_beta(self):\n        pass\n\n"
    'if __name__ == "__main__":\n    unittest.main(verbosity=2)\n'
)
WITHOUT_MAIN = "def test_gamma():\n    pass\n"
COMPUTED_MAIN = (
    "import sys\nimport pytest\n\ndef test_delta():\n    pass\n\n"
    'if __name__ == "__main__":\n    pytest.main(["-k", sys.argv[2], __file__])\n'
)
PLAIN = "def test_plain():\n    pass\n"
STEP = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - run: {command}
"""


def repo(tmp_path: Path, command: str, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(STEP.format(command=command), encoding="utf-8")
    for name, text in {**files, "tests/other/test_far.py": PLAIN}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def schedule(root: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["schedule", str(root), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def audit(root: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("command", "text", "how"),
    [
        ("python tests/unit/test_alpha.py", WITH_PYTEST_MAIN, "pytest.main"),
        ("python3 -u -W error tests/unit/test_alpha.py", WITH_PYTEST_MAIN, "pytest.main"),
        ("cd tests/unit && python test_alpha.py", WITH_PYTEST_MAIN, "pytest.main"),
        ("python tests/unit/test_alpha.py", WITH_UNITTEST_MAIN, "unittest.main"),
    ],
)
def test_a_test_file_whose_main_block_runs_it_is_scheduled(tmp_path, capsys, command, text, how):
    root = repo(tmp_path, command, {"tests/unit/test_alpha.py": text})
    doc = schedule(root, capsys)
    assert [e["selection"]["paths"] for e in doc["entries"]] == [["tests/unit/test_alpha.py"]]
    assert any(how in a for a in doc["entries"][0]["assumptions"])
    assert doc["unread"] == []
    report = audit(root, capsys)
    assert report["scheduled_tests"] == 1
    assert {f["path"] for f in report["findings"] if f["kind"] == "unscheduled"} == {"tests/other/test_far.py"}


@pytest.mark.parametrize(
    ("command", "text", "reach"),
    [
        ("python tests/unit/test_alpha.py", WITHOUT_MAIN, ["tests/unit/test_alpha.py"]),
        ("python tests/unit/test_alpha.py", COMPUTED_MAIN, None),
        ("python -m unittest discover -s tests/unit", WITHOUT_MAIN, ["tests/unit"]),
        ("python -m unittest tests.unit.test_alpha", WITHOUT_MAIN, ["tests"]),
        ("python -m unittest", WITHOUT_MAIN, None),
    ],
)
def test_a_test_file_or_unittest_run_not_read_is_unread_with_its_reach(tmp_path, capsys, command, text, reach):
    root = repo(tmp_path, command, {"tests/unit/test_alpha.py": text})
    doc = schedule(root, capsys)
    assert doc["entries"] == []
    assert [u.get("reach") for u in doc["unread"]] == [reach]
    report = audit(root, capsys)
    far = {f["path"] for f in report["findings"] if f["kind"] == "unscheduled"}
    # A test outside every unread entry's reach keeps what was read (nothing runs it); inside, it is undetermined.
    assert far == ({"tests/other/test_far.py"} if reach is not None and reach != ["tests"] else set())
    assert "tests/unit/test_alpha.py" not in far


def test_a_script_that_is_not_a_test_file_is_not_listed(tmp_path, capsys):
    root = repo(tmp_path, "python tools/make_test_data.py", {"tools/make_test_data.py": "print(1)\n"})
    doc = schedule(root, capsys)
    assert doc["entries"] == [] and doc["unread"] == []


@pytest.mark.parametrize(
    ("words", "script", "unittest"),
    [
        (["python", "tests/test_a.py"], "tests/test_a.py", False),
        (["python3.11", "-X", "dev", "t/test_a.py", "--flag"], "t/test_a.py", False),
        (["python", "-m", "unittest", "-v"], "", True),
        (["python", "-Bmunittest"], "", True),
        (["python", "-c", "import x", "a"], "", False),
    ],
)
def test_python_run_reads_the_script_or_unittest(words, script, unittest):
    run = python_run(words)
    assert run is not None and run.script == script and run.unittest is unittest
    assert run.code == ("import x" if "-c" in words else None)


@pytest.mark.parametrize("words", [["python", "-m", "pytest", "tests"], ["python3", "-mpytest"], ["pythonic", "x.py"]])
def test_python_run_leaves_other_commands(words):
    assert python_run(words) is None


def test_main_block_reads_only_a_clear_runner():
    assert main_block(WITH_PYTEST_MAIN, "t/test_a.py").pytest_arguments == ("t/test_a.py", "-q")
    assert main_block(WITH_UNITTEST_MAIN, "t/test_a.py").unittest
    assert "not a literal list" in main_block(COMPUTED_MAIN, "t/test_a.py").unread
    mixed = WITH_UNITTEST_MAIN + "\ndef test_loose():\n    pass\n"
    assert main_block(mixed, "t/test_a.py").bounded  # unittest.main does not run test_loose


def test_unittest_reach_is_none_when_a_word_is_known_only_at_run_time():
    assert unittest_reach(["discover", "-s", "$DIR"], ".") is None
    assert unittest_reach(["discover", "-s", "tests/unit", "-p", "test_*.py"], ".") == ("tests/unit",)


TORCH_RUN_TESTS = (
    "from torch.testing._internal.common_utils import TestCase, run_tests\n\n"
    "class TestEpsilon(TestCase):\n    def test_eps(self):\n        pass\n\n"
    'if __name__ == "__main__":\n    run_tests()\n'
)


def test_pytorch_run_tests_is_read_as_unittest_main_and_a_local_one_is_not():
    assert main_block(TORCH_RUN_TESTS, "t/test_e.py").unittest
    local = TORCH_RUN_TESTS.replace("TestCase, run_tests", "TestCase") + "\n\ndef run_tests():\n    pass\n"
    assert main_block(local, "t/test_e.py").unread


def test_a_shell_variable_named_like_a_test_file_makes_no_command_of_interest(tmp_path, capsys):
    helpers = 'report_for_test() {\n    local test_file=$1\n    echo "${test_file}.xml"\n}\n'
    root = repo(tmp_path, "bash scripts/helpers.sh", {"scripts/helpers.sh": helpers})
    doc = schedule(root, capsys)
    assert doc["entries"] == [] and doc["unread"] == []
