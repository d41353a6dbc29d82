"""`specmatrix gaps`: the cells no runner of a CI schedule would run, consistent with `cells --runner R` for each."""

from __future__ import annotations

import json
from pathlib import Path

from matrix.cli.main import main
from matrix.core.expect import effective_versions, expectations
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Outcome

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


def run_nowhere() -> set[str]:
    """The cells no runner profile at all is expected to RUN (impossible configurations)."""
    matrix = load_matrix()
    versions = effective_versions(matrix, {})
    runs = {c for p in load_runners().values() for c, e in expectations(matrix, p, versions).items() if e.outcome is Outcome.RUN}
    return {c.id for c in matrix.cells} - runs


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
    assert gaps == every - run_somewhere - run_nowhere()
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


# A plain pytest project: its GPU job runs a shell script that calls pytest, on an AWS g5 runner (one A10G).
KERNEL_WORKFLOW = """
on: [push, pull_request]
jobs:
  kernels:
    runs-on: linux.g5.2xlarge.nvidia.gpu
    steps:
      - uses: actions/checkout@v4
      - run: bash ci/kernel_tests.sh
"""
KERNEL_SCRIPT = "#!/bin/bash\nset -e\npython -m pytest tests/kernels -q\n"


def kernel_repo(tmp_path: Path) -> Path:
    root = repo(tmp_path, KERNEL_WORKFLOW)
    (root / "ci").mkdir()
    (root / "ci" / "kernel_tests.sh").write_text(KERNEL_SCRIPT)
    (root / "tests" / "kernels").mkdir(parents=True)
    (root / "tests" / "kernels" / "test_rope.py").write_text("def test_rope():\n    pass\n")
    return root


def test_gaps_reads_the_runners_schedule_shows(tmp_path, capsys):
    """The runners a pytest job reaches through a script are the schedule's: gaps counts them as `schedule` does."""
    root = kernel_repo(tmp_path)
    shown = run_json(capsys, "schedule", str(root), "--format", "json")
    profiles = [p for entry in shown["entries"] for p in entry["profiles"]]
    assert profiles == ["a10g"]
    doc = run_json(capsys, "gaps", str(root), "--format", "json")
    assert doc["runners"] == ["a10g"]
    cells = {c["id"]: c["outcome"] for c in run_json(capsys, "cells", "--runner", "a10g", "--format", "json")["cells"]}
    assert {f["subject"] for f in doc["findings"]} == {c for c, o in cells.items() if o != "run"} - run_nowhere()
    assert main(["gaps", str(root)]) == 0
    tail = capsys.readouterr().out.splitlines()[-1]
    assert "(runners: a10g)" in tail and "runners: none" not in tail


def test_impossible_cells_are_counted_apart_not_listed(tmp_path, capsys):
    """A cell no runner profile runs is no gap: nothing could be scheduled for it."""
    impossible = run_nowhere()
    assert impossible  # the default matrix keeps some configurations off every profile
    doc = run_json(capsys, "gaps", str(repo(tmp_path)), "--format", "json")
    assert not impossible & {f["subject"] for f in doc["findings"]}
    assert doc["unsupported_everywhere"] == len(impossible)
    assert all("it would run on" in f["message"] for f in doc["findings"])
    assert main(["gaps", str(repo(tmp_path / "b")), "--format", "md"]) == 0
    assert f"{len(impossible)} cells run on no runner profile at all" in capsys.readouterr().out


def test_a_declared_schedule_file_adds_its_runners(tmp_path, capsys):
    root = repo(tmp_path, "on: push\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - run: ruff check .\n")
    declared = tmp_path / "gpu.toml"
    declared.write_text(
        '[schedule]\nsource = "a nightly GPU job outside the workflows"\n\n'
        '[[entry]]\njob = "nightly"\nlabels = ["4-gpu-b200"]\npytest = "pytest tests"\n',
        encoding="utf-8",
    )
    assert run_json(capsys, "gaps", str(root), "--format", "json")["runners"] == []
    doc = run_json(capsys, "gaps", str(root), "--schedule-file", str(declared), "--format", "json")
    assert doc["runners"] == ["4-gpu-b200"]
