"""The install paths the README gives: `uv build`, then `uv tool install` of the wheel and of the checkout, on every
supported Python this machine has (3.11 and newer), and a refusal on an older one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def _uv() -> str | None:
    local = [Path(sys.executable).parent / "uv", ROOT / ".venv" / "bin" / "uv"]
    return next((str(p) for p in local if p.is_file()), None) or shutil.which("uv")


def _python(version: str) -> str | None:
    """An interpreter of this minor version already on the machine (uv never downloads one here)."""
    uv = _uv()
    assert uv is not None
    found = subprocess.run([uv, "python", "find", "--no-python-downloads", version], capture_output=True, text=True, check=False)
    return found.stdout.strip() if found.returncode == 0 else None


@pytest.fixture
def tool_env(tmp_path) -> dict[str, str]:
    return {
        **os.environ,
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    uv = _uv()
    if uv is None:
        pytest.skip("uv not installed (the README's setup puts it in .venv)")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([uv, "build", "--wheel", "--out-dir", str(out), str(ROOT)], check=True, capture_output=True)
    (found,) = out.glob("specmatrix-*.whl")
    return found


def test_the_wheel_carries_the_data_the_package_reads(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in ("matrix.toml", "runners.toml", "suites.toml", "matrix.schema.json", "runners.schema.json"):
        assert f"matrix/data/{data}" in names
    assert any(n.endswith("entry_points.txt") for n in names)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13", "3.14"])
@pytest.mark.parametrize("source", ["wheel", "checkout"])
def test_uv_tool_install_puts_the_command_on_path(tmp_path, tool_env, wheel, version, source):
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")
    target = str(wheel) if source == "wheel" else str(ROOT)
    done = subprocess.run(
        [_uv() or "", "tool", "install", "--python", python, target], env=tool_env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    version_line = subprocess.run([str(tmp_path / "bin" / "specmatrix"), "--version"], capture_output=True, text=True, check=True)
    assert version_line.stdout.startswith("specmatrix 0.1.0")


def test_an_older_python_is_refused_with_the_requirement(tool_env, wheel):
    python = _python("3.10")
    if python is None:
        pytest.skip("no Python 3.10 on this machine")
    done = subprocess.run(
        [_uv() or "", "tool", "install", "--python", python, str(wheel)],
        env=tool_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert ">=3.11" in done.stderr
