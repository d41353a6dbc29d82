"""Files of an audited tree that are symlinks to files outside it: refused by their path in the tree, never read.

Each fixture plants a link inside a fresh tree to a file beside it whose text holds a marker; the marker must
appear in no output, and the link's own path must be named where the file would have been read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_hostile_inputs import clean_env, run  # noqa: F401 (clean_env: an autouse fixture)

MARK = "zz_outside_marker"

INSIDE_WORKFLOW = """\
name: inside
on: push
jobs:
  unit:
    runs-on: ubuntu-latest
    steps:
      - run: pytest tests/test_inside.py
"""

OUTSIDE_WORKFLOW = f"""\
name: far
on: push
jobs:
  {MARK}_job:
    runs-on: ubuntu-latest
    steps:
      - run: pytest tests/test_{MARK}.py
"""

INSIDE_TEST = """\
import unittest

from ci_helpers import register_cuda_ci

register_cuda_ci(est_time=5, suite="stage-b-test-1-gpu-large")


class TestInside(unittest.TestCase):
    def test_inside(self):
        self.assertTrue(True)
"""

OUTSIDE_TEST = f"""\
import unittest

from ci_helpers import register_cuda_ci

register_cuda_ci(est_time=5, suite="stage-b-test-1-gpu-large")
FAR_REASON = "{MARK}"


@unittest.skipIf(FAR_REASON == "{MARK}", FAR_REASON)
class TestFar(unittest.TestCase):
    def test_far(self):
        self.assertTrue(True)
"""


def linked_workflow_repo(tmp_path: Path) -> Path:
    """A repository with one workflow of its own and one linked from a file outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.yml").write_text(OUTSIDE_WORKFLOW, encoding="utf-8")
    repo = tmp_path / "repo"
    workflows = repo / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "inside.yml").write_text(INSIDE_WORKFLOW, encoding="utf-8")
    (workflows / "far.yml").symlink_to(outside / "far.yml")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_inside.py").write_text("def test_inside():\n    assert True\n", encoding="utf-8")
    return repo


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_schedule_refuses_a_workflow_linked_from_outside_by_its_path(tmp_path: Path, fmt: str) -> None:
    repo = linked_workflow_repo(tmp_path)
    code, out, err = run("schedule", repo, "--format", fmt)
    assert code == 0, err
    assert MARK not in out + err
    assert "tests/test_inside.py" in out  # the workflow of the tree is still read
    assert ".github/workflows/far.yml" in out and "outside the repository" in out
    if fmt == "json":
        doc = json.loads(out)
        assert ".github/workflows/far.yml" not in doc["sources"]


def test_pytest_audit_never_reads_a_workflow_linked_from_outside(tmp_path: Path) -> None:
    repo = linked_workflow_repo(tmp_path)
    code, out, err = run("pytest-audit", repo, "--format", "json")
    assert code in (0, 1), err
    assert MARK not in out + err
    unread = json.loads(out)["unread"]
    assert [u["origin"].split(":")[0] for u in unread] == [".github/workflows/far.yml"]
    assert "outside the repository" in unread[0]["reason"]


def registered_tree(tmp_path: Path, *, workflow: bool) -> Path:
    """A registered suite with one test file of its own and one linked from outside the tree."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "test_far.py").write_text(OUTSIDE_TEST, encoding="utf-8")
    repo = tmp_path / "repo"
    suite = repo / "test" / "registered"
    suite.mkdir(parents=True)
    (suite / "test_inside.py").write_text(INSIDE_TEST, encoding="utf-8")
    (suite / "test_far.py").symlink_to(outside / "test_far.py")
    if workflow:
        (outside / "far.yml").write_text(OUTSIDE_WORKFLOW, encoding="utf-8")
        workflows = repo / ".github" / "workflows"
        workflows.mkdir(parents=True)
        (workflows / "inside.yml").write_text(INSIDE_WORKFLOW, encoding="utf-8")
        (workflows / "far.yml").symlink_to(outside / "far.yml")
    return suite


def test_guards_refuses_a_registered_file_linked_from_outside_by_its_path(tmp_path: Path) -> None:
    suite = registered_tree(tmp_path, workflow=False)
    code, out, err = run("guards", suite, "--no-workflows", "--no-cache", "--show", "info")
    assert MARK not in out + err
    assert code == 1  # the refused file is an error finding, never a clean audit
    refusal = [line for line in out.splitlines() if "test_far.py" in line]
    assert refusal and "outside the audited tree" in out


def test_guards_workflows_never_reads_a_workflow_linked_from_outside(tmp_path: Path) -> None:
    suite = registered_tree(tmp_path, workflow=True)
    (suite / "test_far.py").unlink()
    code, out, err = run("guards", suite, "--workflows", suite.parents[1], "--no-cache", "--show", "info", "--format", "json")
    assert code in (0, 1), err
    assert MARK not in out + err
    assert "far.yml" not in err  # not among the CI files read
    # The suite runs in no readable workflow, and one workflow was refused: whether it runs is undetermined.
    (finding,) = [f for f in json.loads(out)["findings"] if f["path"] == "test_inside.py"]
    assert finding["kind"] == "undetermined" and ".github/workflows/far.yml" in finding["reason"]
