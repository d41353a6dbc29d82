"""`specmatrix guards`: outputs, exit codes, and every bad input as exit 2 with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from matrix.registered_suite.gate import REPORT_SCHEMA
from tests.cli.test_cli import run
from tests.guards.conftest import FIXTURE_SUITE


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("SPECMATRIX_MATRIX", "SPECMATRIX_RUNNERS", "SPECMATRIX_RUNNER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def test_text_output_lists_findings_with_location_guard_and_reason(capsys, shared_suite):
    code, out, _ = run(capsys, "guards", str(shared_suite))
    assert code == 1
    assert f"{shared_suite.as_posix()}/attention/test_trtllm_mha_guard_bug.py:13: silent-skip:" in out
    assert "guard: unittest.skipIf(not (is_sm90_supported() or is_sm120_supported())" in out
    assert "3 silent-skip, 7 never-runs, 4 disabled-by-skip, 1 unscheduled, 2 unparsable" not in out  # kinds in ORDER
    assert "3 silent-skip, 7 never-runs, 1 unscheduled, 2 unparsable, 4 disabled-by-skip" in out
    assert "    fix: the matrix says trtllm_mha runs on 4-gpu-b200: add `is_sm100_supported()` to the guard" in out
    assert out.rstrip().splitlines()[-1] == "exit 1: 13 new error finding(s)"


def test_json_output_follows_the_schema(capsys, shared_suite):
    code, out, _ = run(capsys, "guards", str(shared_suite), "--format", "json")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1
    assert doc["schema"] == REPORT_SCHEMA
    assert doc["counts"]["silent-skip"] == 3
    assert sum(doc["counts"].values()) == len(doc["findings"])
    first = doc["findings"][0]
    assert set(first) == {
        "kind",
        "path",
        "line",
        "test",
        "runners",
        "guard",
        "reason",
        "failing",
        "hint",
        "severity",
        "fingerprint",
    }


def test_every_finding_carries_the_one_fingerprint_baselines_and_sarif_use(capsys, tmp_path):
    # A repository root of its own, so paths are keyed from it; the fixture suite copied under it.
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    suite = repo / "suite"
    shutil.copytree(FIXTURE_SUITE, suite)
    _, out, _ = run(capsys, "guards", str(suite), "--no-workflows", "--show", "info", "--format", "json")
    findings = json.loads(out)["findings"]
    assert all(len(f["fingerprint"]) == 16 for f in findings)
    assert len({f["fingerprint"] for f in findings}) == len(findings)
    _, out, _ = run(capsys, "guards", str(suite), "--no-workflows", "--show", "info", "--format", "sarif")
    sarif = {r["partialFingerprints"]["specmatrix/guards/v1"] for r in json.loads(out)["runs"][0]["results"]}
    assert sarif == {f["fingerprint"] for f in findings}
    run(capsys, "guards", str(suite), "--no-workflows", "--write-baseline", str(tmp_path / "b.json"))
    written = {e["fingerprint"] for e in json.loads((tmp_path / "b.json").read_text())["entries"]}
    single = {f["fingerprint"] for f in findings if f["failing"] and len(f["runners"]) <= 1}
    assert single and single <= written


@pytest.mark.parametrize("show", ["warning", "info"])
def test_markdown_fits_a_job_summary_with_details_collapsed(capsys, shared_suite, show):
    code, out, _ = run(capsys, "guards", str(shared_suite), "--format", "md", "--show", show)
    assert code == 1
    assert "**3** silent-skip" in out
    assert "<details><summary>Silent skips" in out
    assert out.count("<details>") == out.count("</details>")
    assert "The audit **fails** (exit 1)." in out
    assert len(out.splitlines()) < 100
    for line in out.splitlines():
        if line.startswith("| `"):
            assert line.count(" | ") == 3, line


@pytest.mark.parametrize("sub", ["clean", "attention/test_trtllm_mha_guard_fixed.py"])
def test_clean_tree_exits_zero(capsys, shared_suite, sub):
    code, out, _ = run(capsys, "guards", str(shared_suite / sub))
    assert code == 0
    assert "no findings\nexit 0: no new error findings" in out


def test_global_runners_file_extends_the_profiles(capsys, shared_suite, tmp_path):
    extra = tmp_path / "extra.toml"
    extra.write_text('[runner.1-gpu-a100]\ngpus = 1\ncapability = [8, 0]\nrunner_configs = ["1-gpu-large"]\n', encoding="utf-8")
    code, out, _ = run(
        capsys,
        "--runners",
        str(extra),
        "guards",
        str(shared_suite / "attention"),
        "--only-runners",
        "1-gpu-a100",
        "--show",
        "info",
    )
    # On an A100 neither guard passes: both files skip there, by design (the matrix has no trtllm_mha kernel on sm80).
    assert code == 0
    assert out.count("by-design-skip: test_trtllm_mha_guard_") == 2
    assert "trtllm_mha cannot run on 1-gpu-a100 (sm80): rule trtllm-mha-arch" in out


def test_assume_installed_and_suites_options(capsys, shared_suite, tmp_path):
    suites = tmp_path / "suites.txt"
    suites.write_text("base-b-kernel-unit-test-1-gpu-large\n", encoding="utf-8")
    code, out, _ = run(
        capsys,
        "guards",
        str(shared_suite / "module_level" / "test_importorskip.py"),
        "--suites",
        str(suites),
        "--assume-installed",
        "flashinfer",
    )
    assert code == 0, out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["guards", "{tmp}/nowhere"], "no such file or directory"),
        (["guards", "{suite}", "--only-runners", "4-gpu-b300"], "unknown runner '4-gpu-b300'"),
        (["guards", "{suite}", "--suites", "{tmp}/missing.txt"], "--suites"),
        (["guards", "{suite}", "--suites", "{tmp}/bad.json"], "malformed JSON"),
        (["guards", "{suite}", "--suite-map", "{tmp}/missing.toml"], "cannot read"),
        (["guards", "{suite}", "--suite-map", "{tmp}/badmap.toml"], "unknown runner profile"),
        (["guards", "{suite}", "--json", "--md"], "not allowed with argument"),
        (["guards"], "required: path"),
    ],
)
def test_bad_input_is_exit_2_with_one_line(capsys, shared_suite, tmp_path, args, message):
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    (tmp_path / "badmap.toml").write_text('[suite]\n"stress" = ["no-such-runner"]\n', encoding="utf-8")
    argv = [a.format(tmp=tmp_path, suite=shared_suite) for a in args]
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    # Deprecated spellings (--json, --md) say so on a line each; the error itself is one line.
    errors = [line for line in err.strip().splitlines() if not line.startswith("specmatrix: warning: ")]
    assert len(errors) == 1
    assert errors[0].startswith("specmatrix: error: ")
    assert message in errors[0]


def test_unparsable_file_is_a_finding_not_a_crash(capsys, tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "test_cut.py").write_text("register_cuda_ci(1, 'x'\n", encoding="utf-8")
    (tree / "test_latin1.py").write_bytes(b"# \xe9\n")
    code, out, err = run(capsys, "guards", str(tree))
    assert code == 1
    assert err == ""
    assert "test_cut.py:1: unparsable" in out
    assert "test_latin1.py:1: unparsable" in out and "not UTF-8" in out


def test_hidden_and_cache_folders_are_not_read(capsys, tmp_path):
    tree = tmp_path / "t"
    for folder in (".venv", "__pycache__", "ok"):
        (tree / folder).mkdir(parents=True)
        (tree / folder / "test_x.py").write_text("register_cuda_ci(1, 'base-b-test-4-gpu-b200')\n", encoding="utf-8")
    code, out, _ = run(capsys, "guards", str(tree), "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["files_scanned"] == 1
    assert Path(doc["root"]) == tree
