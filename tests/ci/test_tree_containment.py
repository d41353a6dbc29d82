"""What an audit reads stays inside the tree it audits, whatever the tree does while it is read.

Files of an audited tree are opened by walking from a descriptor of its root (`TreeFiles`): a folder swapped for a
symlink to outside after the audit met it is never read through, a link leading out is refused by its path in the
tree, and a path or configuration value holding a NUL byte is one line (a value) or a file not read (a path), never a
traceback.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.ci.cli_run import clean_environment, run, write

SECRET = "OUTSIDE-TREE-SECRET"
PLAIN = "def test_plain():\n    pass\n"
# A test file that, read from outside the tree, would show its text in a finding.
LEAK = f'import pytest\n\n\n@pytest.mark.skip(reason="{SECRET}")\ndef test_hidden():\n    pass\n'
WORKFLOW = "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: python -m pytest tests\n"
REGISTERED = """\
import unittest

from ci_helpers import register_cuda_ci

register_cuda_ci(est_time=30, suite="stage-a")


class TestKernel(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
"""


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_environment(monkeypatch, tmp_path, cache=False)


def swap_for_link(folder: Path, outside: Path) -> None:
    """Move `folder` out of the tree and put a symlink to `outside` in its place."""
    shutil.move(str(folder), str(outside.parent / f"moved-{folder.name}"))
    os.symlink(outside, folder)


def after_first(target: Any, name: str, then: Callable[[], None], monkeypatch: pytest.MonkeyPatch) -> None:
    """Call `then` once, right after the first call of `target.name` returns."""
    real = getattr(target, name)
    done: list[bool] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        if not done:
            done.append(True)
            then()
        return out

    monkeypatch.setattr(target, name, wrapped)


# --- a folder swapped for a symlink mid-run -----------------------------------------------------------------


def test_pytest_audit_never_reads_through_a_folder_swapped_mid_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matrix.pytest_suites import collect

    outside = write(tmp_path / "outside", {"test_b.py": LEAK})
    root = write(
        tmp_path / "repo",
        {".github/workflows/ci.yml": WORKFLOW, "tests/sub/test_a.py": PLAIN, "tests/sub/test_b.py": PLAIN},
    )
    after_first(collect.Collector, "collect", lambda: swap_for_link(root / "tests" / "sub", outside), monkeypatch)
    code, out, _ = run("pytest-audit", root, "--jobs", "1", "--format", "json")
    assert SECRET not in out
    doc = json.loads(out)
    assert code == 1 and "tests/sub/test_b.py" in {f["path"] for f in doc["findings"] if f["kind"] == "unparsable"}


def test_guards_never_reads_through_a_folder_swapped_after_the_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matrix.registered_suite import tree

    outside = write(tmp_path / "outside", {"test_b.py": REGISTERED.replace("stage-a", SECRET)})
    root = write(tmp_path / "suite", {"sub/test_a.py": REGISTERED, "sub/test_b.py": REGISTERED})
    after_first(tree, "list_tree", lambda: swap_for_link(root / "sub", outside), monkeypatch)
    code, out, _ = run("guards", root, "--format", "json", "--no-workflows")
    assert SECRET not in out and code == 1
    problems = {f["path"]: f["reason"] for f in json.loads(out)["findings"] if f["kind"] == "unparsable"}
    assert "outside the audited tree" in problems["sub/test_b.py"], problems


# --- NUL bytes ------------------------------------------------------------------------------------------------

NUL_STEPS = """on: push
jobs:
  j:
    runs-on: ubuntu-latest
    steps:
      - run: "bash scripts/x\\0.sh"
      - run: "make -f Make\\0file all"
      - run: "python3 tools/r\\0.py"
      - run: python -m pytest tests
"""


@pytest.mark.parametrize("command", ["pytest-audit", "schedule"])
def test_a_nul_byte_in_a_followed_path_is_a_file_not_read(tmp_path: Path, command: str) -> None:
    root = write(tmp_path / "repo", {".github/workflows/ci.yml": NUL_STEPS, "tests/test_a.py": PLAIN})
    code, out, _ = run(command, root, "--format", "json")
    assert code == 0
    reasons = " ".join(u["reason"] for u in json.loads(out)["unread"])
    assert "NUL byte" in reasons


@pytest.mark.parametrize(
    "line",
    [
        'runners = "a\\u0000b.toml"',
        'runner = "a\\u0000b"',
        'matrix = "m\\u0000.toml"',
        'runners = ["ok.toml", "b\\u0000"]',
    ],
)
def test_a_nul_byte_in_a_pyproject_value_is_one_line(tmp_path: Path, line: str) -> None:
    write(tmp_path, {"pyproject.toml": f"[tool.specmatrix]\n{line}\n"})
    code, _, err = run("cells")
    assert code == 2 and err.count("\n") == 1 and "NUL byte" in err


@pytest.mark.parametrize(
    "value",
    ['"../x.toml"', '"/etc/hostname"', '["ok.toml", "sub/../../x.toml"]', '"linked.toml"'],
    ids=["parent", "absolute", "listed", "symlink"],
)
def test_a_pyproject_runner_file_outside_the_project_is_refused(tmp_path: Path, value: str) -> None:
    (tmp_path / "x.toml").write_text(f'[runners.leak]\ndescription = "{SECRET}"\ngpus = 0\n', encoding="utf-8")
    project = write(tmp_path / "project", {"pyproject.toml": f"[tool.specmatrix]\nrunners = {value}\n", "ok.toml": ""})
    os.symlink(tmp_path / "x.toml", project / "linked.toml")
    os.chdir(project)
    code, out, err = run("runners")
    assert code == 2 and err.count("\n") == 1 and "outside the project" in err
    assert SECRET not in out + err
