from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# The fixture suite and its fixes are run as scripts by the tests, never imported or collected by pytest.
collect_ignore = ["fixture_suite", "fixture_fixes"]

HERE = Path(__file__).parent
REPO = HERE.parent.parent
FIXTURE_SUITE = HERE / "fixture_suite"
FIXTURE_FIXES = HERE / "fixture_fixes"
B200 = json.dumps({"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"})


@pytest.fixture(scope="session")
def hook_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the hook installed by `specmatrix ledger --install-hook`, run with the venv's own python.

    pip is left out (fast, offline); instead a `.pth` puts this checkout and the test environment's site-packages
    on the venv's path, the way an editable install would.
    """
    venv = tmp_path_factory.mktemp("ledger-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True, capture_output=True, text=True
    ).stdout.strip()
    entries = [str(REPO), sysconfig.get_paths()["purelib"]]
    Path(purelib, "_specmatrix_checkout.pth").write_text("\n".join(entries) + "\n", encoding="utf-8")
    done = subprocess.run([python, "-m", "matrix", "ledger", "--install-hook"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"specmatrix ledger hook installed: {Path(purelib) / 'specmatrix_ledger.pth'}"
    return venv


def venv_env(venv: Path, ledger: Path | None, **extra: str) -> dict[str, str]:
    """The environment a CI step would have with the venv activated (and the ledger variable when given)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECMATRIX_", "PYTEST_", "SGLANG_", "PYTHON"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    if ledger is not None:
        env["SPECMATRIX_LEDGER"] = str(ledger)
    env.update(extra)
    return env


def read_records(ledger: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines()]


def run_suite(venv: Path, suite: Path, ledger: Path, *, detect: str = B200) -> subprocess.CompletedProcess[str]:
    """The fixture's own runner, one `python3 FILE -f` process per registered file, under a faked machine."""
    env = venv_env(venv, ledger, SPECMATRIX_LEDGER_ROOT=str(suite), SPECMATRIX_DETECT=detect, SGLANG_IS_IN_CI="true")
    return subprocess.run(
        ["python3", "run_suite.py", "--suite", "base-b-test-4-gpu-b200", "--continue-on-error"],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def suite_copy(tmp_path: Path) -> Callable[..., Path]:
    """A private copy of the fixture suite, with the fixes for the named files applied."""

    def make(*fixed: str) -> Path:
        target = tmp_path / "suite"
        shutil.copytree(FIXTURE_SUITE, target)
        for rel in fixed:
            shutil.copyfile(FIXTURE_FIXES / rel, target / rel)
        return target

    return make


def ledger_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """`specmatrix ledger ARGS` through the one error boundary: (exit code, stdout, stderr)."""
    from matrix.cli.main import main

    capsys.readouterr()
    code = main(["ledger", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err
