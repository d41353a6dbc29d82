"""The command run in-process as a user runs it, for the hostile-input tests: a clean environment, the output and
the exit code, and no traceback ever."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from matrix.cli.main import main


def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, cache: bool = True) -> None:
    """No SPECMATRIX_* variable or job summary from the calling shell; a cache of the test's own (`cache`) or none;
    the test's folder as the working directory."""
    for var in list(os.environ):
        if var.startswith("SPECMATRIX_") or var == "GITHUB_STEP_SUMMARY":
            monkeypatch.delenv(var)
    if cache:
        monkeypatch.setenv("SPECMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    else:
        monkeypatch.setenv("SPECMATRIX_NO_CACHE", "1")
    monkeypatch.chdir(tmp_path)


def run(*argv: object) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `specmatrix ARGV`; fails the test on a traceback."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def write(root: Path, files: dict[str, str]) -> Path:
    """`files` (path -> text) written under `root`, folders made as needed."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root
