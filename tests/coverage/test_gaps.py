"""`specmatrix gaps`: the cells no runner of a CI schedule would run, consistent with `cells --runner R` for each."""

from __future__ import annotations

import json
from pathlib import Path

from matrix.cli.main import main

WORKFLOW = """
on: pull_request
jobs:
  hopper:
    runs-on: 1-gpu-h100
    steps:
      - run: python3 test/run_suite.py --hw cuda --suite base-b-test-1-gpu-large
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: python3 test/run_suite.py --hw cpu --suite base-a-test-cpu
"""


def repo(tmp_path: Path, text: str = WORKFLOW) -> Path:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(text)
    (tmp_path / "test").mkdir()
    return tmp_path


def run_json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_gaps_agree_with_cells_on_every_runner_of_the_schedule(tmp_path, capsys):
    root = repo(tmp_path)
    doc = run_json(capsys, "gaps", str(root / "test"), "--format", "json")
    assert doc["runners"] == ["cpu", "1-gpu-h100"]
    gaps = {f["subject"] for f in doc["findings"]}
    assert {f["kind"] for f in doc["findings"]} == {"untested-cell"}
    # Every finding carries the one fingerprint (its key's), distinct per cell.
    assert len({f["fingerprint"] for f in doc["findings"]}) == len(doc["findings"]) and all(
        f["fingerprint"] for f in doc["findings"]
    )
    run_somewhere: set[str] = set()
    every: set[str] = set()
    for runner in doc["runners"]:
        cells = run_json(capsys, "cells", "--runner", runner, "--format", "json")["cells"]
        every |= {c["id"] for c in cells}
        run_somewhere |= {c["id"] for c in cells if c["outcome"] == "run"}
    assert gaps == every - run_somewhere
    assert gaps  # fa3 on sm90 runs, trtllm-gen-only cells do not: the H100 leaves some out
    # A cell the B200 runs and the H100 does not is named as runnable elsewhere.
    text = {f["subject"]: f["message"] for f in doc["findings"]}
    assert any("it would run on" in m and "4-gpu-b200" in m for m in text.values())


def test_a_schedule_on_more_runners_has_fewer_gaps(tmp_path, capsys):
    wider = (
        WORKFLOW
        + "  blackwell:\n    runs-on: 4-gpu-b200\n    steps:\n      - run: python3 test/run_suite.py --suite base-b-test-4-gpu-b200\n"
    )
    narrow = run_json(capsys, "gaps", str(repo(tmp_path / "a")), "--format", "json")
    wide = run_json(capsys, "gaps", "--workflows", str(repo(tmp_path / "b", wider)), "--format", "json")
    assert {f["subject"] for f in wide["findings"]} < {f["subject"] for f in narrow["findings"]}


def test_no_workflows_is_exit_2(tmp_path, capsys):
    assert main(["gaps", str(tmp_path)]) == 2
    assert "no .github/workflows at or above it" in capsys.readouterr().err


def test_gaps_output_writes_the_document_it_prints(tmp_path, capsys):
    root = repo(tmp_path)
    printed = run_json(capsys, "gaps", str(root / "test"), "--format", "json")
    target = tmp_path / "gaps.json"
    assert main(["gaps", str(root / "test"), "--format", "json", "--output", str(target)]) == 0
    assert json.loads(target.read_text(encoding="utf-8")) == printed
