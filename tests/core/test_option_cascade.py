"""Every command reads the resolved options: `--replace-runner` and `[tool.specmatrix]` reach each of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main

# 4-gpu-b200 redefined as a Hopper machine: a guard that admits only sm90 then runs there.
HOPPER_B200 = """[runner.4-gpu-b200]
gpus = 4
in_ci = true
capability = [9, 0]
device_name = "H200"
labels = ["4-gpu-b200"]
runner_configs = ["4-gpu-b200"]
skip_policy = "strict"
"""
SM90_ONLY = (
    "import unittest\n"
    "from sglang.test.ci.ci_register import register_cuda_ci\n"
    "from sglang.srt.utils import is_sm90_supported\n\n"
    'register_cuda_ci(est_time=60, suite="stage-c-test-4-gpu-b200")\n\n\n'
    '@unittest.skipIf(not is_sm90_supported(), "needs sm90")\n'
    "class TestA(unittest.TestCase):\n"
    "    def test_a(self):\n"
    "        self.assertTrue(True)\n"
)
CELL = "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph"
H200_FACTS = {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [9, 0], "name": "NVIDIA H200"}


def ledger_of_one_run(script: str) -> str:
    """What the start-up hook writes for one process that ran one passing test of `script`."""
    common = {"ledger": 1, "runner": H200_FACTS, "pid": 7, "time": 1.0}
    records = [
        {**common, "kind": "process", "script": script, "argv": []},
        {**common, "kind": "test", "file": script, "test": f"{script}::TestA::test_a", "status": "passed"},
        {**common, "kind": "exit", "status": 0, "how": "sys.exit", "tests": 1},
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "mine.toml").write_text(HOPPER_B200, encoding="utf-8")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_a.py").write_text(SM90_ONLY, encoding="utf-8")
    (tmp_path / "ledger.jsonl").write_text(ledger_of_one_run("test_a.py"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPECMATRIX_DETECT", '{"gpus": 4, "capability": [9, 0], "name": "NVIDIA H200"}')
    monkeypatch.delenv("SPECMATRIX_RUNNERS", raising=False)
    monkeypatch.delenv("SPECMATRIX_REPLACE_RUNNERS", raising=False)
    return tmp_path


COMMANDS = {
    "cells": ["cells", "--runner", "4-gpu-b200", "--format", "json"],
    "explain": ["explain", CELL, "--runner", "4-gpu-b200"],
    "runners": ["runners", "--format", "json"],
    "detect": ["detect", "--format", "json"],
    "shard": ["shard", "--runner", "4-gpu-b200", "--shards", "2"],
    "register": ["register", "--runner", "4-gpu-b200", "--out", "generated"],
    "guards": ["guards", "suite", "--no-cache", "--jobs", "1"],
    "ledger": ["ledger", "ledger.jsonl", "--root", "suite", "--runner", "4-gpu-b200", "--partial"],
}
# What shows that the redefined (sm90) profile was used, not the built-in sm100 one.
SEES_SM90 = {
    "cells": lambda out: {c["id"]: c["outcome"] for c in json.loads(out)["cells"]}[CELL] == "run",
    "explain": lambda out: "sm90" in out and ": RUN" in out,
    "runners": lambda out: {r["name"]: r for r in json.loads(out)["runners"]}["4-gpu-b200"]["capability"] == [9, 0],
    "detect": lambda out: "4-gpu-b200" not in json.loads(out)["unsatisfied"],
    "shard": lambda out: '"4-gpu-b200"' in out,
    "register": lambda out: "4-gpu-b200" in out,
    "guards": lambda out: "no findings" in out or "never-runs" not in out,
    "ledger": lambda out: "4-gpu-b200" in out,
}


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("command", COMMANDS)
def test_replace_runner_reaches_every_command(project: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, err = _run(capsys, ["--runners", "mine.toml", "--replace-runner", "4-gpu-b200", *COMMANDS[command]])
    assert code != 2, err
    assert "--replace-runner" not in err
    assert SEES_SM90[command](out), out


@pytest.mark.parametrize("command", COMMANDS)
def test_pyproject_runner_files_reach_every_command(project: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.specmatrix]\nrunners = "mine.toml"\nreplace_runners = ["4-gpu-b200"]\n', encoding="utf-8"
    )
    code, out, err = _run(capsys, COMMANDS[command])
    assert code != 2, err
    assert SEES_SM90[command](out), out


def test_without_replace_runner_the_redefinition_is_refused(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in COMMANDS.values():
        code, _, err = _run(capsys, ["--runners", "mine.toml", *argv])
        assert code == 2 and "--replace-runner 4-gpu-b200" in err, argv


def test_guards_judges_on_the_redefined_profile(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, COMMANDS["guards"])[0] == 1  # built-in 4-gpu-b200 is sm100: the sm90-only class never runs
    code, out, _ = _run(capsys, ["--runners", "mine.toml", "--replace-runner", "4-gpu-b200", *COMMANDS["guards"]])
    assert code == 0, out


@pytest.mark.parametrize(
    ("argv", "warning"),
    [
        (["cells", "--runner", "4-gpu-b200", "--json"], "--json is deprecated; use --format json"),
        (["runners", "--json"], "--json is deprecated; use --format json"),
        (["detect", "--json"], "--json is deprecated; use --format json"),
        (
            ["shard", "--runner", "4-gpu-b200", "--shards", "2", "--format", "gha"],
            "--format gha is deprecated; use --format github",
        ),
        (["guards", "suite", "--no-cache", "--md"], "--md is deprecated; use --format md"),
    ],
)
def test_old_spellings_work_with_one_warning_line(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], warning: str
) -> None:
    code, out, err = _run(capsys, argv)
    assert code in (0, 1) and out
    assert err.splitlines()[0] == f"specmatrix: warning: {warning}"
    assert sum("warning" in line for line in err.splitlines()) == 1


@pytest.mark.parametrize("command", ["cells", "runners", "detect", "explain", "guards", "shard", "register", "ledger"])
def test_output_writes_what_would_be_printed(project: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    argv = ["--runners", "mine.toml", "--replace-runner", "4-gpu-b200", *COMMANDS[command]]
    _, printed, _ = _run(capsys, argv)
    code, out, err = _run(capsys, [*argv, "--output", "out.txt"])
    assert code in (0, 1), err
    assert out == "" and (project / "out.txt").read_text(encoding="utf-8") == printed


@pytest.mark.parametrize("target", ["mine.toml", "resolved"])
def test_output_is_never_one_of_the_files_the_command_line_names(
    project: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    before = (project / "mine.toml").read_bytes()
    # As written, and the same file spelt another way.
    output = "mine.toml" if target == "mine.toml" else str((project / "mine.toml").resolve())
    code, _, err = _run(capsys, ["--runners", "mine.toml", "cells", "--output", output])
    assert code == 2 and err.count("\n") == 1 and "is one of this command's inputs" in err
    assert (project / "mine.toml").read_bytes() == before


def test_every_command_takes_format_and_output() -> None:
    """The shared names exist everywhere: `--format` and `--output` in every command that prints a result."""
    import argparse

    from matrix.cli.main import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, command in sub.choices.items():
        flags = {flag for action in command._actions for flag in action.option_strings}
        assert {"--format", "--output"} <= flags, name
