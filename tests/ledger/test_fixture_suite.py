"""The fixture suite, run the way sglang's CI runs a suite (a process per file), under a faked 4-gpu-b200.

The ledger command must find each planted case and nothing else; each fix turns its own finding green.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ledger.conftest import FIXTURE_SUITE, ledger_cli, read_records, run_suite

# CPython 3.12.1's unittest exits 5 when every test of a run skipped (3.11.2, 3.11.7 and 3.13.0 exit 0), so
# a file whose every test skips fails there; these cases assert the exit 0 CI sees on the others.
UNITTEST_ALL_SKIPPED_EXITS_5 = pytest.mark.skipif(
    sys.version_info[:3] == (3, 12, 1), reason="CPython 3.12.1's unittest exits 5 when every test skipped"
)

PLANTED = {
    "attention/test_dense_backend_guard.py": {
        ("silent-skip", "attention/test_dense_backend_guard.py::TestDenseBackend::test_decode"),
        ("silent-skip", "attention/test_dense_backend_guard.py::TestDenseBackend::test_prefill"),
    },
    "spec/test_main_exit_skip.py": {("ran-nothing", "spec/test_main_exit_skip.py")},
    "spec/test_ci_only.py": {("silent-skip", "spec/test_ci_only.py::TestSpeculativeAcceptance::test_long_acceptance_sweep")},
    "kernels/test_optional_kernel.py": {("silent-skip", "kernels/test_optional_kernel.py::TestFusedAdd::test_fused_add")},
}
ALL_PLANTED = set().union(*PLANTED.values())


def failing(doc: dict[str, object]) -> set[tuple[str, str]]:
    findings = doc["findings"]
    assert isinstance(findings, list)
    return {(f["kind"], f["subject"]) for f in findings if f["failing"]}


def judge(
    capsys: pytest.CaptureFixture[str], suite: Path, ledger: Path, *extra: str | Path
) -> tuple[int, dict[str, object], str]:
    report = suite.parent / "report.json"
    code, _, err = ledger_cli(capsys, ledger, "--root", suite / "registered", "--format", "json", "--output", report, *extra)
    assert err == ""
    text_code, out, err = ledger_cli(capsys, ledger, "--root", suite / "registered", *extra)
    assert err == "" and text_code == code
    return code, json.loads(report.read_text(encoding="utf-8")), out


@pytest.fixture(scope="module")
def unfixed_run(hook_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """The suite as planted, run once for the two tests that read that run: (suite, ledger, the runner's result)."""
    suite = tmp_path_factory.mktemp("unfixed") / "suite"
    shutil.copytree(FIXTURE_SUITE, suite)
    ledger = suite.parent / "ledger.jsonl"
    return suite, ledger, run_suite(hook_venv, suite, ledger)


@UNITTEST_ALL_SKIPPED_EXITS_5
def test_the_runner_calls_the_suite_green(unfixed_run: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    """What CI sees without the ledger: every file exits 0, so the suite passes."""
    _, _, done = unfixed_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Test Summary: 5/5 passed" in done.stdout


def test_each_planted_case_is_found_and_nothing_else(
    unfixed_run: tuple[Path, Path, subprocess.CompletedProcess[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    suite, ledger, _ = unfixed_run
    code, doc, out = judge(capsys, suite, ledger)
    assert code == 1
    assert failing(doc) == ALL_PLANTED
    # Each static `undetermined` guard is shown settled by what happened.
    settled = {f["subject"]: f["message"] for f in doc["findings"] if f["kind"] == "settled"}  # type: ignore[attr-defined,index]
    # The optional import is the one guard the static audit cannot decide (is_in_ci() comes from the profile's
    # `in_ci` fact, so the static audit already calls that one never-runs).
    assert set(settled) == {"kernels/test_optional_kernel.py::TestFusedAdd"}
    assert settled["kernels/test_optional_kernel.py::TestFusedAdd"].startswith(
        "static: undetermined (unittest.skipUnless(HAVE_KERNELS"
    )
    assert settled["kernels/test_optional_kernel.py::TestFusedAdd"].endswith(
        "runtime on 4-gpu-b200: skipped 'fixture_kernel is not installed'"
    )
    assert doc["runners"] == [{"runner": "4-gpu-b200", "registered": 5, "executed": 5, "statuses": {"passed": 4, "skipped": 4}}]
    # The CPU-only file is registered, but not for a suite this runner serves.
    assert "cpu/test_cpu_parsing.py" not in out
    # Every record names the faked machine.
    assert {json.dumps(r["runner"], sort_keys=True) for r in read_records(ledger)} == {
        json.dumps({"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}, sort_keys=True)
    }


@pytest.mark.parametrize("fixed", sorted(PLANTED))
def test_fixing_one_planted_case_turns_only_it_green(
    fixed: str, hook_venv: Path, suite_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    suite = suite_copy(f"registered/{fixed}")
    ledger = suite.parent / "ledger.jsonl"
    run_suite(hook_venv, suite, ledger)
    code, doc, _ = judge(capsys, suite, ledger)
    assert failing(doc) == ALL_PLANTED - PLANTED[fixed]
    assert code == 1


def test_all_fixed_is_clean(hook_venv: Path, suite_copy: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    suite = suite_copy(*(f"registered/{rel}" for rel in PLANTED))
    ledger = suite.parent / "ledger.jsonl"
    run_suite(hook_venv, suite, ledger)
    code, doc, out = judge(capsys, suite, ledger)
    assert (code, failing(doc)) == (0, set())
    assert doc["runners"][0]["statuses"] == {"passed": 9}  # type: ignore[index]
    assert out.rstrip().endswith("0 failing; exit 0")
