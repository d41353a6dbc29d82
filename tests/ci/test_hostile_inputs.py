"""Hostile inputs through the CLI's `main()`: each one once gave a wrong verdict with exit 0, hung, or lost data.

`S` is a test file registered on base-b-test-4-gpu-b200 whose class guard excludes sm100: `guards` on it is a
never-runs finding, exit 1. Every variant below must keep that verdict or be refused with one line and exit 2.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ci.cli_run import clean_environment, run

REPO = Path(__file__).resolve().parents[2]
S = """\
import unittest

from ci_helpers import is_sm90_supported, register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-test-4-gpu-b200")


@unittest.skipIf(not is_sm90_supported(), "r")
class TestKernel(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)
"""
B200 = {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}
H200 = {"source": "SPECMATRIX_DETECT", "gpus": 1, "capability": [9, 0], "name": "NVIDIA H200"}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_environment(monkeypatch, tmp_path)


def refused(*argv: object) -> str:
    """The command is refused: exit 2 and one `specmatrix:` line on stderr."""
    code, _, err = run(*argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specmatrix: "), err
    return lines[0]


def suite(tmp_path: Path, data: bytes | str = S, name: str = "test_s.py") -> Path:
    root = tmp_path / "suite"
    root.mkdir(exist_ok=True)
    (root / name).write_bytes(data.encode() if isinstance(data, str) else data)
    return root


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Path]:
    os.mkfifo(path)
    try:
        yield path
    finally:
        path.unlink()


# --- sources decoded as Python decodes them ---------------------------------------------------------------


LATIN1 = "# -*- coding: latin-1 -*-\n" + S.replace('"r"', '"caf\xe9"')


@pytest.mark.parametrize("data", [b"\xef\xbb\xbf" + S.encode(), LATIN1.encode("latin-1")], ids=["utf8-bom", "latin1-cookie"])
def test_guards_reads_a_bom_or_a_coding_cookie_as_python_does(tmp_path: Path, data: bytes) -> None:
    code, out, _ = run("guards", suite(tmp_path, data), "--json", "--no-cache")
    kinds = [f["kind"] for f in json.loads(out)["findings"]]
    assert (code, "never-runs" in kinds, "unparsable" in kinds) == (1, True, False)


def test_a_cookie_python_refuses_stays_unparsable(tmp_path: Path) -> None:
    code, out, _ = run("guards", suite(tmp_path, b"# coding: no-such-codec\n" + S.encode()), "--json", "--no-cache")
    assert code == 1 and [f["kind"] for f in json.loads(out)["findings"]] == ["unparsable"]


def ledger_line(kind: str, pid: int, runner: dict[str, Any] = B200, **fields: Any) -> str:
    return json.dumps({"ledger": 1, "runner": runner, "kind": kind, **fields, "pid": pid, "time": 1.0}) + "\n"


def skipped_run(path: str, runner: dict[str, Any] = B200) -> str:
    return (
        ledger_line("process", 7, runner, script=path, argv=[])
        + ledger_line("test", 7, runner, file=path, test=f"{path}::TestKernel::test_decode", status="skipped", reason="r")
        + ledger_line("exit", 7, runner, status=0, how="end", tests=1)
    )


def test_ledger_root_with_a_bom_keeps_the_runtime_skip(tmp_path: Path) -> None:
    root = suite(tmp_path, b"\xef\xbb\xbf" + S.encode())
    ledger = tmp_path / "l.jsonl"
    ledger.write_text(skipped_run("test_s.py"))
    code, out, _ = run("ledger", ledger, "--root", root)
    assert code == 1 and "4-gpu-b200: 1/1 registered files ran" in out and "silent-skip" in out


# --- the results cache is checked, never trusted --------------------------------------------------------


def _cache_entries(cache: Path) -> tuple[Path, dict[str, tuple[str, str]]]:
    from matrix.registered_suite.cache import parse_cache

    (path,) = cache.glob("guards-*.cache")
    return path, parse_cache(path.read_bytes())


@pytest.mark.parametrize("edit", ["empty", "null", "line-text", "path-int"])
def test_an_edited_cache_entry_is_a_miss(tmp_path: Path, edit: str) -> None:
    from matrix.registered_suite.cache import cache_text

    root = suite(tmp_path)
    cache = tmp_path / "c"
    assert run("guards", root, "--cache-dir", cache)[0] == 1
    path, entries = _cache_entries(cache)
    edited = {}
    for key, (sealed, text) in entries.items():
        audit = json.loads(text)  # the entry's text; its seal is kept, as an edit by hand keeps it
        if edit == "empty":
            audit["findings"] = []
        elif edit == "null":
            audit = None
        elif edit == "line-text":
            audit["findings"][0][2] = "7"  # a finding is the list of its fields: kind, path, line, ...
        else:
            audit["findings"][0][1] = 5
        edited[key] = (sealed, json.dumps(audit, sort_keys=True, separators=(",", ":")))
    path.write_text(cache_text(edited))
    code, out, _ = run("guards", root, "--cache-dir", cache)
    assert code == 1 and "never-runs" in out


# --- selection and report consistency -------------------------------------------------------------------


def test_audit_flags_a_must_run_cell_recorded_as_an_expected_skip(tmp_path: Path) -> None:
    report = _one_cell_report()
    report["cells"][0].update(status="skipped-expected", skip_reason="x")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    code, out, _ = run("audit", path)
    assert code == 1 and "unexpected-skip" in out


def _matrix_with_value(tmp_path: Path, value: str) -> Path:
    text = (REPO / "matrix/data/matrix.toml").read_text()
    assert 'values = ["bf16", "fp16", "fp8kv"]' in text
    path = tmp_path / "m.toml"
    path.write_text(
        text.replace('values = ["bf16", "fp16", "fp8kv"]', f'values = ["bf16", "fp16", "fp8kv", {json.dumps(value)}]')
    )
    return path


@pytest.mark.parametrize("value", ["a,b", "x{y}", "x[1]", "a b", "a\nb", "a*", "a!b"])
@pytest.mark.parametrize("command", [["cells"], ["shard", "--runner", "4-gpu-b200", "--shards", "2"]], ids=["cells", "shard"])
def test_axis_values_with_selector_metacharacters_are_refused_at_load(tmp_path: Path, value: str, command: list[str]) -> None:
    line = refused("--matrix", _matrix_with_value(tmp_path, value), *command)
    assert "may only contain" in line


# --- what was read: 0 files is never a clean audit --------------------------------------------------------


def test_guards_on_an_empty_folder_or_a_folder_symlink_only_tree(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no Python file read" in refused("guards", empty)
    real = suite(tmp_path)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "linked").symlink_to(real, target_is_directory=True)
    line = refused("guards", tree)
    assert "no Python file read" in line and "linked" in line


def test_guards_on_a_fifo_or_a_device(tmp_path: Path) -> None:
    with fifo(tmp_path / "test_f.py") as path:
        assert "FIFO" in refused("guards", path)
    assert "device" in refused("guards", "/dev/null")


def test_a_fifo_planted_in_the_tree_is_reported_not_waited_on(tmp_path: Path) -> None:
    root = suite(tmp_path)
    os.mkfifo(root / "test_pipe.py")
    # Not a regular file, so not listed; the audit returns at once with S's finding.
    code, out, _ = run("guards", root, "--no-cache")
    assert code == 1 and "never-runs" in out


@pytest.mark.parametrize("root", ["empty", "/dev/null"])
def test_ledger_root_that_holds_nothing(tmp_path: Path, root: str) -> None:
    ledger = tmp_path / "l.jsonl"
    ledger.write_text(skipped_run("test_s.py"))
    if root == "empty":
        (tmp_path / "empty").mkdir()
    line = refused("ledger", ledger, "--root", tmp_path / root if root == "empty" else root)
    assert "no Python file read" in line or "device" in line


def test_ledger_of_files_the_runner_does_not_serve(tmp_path: Path) -> None:
    root = suite(tmp_path)
    ledger = tmp_path / "l.jsonl"
    ledger.write_text(skipped_run("test_s.py", runner=H200))
    code, out, _ = run("ledger", ledger, "--root", root)
    assert code == 1 and "not-served" in out and "1-gpu-h200" in out
    code, out, _ = run("ledger", ledger, "--root", root, "--partial")
    assert code == 0 and "not-served" in out


def test_an_empty_ledger_is_refused_not_clean(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    ledger.write_text("\n")
    assert "empty ledger" in refused("ledger", ledger, "--root", suite(tmp_path))


def test_outcomes_counted_at_exit_but_unreadable_fail(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    lines = skipped_run("test_s.py").splitlines(keepends=True)
    ledger.write_text(lines[0] + lines[1][:40] + "\n" + lines[2])  # the skip's line cut in the middle
    code, out, _ = run("ledger", ledger, "--root", suite(tmp_path))
    assert code == 1 and "lost-records" in out


def test_a_baseline_with_one_fingerprint_twice_is_refused(tmp_path: Path) -> None:
    root = suite(tmp_path)
    base = tmp_path / "b.json"
    assert run("guards", root, "--write-baseline", base, "--no-cache")[0] == 0
    doc = json.loads(base.read_text())
    first = dict(doc["entries"][0], expires="2020-01-01")
    doc["entries"] = [first, dict(first, expires=None)]
    base.write_text(json.dumps(doc))
    assert "repeats entry 1" in refused("guards", root, "--baseline", base, "--no-cache")


# --- special files are refused where input is read ---------------------------------------------------------


@pytest.mark.parametrize("option", ["--baseline", "--suites", "--matrix", "audit"])
def test_a_fifo_as_input_is_refused_without_blocking(tmp_path: Path, option: str) -> None:
    root = suite(tmp_path)
    with fifo(tmp_path / "in.json") as path:
        if option == "--matrix":
            argv: list[object] = ["--matrix", path, "cells"]
        elif option == "audit":
            argv = ["audit", path]
        else:
            argv = ["guards", root, option, path]
        assert "FIFO" in refused(*argv)


def test_guards_refuses_more_than_the_job_cap(tmp_path: Path) -> None:
    assert "--jobs 400" in refused("guards", suite(tmp_path), "--jobs", "400")


def test_an_oversized_audited_file_is_unparsable_not_parsed(tmp_path: Path) -> None:
    big = S + "X = 1\n" * 200_000  # 1.2 MB
    code, out, _ = run("guards", suite(tmp_path, big), "--json", "--no-cache")
    findings = json.loads(out)["findings"]
    assert code == 1 and [f["kind"] for f in findings] == ["unparsable"] and "KiB" in findings[0]["reason"]


# --- outputs never replace inputs; the writer keeps modes --------------------------------------------------


def test_guards_output_onto_an_audited_file_is_refused(tmp_path: Path) -> None:
    root = suite(tmp_path)
    assert "inputs" in refused("guards", root, "--output", root / "test_s.py")
    assert (root / "test_s.py").read_text() == S


@pytest.mark.parametrize("option", ["--output", "--summary"])
def test_ledger_output_onto_the_ledger_is_refused(tmp_path: Path, option: str) -> None:
    root = suite(tmp_path)
    ledger = tmp_path / "l.jsonl"
    ledger.write_text(skipped_run("test_s.py"))
    before = ledger.read_bytes()
    assert "inputs" in refused("ledger", ledger, "--root", root, option, ledger)
    assert ledger.read_bytes() == before


def test_the_atomic_writer_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    from matrix.core.atomic import write_text_atomic

    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0o600)
    write_text_atomic(path, "[]")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "[]"


def _one_cell_report(matrix: str = "frozen-kv-mtp-draft-attention") -> dict[str, Any]:
    """A plugin report of one must-run cell that passed on 4-gpu-b200."""
    cell = "draft-triton-topk1-page1-hd128-gqa4-bf16-graph"
    return {
        "schema": "specmatrix.report/1",
        "matrix": matrix,
        "runner": {"name": "4-gpu-b200", "gpus": 4, "capability": [10, 0], "labels": ["4-gpu-b200"], "skip_policy": "strict"},
        "versions": {},
        "detection_overridden": True,
        "created": "2026-11-30T00:00:00+00:00",
        "cells": [
            {
                "nodeid": f"t.py::t[{cell}]",
                "cell": cell,
                "test": "t.py::t",
                "expected": "run",
                "rule": None,
                "reason": "no rule applies",
                "status": "passed",
            }
        ],
        "outside": [],
        "findings": [],
        "planned": 1,
    }


def test_coverage_refuses_a_report_of_another_matrix(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_one_cell_report("another-matrix")))
    assert "another-matrix" in refused("coverage", path, "--out", tmp_path / "out", "--no-heatmap")


def test_coverage_into_its_own_report_folder_runs_twice(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "r.json").write_text(json.dumps(_one_cell_report()))
    first = run("coverage", folder, "--out", folder, "--no-heatmap")
    second = run("coverage", folder, "--out", folder, "--no-heatmap")
    assert first[0] == second[0] and "1 report(s)" in second[1], second


# --- the hook never stops or changes the process it observes ----------------------------------------------


def _hooked(ledger: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = f"import matrix.ledger.hook\n{code}"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SPECMATRIX_")}
    environ.update(SPECMATRIX_LEDGER=str(ledger), PYTHONPATH=str(REPO), **env)
    return subprocess.run([sys.executable, "-c", script], env=environ, capture_output=True, text=True, timeout=20, check=False)


UNITTEST_RUN = """
import sys, unittest
class T(unittest.TestCase):
    def test_a(self):
        self.skipTest("r")
unittest.main(argv=["x"], exit=False)
print("ran")
"""


def test_the_hook_on_a_fifo_with_no_reader_never_blocks(tmp_path: Path) -> None:
    with fifo(tmp_path / "ledger") as path:
        done = _hooked(path, UNITTEST_RUN)
    assert done.returncode == 0 and "ran" in done.stdout


def test_the_hook_never_appends_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    (tmp_path / "ledger").symlink_to(target)
    done = _hooked(tmp_path / "ledger", UNITTEST_RUN)
    assert done.returncode == 0 and "ran" in done.stdout and target.read_text() == ""


def test_a_deeply_nested_detect_still_records_the_skip(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    done = _hooked(ledger, UNITTEST_RUN, SPECMATRIX_DETECT="[" * 100_000)
    assert done.returncode == 0
    records = [json.loads(x) for x in ledger.read_text().splitlines()]
    assert [r["status"] for r in records if r["kind"] == "test"] == ["skipped"]


def test_a_test_id_over_a_mebibyte_is_still_a_readable_record(tmp_path: Path) -> None:
    from matrix.ledger.hook import State, record_test
    from matrix.ledger.records import read_ledger

    ledger = tmp_path / "l.jsonl"
    state = State(str(ledger), str(tmp_path))
    state.started = True
    record_test(state, "test_s.py", "test_s.py::T::" + "x" * (1024 * 1024 + 10), "skipped", "r")
    read = read_ledger(ledger)
    assert read.bad_lines == () and [t.status.value for p in read.processes for t in p.tests] == ["skipped"]


def test_the_step_summary_on_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    from matrix.audit.reports import append_step_summary
    from matrix.core.errors import OutputError
    from matrix.core.report import read_report

    report = tmp_path / "r.json"
    report.write_text(json.dumps(_one_cell_report()))
    with fifo(tmp_path / "summary") as path, pytest.raises(OutputError, match=r"cannot append|not a regular file"):
        append_step_summary(read_report(report), {"GITHUB_STEP_SUMMARY": str(path)})
