"""ci/distribution_rows.py: table rows read from a wheel's RECORD and METADATA (wheels made here, never downloaded)."""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.ci_scripts import ci_script


def _wheel(where: Path, name: str, files: list[str], requires: list[str], pth: str = "") -> Path:
    path = where / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    record = "".join(f"{f},,\n" for f in [*files, f"{info}/METADATA", f"{info}/RECORD"])
    with zipfile.ZipFile(path, "w") as archive:
        for file in files:
            archive.writestr(file, pth if file.endswith(".pth") else "")
        archive.writestr(f"{info}/METADATA", metadata)
        archive.writestr(f"{info}/RECORD", record)
    return path


def test_a_row_read_from_a_wheel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = _wheel(
        tmp_path,
        "Lattice_Tools",
        [
            "lattice/__init__.py",
            "lattice/core.py",
            "latticecli.py",
            "_speedups.cpython-312-x86_64-linux-gnu.so",
            "quantum/beam/__init__.py",
            "quantum/wave.py",
            "lattice_tools-1.0.data/scripts/run",
        ],
        ["numpy>=1.2", "colorama; sys_platform == 'win32'", "pytest; extra == 'test'", "Typing_Extensions"],
    )
    assert ci_script("distribution_rows").main([str(wheel)]) == 0
    (row,) = tomllib.loads(capsys.readouterr().out)["distribution"]
    assert row["name"] == "lattice-tools"
    # `quantum` has no __init__.py: a namespace package, listed by what it holds.
    assert row["imports"] == ["_speedups", "lattice", "latticecli", "quantum.beam", "quantum.wave"]
    assert row["requires"] == ["numpy", "colorama", "typing-extensions"]
    assert row["depends"] == ["numpy", "typing-extensions"]
    assert row["submodules"] is False and "Lattice_Tools 1.0 wheel" in row["source"]


def test_a_wheel_with_a_path_file_gets_no_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = _wheel(tmp_path, "pathy", ["pathy.pth", "pathy_impl/__init__.py"], [], pth="extra_folder\n")
    assert ci_script("distribution_rows").main([str(wheel)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "puts a folder on sys.path" in captured.err


def test_a_path_file_that_only_imports_adds_no_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = _wheel(tmp_path, "hooky", ["hooky.pth", "hooky/__init__.py"], [], pth="# a start-up hook\nimport hooky\n")
    assert ci_script("distribution_rows").main([str(wheel)]) == 0
    assert tomllib.loads(capsys.readouterr().out)["distribution"][0]["imports"] == ["hooky"]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken-1.0-py3-none-any.whl"
    broken.write_bytes(b"not a zip")
    assert ci_script("distribution_rows").main([str(broken)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
