"""An interpreter specmatrix cannot run on, or one without its dependencies: one line and exit 2, never a traceback."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.cli import missing_dependency, too_old

ROOT = Path(__file__).resolve().parents[2]


def _older_pythons() -> list[str]:
    """Every interpreter from 3.7 to 3.10 this machine has (pyenv's, or on PATH). 3.6 and older cannot parse
    `from __future__ import annotations`, which every module of the package starts with."""
    found = {shutil.which(f"python3.{minor}") for minor in range(7, 11)}
    found |= set(glob.glob(os.path.expanduser("~/.pyenv/versions/3.[0-9]*/bin/python3")))
    usable = []
    for path in sorted(p for p in found if p):
        probe = subprocess.run(
            [path, "-c", "import sys; print((3, 7) <= sys.version_info < (3, 11))"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            usable.append(path)
    return usable


def _run(python: str, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"import sys\n{prelude}\nsys.argv = ['specmatrix', *{list(args)!r}]\nimport runpy\nrunpy.run_module('matrix', run_name='__main__')\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([python, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)


@pytest.mark.parametrize(
    ("version", "refused"),
    [((3, 10, 13), True), ((3, 9, 18), True), ((2, 7, 18), True), ((3, 11, 0), False), ((3, 11, 2), False), ((3, 13, 0), False)],
)
def test_the_version_check(version, refused):
    line = too_old(version)
    assert (line is not None) is refused
    if refused:
        assert line.startswith(f"needs Python 3.11 or newer; this is Python {'.'.join(map(str, version))} (")


@pytest.mark.parametrize("python", _older_pythons() or [pytest.param("", marks=pytest.mark.skip(reason="no Python < 3.11 here"))])
def test_an_older_python_gets_one_line(python):
    done = _run(python, "cells")
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("specmatrix: error: needs Python 3.11 or newer; this is Python 3.")


@pytest.mark.parametrize(
    ("module", "args", "pip"),
    [
        ("packaging", ("cells",), "packaging"),
        ("packaging", ("--version",), "packaging"),
        ("yaml", ("schedule", "."), "pyyaml"),
        # Imported only when a step's shell text is read (a workflow with a `run:` block) or pytest's own parser runs.
        ("tree_sitter_bash", ("schedule", "{shell}"), "tree-sitter-bash"),
        ("tree_sitter", ("schedule", "{shell}"), "tree-sitter"),
        ("_pytest", ("pytest-audit", "{shell}"), "pytest"),
    ],
)
def test_a_missing_dependency_is_one_line(module, args, pip, tmp_path):
    # A tree whose workflow has a shell step and a test, so the lazily imported readers are reached.
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(
        "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n      - run: python -m pytest tests -q\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    args = tuple(arg.replace("{shell}", str(tmp_path)) for arg in args)
    # An entry of None in sys.modules makes its import fail as a missing module does.
    done = _run(sys.executable, *args, prelude=f"sys.modules[{module!r}] = None")
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"specmatrix: error: the Python package {pip!r} is not installed for ")
    assert f"pip install {pip}" in line


def test_any_other_import_error_keeps_its_traceback():
    assert missing_dependency(ModuleNotFoundError("No module named 'numpy'", name="numpy")) is None
    assert missing_dependency(ImportError("cannot import name 'x' from 'yaml'", name="yaml")) is None
    assert missing_dependency(ModuleNotFoundError("", name="yaml.cyaml")) is not None


def _lacks_packaging(python: str) -> bool:
    return subprocess.run([python, "-I", "-c", "import packaging"], capture_output=True, check=False).returncode != 0


@pytest.mark.skipif(
    not Path("/usr/bin/python3").is_file() or not _lacks_packaging("/usr/bin/python3"),
    reason="no distribution Python without python3-packaging at /usr/bin/python3",
)
def test_the_distribution_python_without_packaging():
    done = _run("/usr/bin/python3", "runners")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert "apt install python3-packaging" in line


def test_every_runtime_dependency_has_its_line():
    """Each dependency pyproject.toml declares is one the entry point names when it is missing."""
    import tomllib

    from packaging.requirements import Requirement

    from matrix.cli import DEPENDENCIES

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert {Requirement(line).name for line in declared} == {pip for pip, _ in DEPENDENCIES.values()}
