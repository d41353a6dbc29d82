"""A registered file run as a script whose `__main__` block drops its test runner's exit code: `exit-code-dropped`.

CI starts each registered file as `python3 FILE` and judges it by its exit code; `pytest.main` returns the code and
`unittest.main(exit=False)` returns without exiting, so a block that drops either passes CI whatever its tests do.
Each block below is written fresh; the file around it is one registered test class, scheduled by a workflow that
runs its suite through run_suite.py. A real Python runs each fixture too: the exit status says which ones fail CI.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from matrix.cli.main import main

HEAD = """\
import sys
import unittest

import pytest

from helpers import register_cuda_ci

register_cuda_ci(est_time=20, suite="stage-a")


class TestAlwaysFails(unittest.TestCase):
    def test_broken(self):
        self.assertEqual(1, 2)


def launch():
    return pytest.main([__file__, "-q"])


def launch_and_forget():
    pytest.main([__file__, "-q"])


"""
WORKFLOW = "on: push\njobs:\n  j:\n    runs-on: 1-gpu-h100\n    steps:\n      - run: cd test && python3 run_suite.py --hw cuda --suite stage-a\n"

DROPPED = {
    "bare-pytest-main": 'if __name__ == "__main__":\n    pytest.main([__file__])\n',
    "unittest-exit-false": 'if __name__ == "__main__":\n    unittest.main(exit=False)\n',
    "bound-never-read": 'if __name__ == "__main__":\n    code = pytest.main([__file__])\n',
    "bound-then-printed": 'if __name__ == "__main__":\n    code = pytest.main([__file__])\n    print("pytest said", code)\n',
    "checked-without-exit": 'if __name__ == "__main__":\n    if pytest.main([__file__]) != 0:\n        print("failed")\n',
    "helper-returns-dropped": 'if __name__ == "__main__":\n    launch()\n',
    "helper-drops": 'if __name__ == "__main__":\n    sys.exit(launch_and_forget())\n',
    "under-a-flag": 'if __name__ == "__main__":\n    if "--quick" not in sys.argv:\n        pytest.main([__file__])\n',
}
KEPT = {
    "sys-exit": 'if __name__ == "__main__":\n    sys.exit(pytest.main([__file__]))\n',
    "raise-systemexit": 'if __name__ == "__main__":\n    raise SystemExit(pytest.main([__file__]))\n',
    "builtin-exit": 'if __name__ == "__main__":\n    exit(pytest.main())\n',
    "bound-then-exit": 'if __name__ == "__main__":\n    rc = pytest.main([__file__])\n    sys.exit(rc)\n',
    "checked-and-exit": 'if __name__ == "__main__":\n    if pytest.main([__file__]):\n        sys.exit(1)\n',
    "unittest-main": 'if __name__ == "__main__":\n    unittest.main()\n',
    "unittest-result-exit": 'if __name__ == "__main__":\n    prog = unittest.main(exit=False)\n'
    "    sys.exit(not prog.result.wasSuccessful())\n",
    "helper-returned-to-exit": 'if __name__ == "__main__":\n    sys.exit(launch())\n',
}


def suite(tmp_path: Path, block: str) -> Path:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW, encoding="utf-8")
    (root / "test" / "registered").mkdir(parents=True)
    (root / "test" / "registered" / "test_kernel.py").write_text(HEAD + block, encoding="utf-8")
    (root / "test" / "registered" / "helpers.py").write_text("def register_cuda_ci(**kwargs):\n    pass\n", encoding="utf-8")
    return root


def findings(capsys: pytest.CaptureFixture[str], root: Path) -> list[dict[str, object]]:
    main(["guards", str(root / "test" / "registered"), "--format", "json", "--no-cache"])
    return [f for f in json.loads(capsys.readouterr().out)["findings"] if f["kind"] == "exit-code-dropped"]


@pytest.mark.parametrize("block", list(DROPPED.values()), ids=list(DROPPED))
def test_a_dropped_exit_code_is_found(capsys: pytest.CaptureFixture[str], tmp_path: Path, block: str) -> None:
    (found,) = findings(capsys, suite(tmp_path, block))
    assert found["severity"] == "error" and found["failing"] is True
    assert "sys.exit(pytest.main(" in str(found["hint"])
    source = (tmp_path / "repo" / "test" / "registered" / "test_kernel.py").read_text(encoding="utf-8").splitlines()
    assert "main(" in source[int(str(found["line"])) - 1]  # the runner call's own line


@pytest.mark.parametrize("block", list(KEPT.values()), ids=list(KEPT))
def test_an_exit_code_passed_on_is_clean(capsys: pytest.CaptureFixture[str], tmp_path: Path, block: str) -> None:
    assert findings(capsys, suite(tmp_path, block)) == []


def test_no_finding_where_ci_does_not_run_the_file_as_a_script(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = suite(tmp_path, DROPPED["bare-pytest-main"])
    main(["guards", str(root / "test" / "registered"), "--format", "json", "--no-cache", "--no-workflows"])
    assert [f for f in json.loads(capsys.readouterr().out)["findings"] if f["kind"] == "exit-code-dropped"] == []


@pytest.mark.parametrize(
    ("name", "fails_ci"),
    [("bare-pytest-main", False), ("unittest-exit-false", False), ("sys-exit", True), ("unittest-main", True)],
)
def test_the_verdict_is_the_exit_status_python_gives(tmp_path: Path, name: str, fails_ci: bool) -> None:
    """The oracle: run each fixture as CI does (`python3 FILE`) with a failing test; the exit status is the verdict."""
    block = {**DROPPED, **KEPT}[name]
    root = suite(tmp_path, block)
    folder = root / "test" / "registered"
    done = subprocess.run(
        [sys.executable, "test_kernel.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(folder), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert (done.returncode != 0) is fails_ci, textwrap.shorten(done.stdout + done.stderr, 400)
