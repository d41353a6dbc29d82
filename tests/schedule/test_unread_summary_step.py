"""An unread step reaches only the tests its command could run: a summary step that only echoes expressions of
too many possible values runs no test command, so it reaches none (it once made every test of the tree
undetermined); a step whose test command has such an expression is read with it unknown, bounded by the rest of
its words. A step whose folder is known only at run time and that runs no test command reaches none either."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main

CHECK = """  check:
    runs-on: ubuntu-latest
    outputs:
{outputs}
    steps:
      - id: probe
        run: |
          if [ -n "$CHANGED" ]; then
{yes}
          else
{no}
          fi
"""
NAMES = ("kernels", "docs", "frontend", "router", "models", "tools")


def _workflow(summary: str, folder: str = "") -> str:
    outputs = "\n".join(f"      {n}: ${{{{ steps.probe.outputs.{n} }}}}" for n in NAMES)
    yes = "\n".join(f'            echo "{n}=true" >> "$GITHUB_OUTPUT"' for n in NAMES)
    no = "\n".join(f'            echo "{n}=false" >> "$GITHUB_OUTPUT"' for n in NAMES)
    check = CHECK.format(outputs=outputs, yes=yes, no=no)
    where = f"        working-directory: {folder}\n" if folder else ""
    return (
        "on:\n  pull_request:\n  workflow_dispatch:\n    inputs:\n      stage:\n        default: ''\njobs:\n"
        + check
        + "  report:\n    needs: check\n    runs-on: ubuntu-latest\n    steps:\n      - name: summary\n"
        + where
        + "        run: |\n"
        + summary
        + "  unit:\n    runs-on: sm86\n    steps:\n      - run: pytest tests/unit\n"
    )


ECHO_ONLY = "".join(f'          echo "| {n} | ${{{{ needs.check.outputs.{n} }}}} |" >> "$GITHUB_STEP_SUMMARY"\n' for n in NAMES)
ECHO_ONLY += '          echo "| stage | ${{ inputs.stage || \'none\' }} |" >> "$GITHUB_STEP_SUMMARY"\n'
RUNS_TESTS = ECHO_ONLY + '          pytest tests/gpu -k "${{ needs.check.outputs.kernels }}"\n'


def _audit(tmp_path: Path, capsys: pytest.CaptureFixture[str], workflow: str) -> dict:
    root = tmp_path / "repo"
    files = {
        ".github/workflows/ci.yml": workflow,
        "tests/unit/test_a.py": "def test_a():\n    pass\n",
        "tests/gpu/test_b.py": "def test_b():\n    pass\n",
        "tests/extra/test_c.py": "def test_c():\n    pass\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
    return json.loads(capsys.readouterr().out)


def _unscheduled(doc: dict) -> set[str]:
    return {f["path"] for f in doc["findings"] if f["kind"] == "unscheduled"}


def test_an_echo_only_step_of_many_values_reaches_no_test(tmp_path, capsys):
    doc = _audit(tmp_path, capsys, _workflow(ECHO_ONLY))
    assert _unscheduled(doc) == {"tests/gpu/test_b.py", "tests/extra/test_c.py"}
    assert doc["undetermined_unread"] == 0 and not doc["unread"]


def test_a_test_command_of_many_values_is_read_with_the_value_unknown(tmp_path, capsys):
    doc = _audit(tmp_path, capsys, _workflow(RUNS_TESTS))
    assert _unscheduled(doc) == {"tests/extra/test_c.py"}  # tests/gpu may run: how -k selects is not known
    assert doc["undetermined_unread"] + doc["undetermined"] == 1


@pytest.mark.parametrize(("summary", "unread"), [(ECHO_ONLY, 0), (RUNS_TESTS, 1)])
def test_a_step_in_a_folder_known_only_at_run_time_reaches_tests_only_if_it_runs_some(tmp_path, capsys, summary, unread):
    doc = _audit(tmp_path, capsys, _workflow(summary, folder="${{ vars.REPORT_DIR }}"))
    assert len(doc["unread"]) == unread
