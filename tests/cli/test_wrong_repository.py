"""Commands made for one kind of repository say so, and name the command to use, when they meet another kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main


def plain_pytest_project(tmp_path: Path) -> Path:
    """A pytest project with no sglang registration: a test file and its pyproject, nothing registered."""
    root = tmp_path / "kernels-project"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n", encoding="utf-8")
    (root / "tests" / "test_norm.py").write_text("import pytest\n\n\ndef test_norm():\n    assert True\n", encoding="utf-8")
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_guards_on_a_plain_pytest_project_points_to_pytest_audit(tmp_path, capsys, fmt):
    root = plain_pytest_project(tmp_path)
    code, out, err = run(capsys, "guards", str(root / "tests"), "--no-workflows", "--no-cache", "--format", fmt)
    assert code == 0
    assert f"for a plain pytest project run `specmatrix pytest-audit {root.resolve()}`" in err
    assert "no file under" in err and "is for suites registered the sglang way" in err
    if fmt == "json":
        assert json.loads(out)["registered_files"] == 0  # stdout stays the document alone


def test_guards_on_a_registered_suite_gives_no_such_hint(capsys):
    suite = Path(__file__).parent.parent / "guards" / "fixture_suite"
    _, _, err = run(capsys, "guards", str(suite), "--no-workflows", "--no-cache")
    assert "pytest-audit" not in err


def test_ledger_on_a_plain_pytest_project_points_to_the_plugin(tmp_path, capsys):
    root = plain_pytest_project(tmp_path)
    ledger = tmp_path / "ledger.jsonl"
    runner = {"source": "SPECMATRIX_DETECT", "gpus": 1, "capability": [9, 0], "name": "NVIDIA H100"}
    records = [
        {"kind": "process", "script": "tests/test_norm.py", "argv": []},
        {"kind": "test", "file": "tests/test_norm.py", "test": "tests/test_norm.py::test_norm", "status": "passed"},
        {"kind": "exit", "status": 0, "how": "sys.exit", "tests": 1},
    ]
    lines = [json.dumps({"ledger": 1, "runner": runner, **r, "pid": 7, "time": 1.0}) for r in records]
    ledger.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run(capsys, "ledger", str(ledger), "--root", str(root / "tests"))
    assert code == 0, err
    assert "specmatrix ledger: no file under" in err
    assert "`pytest --matrix-report out/run.json`" in err and f"`specmatrix pytest-audit {root.resolve()}`" in err
