"""A small project whose tests skip differently on its two CI runners, and the JUnit XML real pytest writes for it.

`gauge-kit` has two CI jobs (`.github/workflows/ci.yml`): `lean` on ubuntu-22.04 (a plain install) and `full` on
ubuntu-24.04 (`GAUGE_MODE=full`, the `accel` extra, which provides the module `gauge_accel`). Its tests skip on an
environment variable, on a module-level `importorskip` of `gauge_accel` (present on `full` only), on a module
present nowhere, on a check the audit cannot see (a skip dispatched through a table), and on a variable the host of
the `full` runner sets outside any CI file (`GAUGE_DEVICE`, as a self-hosted machine's own environment would); one
test is made at run time (no static collection finds it), one is deselected at run time on `full`.

`write_runs` writes the project into a folder and runs the real pytest twice, once per runner's environment, each
writing `--junitxml`: the runs the join is tested on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

WORKFLOW = """
name: ci
on: [push, pull_request]
permissions: {}
jobs:
  lean:
    runs-on: ubuntu-22.04
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e .
      - run: pytest tests --junitxml=junit-lean.xml
  full:
    runs-on: ubuntu-24.04
    env:
      GAUGE_MODE: full
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e '.[accel]'
      - run: pytest tests --junitxml=junit-full.xml
"""

PYPROJECT = """
[project]
name = "gauge-kit"
version = "0.1"

[project.optional-dependencies]
accel = ["gauge-accel-wheels"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

FILES: dict[str, str] = {
    ".github/workflows/ci.yml": WORKFLOW,
    "pyproject.toml": PYPROJECT,
    "tests/test_basics.py": """
        import pytest


        def _widths():
            return [3, 5]


        def test_adds():
            assert 1 + 1 == 2


        def test_dropped():
            assert True


        @pytest.mark.xfail(reason="rounding is off by one")
        def test_rounding():
            assert round(2.5) == 3


        @pytest.mark.parametrize("speed", ["fast", pytest.param("slow", marks=pytest.mark.skip(reason="slow runs are off"))])
        def test_speed(speed):
            assert speed


        class TestUnits:
            @pytest.mark.parametrize("factor", [1, 2])
            def test_scale(self, factor):
                assert factor * 2 > factor

            @pytest.mark.parametrize("width", _widths())
            def test_width(self, width):
                assert width % 2 == 1
        """,
    "tests/test_modes.py": """
        import os

        import pytest


        @pytest.mark.skipif(os.environ.get("GAUGE_MODE") == "full", reason="lean installs only")
        def test_lean_only():
            assert True


        @pytest.mark.skipif(os.environ.get("GAUGE_DEVICE") != "1", reason="needs a gauge device")
        def test_on_device():
            assert True
        """,
    "tests/test_accel.py": """
        import pytest

        gauge_accel = pytest.importorskip("gauge_accel")


        def test_fast_path():
            assert gauge_accel.SPEED > 1
        """,
    "tests/test_dispatch.py": """
        import pytest


        def _need_cluster():
            pytest.skip("no cluster attached")


        _CHECKS = {"cluster": _need_cluster}


        def test_cluster_sync():
            _CHECKS["cluster"]()
            assert True
        """,
    "tests/test_made.py": """
        def _make(n):
            def test():
                assert n
            return test


        for _name in ("alpha", "beta"):
            globals()["test_made_" + _name] = _make(_name)


        def test_fixed():
            assert True
        """,
    "tests/sub/__init__.py": "",
    "tests/sub/test_nested.py": """
        import pytest


        def test_never_installed():
            pytest.importorskip("gauge_never_installed")


        class TestDeep:
            def test_value(self):
                assert [1][0] == 1
        """,
}

ACCEL = "SPEED = 2\n"


def write_project(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def run_pytest(root: Path, junit: Path, env: Mapping[str, str], *args: str, cwd: Path | None = None) -> None:
    """The real pytest on the project, writing `junit` (its exit code is the tests': a failure is expected)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GAUGE_", "PYTEST_", "PYTHONPATH"))}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:specmatrix"]
    command += ["-p", "no:hypothesispytest", f"--junitxml={junit}", *args]
    done = subprocess.run(
        command, cwd=cwd or root, env={**clean, **env}, capture_output=True, text=True, timeout=300, check=False
    )
    assert junit.is_file(), done.stdout + done.stderr


def write_runs(root: Path, out: Path, extra: Sequence[str] = ()) -> dict[str, Path]:
    """The two runners' JUnit files: `lean` as the workflow says; `full` with `GAUGE_MODE=full`, `gauge_accel`
    importable, the host's own `GAUGE_DEVICE=1`, `test_dropped` deselected at run time, pytest's `xunit1` family
    (which keeps `file` and `line`) and its own suite name."""
    site = out / "accel-site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "gauge_accel.py").write_text(ACCEL, encoding="utf-8")
    lean, full = out / "lean" / "junit.xml", out / "full" / "junit.xml"
    run_pytest(root, lean, {}, *extra)
    run_pytest(
        root,
        full,
        {"GAUGE_MODE": "full", "GAUGE_DEVICE": "1", "PYTHONPATH": str(site)},
        "--deselect",
        "tests/test_basics.py::test_dropped",
        "-o",
        "junit_family=xunit1",
        "-o",
        "junit_suite_name=gauge-full",
        *extra,
    )
    return {"ubuntu-22.04": lean, "ubuntu-24.04": full}
