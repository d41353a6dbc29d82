"""Outputs never replace a file the audit read, whatever its name; file names never forge a CI log line.

Each output (`--output`, `--summary`, `--write-baseline`) is checked against every file the run read, as the readers
noted them: a Dockerfile, a Makefile or a sourced environment file the schedule read is refused like a test file. And a test file whose name holds a newline, `::` or `%` reaches stdout escaped
in every format that can reach a CI log.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.ci.cli_run import clean_environment, run

WORKFLOW = """on: push
jobs:
  j:
    runs-on: ubuntu-latest
    steps:
      - run: docker build -t img -f docker/gpu.Dockerfile .
      - run: docker run -d --name box img
      - run: docker exec box python -m pytest tests/a
      - run: make unit
      - run: source ci/vars.env && python -m pytest tests/b
"""
FILES = {
    ".github/workflows/ci.yml": WORKFLOW,
    "docker/gpu.Dockerfile": "FROM python:3.11\nENV CUDA_VISIBLE_DEVICES=0\n",
    "Makefile": "unit:\n\tpython -m pytest tests/c\n",
    "ci/vars.env": "export MODE=ci\n",
    "tests/a/test_a.py": "def test_a():\n    pass\n",
    "tests/b/test_b.py": "def test_b():\n    pass\n",
    "tests/c/test_c.py": "def test_c():\n    pass\n",
}


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_environment(monkeypatch, tmp_path)


def repo(tmp_path: Path, files: dict[str, str] = FILES) -> Path:
    root = tmp_path / "repo"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / ".git").mkdir(exist_ok=True)
    return root


@pytest.mark.parametrize("target", ["docker/gpu.Dockerfile", "Makefile", "ci/vars.env"])
@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("pytest-audit", "--output"),
        ("pytest-audit", "--summary"),
        ("pytest-audit", "--write-baseline"),
        ("schedule", "--output"),
    ],
)
def test_an_output_onto_any_file_the_audit_read_is_refused(tmp_path: Path, command: str, option: str, target: str) -> None:
    root = repo(tmp_path)
    before = (root / target).read_bytes()
    code, _, err = run(command, root, option, root / target)
    assert (code, err.count("\n")) == (2, 1), err
    assert err.startswith(f"specmatrix: error: {option} ") and "the audit read this file" in err
    assert (root / target).read_bytes() == before


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_guards_refuses_an_output_onto_a_dockerfile_its_schedule_read(tmp_path: Path, warm: bool) -> None:
    """The guard audit's schedule comes from its cache when warm: the CI files keyed are read all the same."""
    root = repo(
        tmp_path, {**FILES, "tests/a/test_reg.py": "from x import register_cuda_ci\nregister_cuda_ci(est_time=1, suite='s')\n"}
    )
    if warm:
        run("guards", root / "tests")
    before = (root / "docker/gpu.Dockerfile").read_bytes()
    code, _, err = run("guards", root / "tests", "--workflows", root, "--output", root / "docker/gpu.Dockerfile")
    errors = [line for line in err.splitlines() if line.startswith("specmatrix: error:")]
    assert code == 2 and len(errors) == 1 and "the audit read this file" in errors[0], err
    assert (root / "docker/gpu.Dockerfile").read_bytes() == before


def test_a_file_the_audit_did_not_read_is_written(tmp_path: Path) -> None:
    root = repo(tmp_path)
    code, _, _ = run("pytest-audit", root, "--output", root / "ci" / "report.txt")
    assert code in (0, 1) and (root / "ci" / "report.txt").read_text().strip()


# --- file names that would forge a CI log line ----------------------------------------------------------------

HOSTILE_NAMES = {
    "newline-command": "test_a\n::error file=x.py,line=1::FORGED.py",
    "command-inside": "test_b::warning::x.py",
    "percent": "test_%0A::error::c.py",
    "unicode-space": "test_d\n\u3000::error::FORGED.py",
}
# The GitHub runner trims leading white space (any Unicode space) before it looks for `::`.
COMMAND = re.compile(r"^\s*::", re.M)


def _hostile_repo(tmp_path: Path, name: str) -> Path:
    """A scheduled test file under a hostile name whose test always skips (so every format names the test)."""
    files = {
        ".github/workflows/ci.yml": "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: python -m pytest tests\n",
    }
    root = repo(tmp_path, files)
    skipped = (
        "import sys\nimport pytest\n\n@pytest.mark.skipif(sys.platform == 'linux', reason='always')\ndef test_x():\n    pass\n"
    )
    (root / "tests").mkdir()
    (root / "tests" / name).write_text(skipped, encoding="utf-8")
    return root


@pytest.mark.parametrize("fmt", ["text", "github", "junit", "md", "json", "sarif"])
@pytest.mark.parametrize("name", list(HOSTILE_NAMES.values()), ids=list(HOSTILE_NAMES))
def test_a_hostile_file_name_forges_no_workflow_command(tmp_path: Path, fmt: str, name: str) -> None:
    root = _hostile_repo(tmp_path, name)
    code, out, _ = run("pytest-audit", root, "--format", fmt)
    assert code == 1
    lines = COMMAND.findall(out)
    if fmt == "github":
        commands = [line for line in out.splitlines() if line.startswith("::")]
        assert len(lines) == len(commands) >= 1, out  # the annotations written, nothing forged
        assert all(re.match(r"::(error|warning|notice) file=[^:,]*(%3A[^:,]*)*,line=\d+,title=", c) for c in commands), out
    else:
        assert lines == [], out
    if fmt == "junit":
        ET.fromstring(out)
    if fmt in ("json", "sarif"):
        json.loads(out)
