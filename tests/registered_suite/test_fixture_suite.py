"""The audit over the synthetic fixture suite: exact findings, no false positives, nothing executed."""

from __future__ import annotations

import contextlib
import runpy
import shutil
import subprocess
import sys

import pytest

from matrix.guards.model import GuardFindingKind, GuardReport
from matrix.registered_suite import audit_tree
from matrix.registered_suite.audit import load_suite_map

from .conftest import FIXTURE_SUITE

K = GuardFindingKind
H100, B200, RTX5090, CPU = "1-gpu-h100", "4-gpu-b200", "1-gpu-5090", "cpu"
BUG = "attention/test_trtllm_mha_guard_bug.py"
FIXED = "attention/test_trtllm_mha_guard_fixed.py"

B200X8 = "8-gpu-b200"
IP = "interprocedural"

# (kind, test node id, runners): every finding the fixture suite must produce, and nothing else.
EXPECTED: set[tuple[K, str, tuple[str, ...]]] = {
    (K.SILENT_SKIP, f"{BUG}::TestTRTLLMMHADecode", (B200,)),
    (K.SKIP_ONLY_REGISTRATION, "marks/test_pytestmark_list.py", (H100,)),
    (K.SILENT_SKIP, "marks/test_pytestmark_single.py", (RTX5090,)),
    (K.SKIP_ONLY_REGISTRATION, "methods/test_method_guards.py::test_trtllm_gen_prefill", (H100,)),
    (K.SKIP_ONLY_REGISTRATION, "setup/test_setup_guards.py::TestNeedsBlackwellSM", (H100,)),
    (K.SKIP_ONLY_REGISTRATION, "setup/test_setup_guards.py::TestHopperOnlySetUp", (B200,)),
    (K.NEVER_RUNS, "aliases/test_module_aliases.py::TestHopperPath", (B200,)),
    (K.NEVER_RUNS, "module_level/test_module_skip.py", (CPU,)),
    (K.UNSCHEDULED, "scheduling/test_nightly_without_flag.py", (B200,)),
    (K.UNPARSABLE, "broken/test_syntax_error.py", ()),
    (K.UNPARSABLE, "registrations/test_bad_registration.py", ()),
    (K.DISABLED, "scheduling/test_disabled.py", (RTX5090,)),
    (K.UNDETERMINED, "module_level/test_importorskip.py", (H100,)),
    (K.UNDETERMINED, "undetermined/test_unknown_guards.py::TestUnknowns::test_env", (H100,)),
    (K.UNDETERMINED, "undetermined/test_unknown_guards.py::TestUnknowns::test_flashinfer", (H100,)),
    # The local helper is followed now; it reads an environment variable, so it stays unknown.
    (K.UNDETERMINED, "undetermined/test_unknown_guards.py::TestUnknowns::test_local_helper", (H100,)),
    (K.UNMAPPED, "scheduling/test_suite_typo.py", ()),
    (K.OUT_OF_SCOPE, "out_of_scope/test_amd_only.py", ()),
    (K.UNREGISTERED, "unregistered/test_not_registered.py", ()),
    # An unconditional method skip is a deliberate disable, not an arch mismatch.
    (K.DISABLED_BY_SKIP, "methods/test_method_guards.py::TestMethodGuards::test_flaky", (H100, B200)),
    # Guards through this file's own helpers, redefinitions, decorator factories and __main__ blocks.
    (K.SKIP_ONLY_REGISTRATION, f"{IP}/test_local_helper_capability.py::TestFp4GemmSm120", (B200,)),
    (K.SKIP_ONLY_REGISTRATION, f"{IP}/test_shadowed_predicate.py::TestTmemAllocator", (RTX5090,)),
    (K.NEVER_RUNS, f"{IP}/test_early_return_helper.py::TestTmaMulticast", (H100,)),
    (K.NEVER_RUNS, f"{IP}/test_decorator_factory.py::TestWgmmaPath", (B200,)),
    (K.NEVER_RUNS, f"{IP}/test_decorator_factory.py::TestFa3Path", (B200,)),
    (K.NEVER_RUNS, f"{IP}/bench_main_exit.py", (H100,)),
    # try/except ImportError fallback: unknown, not "always None".
    (K.UNDETERMINED, "imports/test_import_fallback.py::TestFastDecodePlan", (H100,)),
    # CI facts from the profiles.
    (K.NEVER_RUNS, "ci_facts/test_ci_env.py::TestLongContextSweep", (H100, B200)),
    (K.SILENT_SKIP, "ci_facts/test_ci_env.py::TestParallelDecode::test_tp4", (H100,)),
    # Other platforms: an empty suite with disabled= is a disabled registration; ROCm may run what CUDA skips.
    (K.DISABLED, "platforms/test_npu_disabled.py", ()),
    (K.OUT_OF_SCOPE, "platforms/test_npu_disabled.py", ()),
    (K.OUT_OF_SCOPE, "platforms/test_rocm_path.py", ()),
    # ROCm-only, in a file that registers for AMD too: it runs where it belongs (out-of-scope, not never-runs).
    (K.OUT_OF_SCOPE, "platforms/test_rocm_path.py::TestAiterPagedDecode", (H100,)),
    # Kinds that mean one thing each; one row per test and kind.
    (K.DISABLED_BY_SKIP, "kinds/test_unconditional_skips.py::TestOverlapScheduler", (H100, B200)),
    (K.DISABLED_BY_SKIP, "kinds/test_unconditional_skips.py::TestChunkedPrefill", (H100, B200)),
    (K.DISABLED_BY_SKIP, "kinds/test_module_disabled.py", (H100,)),
    (K.SKIP_ONLY_REGISTRATION, "kinds/test_one_row_per_test.py::TestWgmmaDecode", (B200, B200X8)),
    # Hostile guards: past the evaluation budget, never a crash.
    (K.UNDETERMINED, "hostile/test_long_sum.py::TestHostile", (H100,)),
    (K.UNDETERMINED, "hostile/test_not_chain.py::TestHostile", (H100,)),
    (K.UNDETERMINED, "hostile/test_huge_literal.py::TestHostile", (H100,)),
    (K.UNDETERMINED, "hostile/test_square_chain.py::TestHostile", (H100,)),
}
CLEAN_FILES = (
    FIXED,
    "clean/test_clean_guards.py",
    "clean/test_clean_cpu.py",
    "scheduling/test_nightly_with_flag.py",
    "scheduling/test_nightly_flag_on_pr_suite.py",
    "registrations/test_registration_forms.py",
    "helpers/common_utils.py",
    f"{IP}/bench_main_exit_ok.py",
)


def found(report: GuardReport) -> set[tuple[K, str, tuple[str, ...]]]:
    return {(f.kind, f.scope, f.runners) for f in report.findings}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, runners) -> GuardReport:
    """One audit of one private copy, shared by the tests that only read its findings (a report is immutable)."""
    suite = tmp_path_factory.mktemp("audited") / "suite"
    shutil.copytree(FIXTURE_SUITE, suite)
    return audit_tree(suite, runners)


def test_every_planted_finding_and_nothing_else(report):
    assert found(report) == EXPECTED
    assert report.exit_code == 1


@pytest.mark.parametrize("path", CLEAN_FILES)
def test_no_finding_on_clean_files(report, path):
    assert [f for f in report.findings if f.path == path] == []


def test_domain_case_two_buggy_guard_is_found_and_the_fix_is_clean(report):
    (bug,) = [f for f in report.findings if f.path == BUG]
    assert bug.kind == K.SILENT_SKIP
    assert bug.runners == (B200,)
    assert bug.location == f"{BUG}:13"
    assert bug.source.startswith("unittest.skipIf(not (is_sm90_supported() or is_sm120_supported())")
    assert "is_sm90_supported() is False; is_sm120_supported() is False" in bug.message
    assert not [f for f in report.findings if f.path == FIXED]


def test_removing_the_fix_turns_the_fixed_file_red(suite_copy, runners):
    fixed = suite_copy / FIXED
    fixed.write_text(fixed.read_text().replace(" or is_sm100_supported()", ""), encoding="utf-8")
    report = audit_tree(suite_copy, runners)
    assert (K.SILENT_SKIP, f"{FIXED}::TestTRTLLMMHADecode", (B200,)) in found(report)


def test_counts_of_files(report):
    assert (report.files_scanned, report.test_files, report.registered_files) == (41, 40, 38)
    assert report.runners == (CPU, H100, B200, B200X8, RTX5090)


def test_assumed_installed_flashinfer_settles_those_guards(shared_suite, runners):
    report = audit_tree(shared_suite, runners, installed=["flashinfer"])
    gone = {
        (K.UNDETERMINED, "module_level/test_importorskip.py", (H100,)),
        (K.UNDETERMINED, "undetermined/test_unknown_guards.py::TestUnknowns::test_flashinfer", (H100,)),
    }
    assert found(report) == EXPECTED - gone


def test_suite_list_makes_unknown_suites_unscheduled(shared_suite, runners, tmp_path):
    known = frozenset({"base-b-test-4-gpu-b200", "stage-b-test-1-gpu-large", "nightly-4-gpu-b200"})
    report = audit_tree(shared_suite, runners, known_suites=known)
    unscheduled = {f.path: f.message for f in report.of_kind(K.UNSCHEDULED)}
    assert "did you mean base-b-test-4-gpu-b200?" in unscheduled["scheduling/test_suite_typo.py"]
    assert "not in the --suites list" in unscheduled["marks/test_pytestmark_single.py"]
    assert "nightly=False" in unscheduled["scheduling/test_nightly_without_flag.py"]
    assert "scheduling/test_nightly_with_flag.py" not in unscheduled


def test_only_runners_keeps_findings_that_concern_them(shared_suite, runners):
    report = audit_tree(shared_suite, runners, only_runners=[B200])
    expected = {e for e in EXPECTED if B200 in e[2] or e[0] is K.UNPARSABLE}
    assert found(report) == expected
    assert report.runners == (B200,)


def test_the_audit_never_imports_or_runs_the_suite(suite_copy, runners):
    marker = suite_copy / "execution" / "IMPORTED.marker"
    audit_tree(suite_copy, runners)
    done = subprocess.run(
        [sys.executable, "-m", "matrix", "guards", str(suite_copy), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert not marker.exists()
    assert not list(suite_copy.rglob("__pycache__"))


def test_the_marker_probe_works_when_the_file_is_executed(suite_copy):
    marker = suite_copy / "execution" / "IMPORTED.marker"
    # Without sglang installed the import fails, but only after the marker is written.
    with contextlib.suppress(ImportError):
        runpy.run_path(str(suite_copy / "execution" / "test_marker_if_imported.py"))
    assert marker.exists()


def test_a_single_file_can_be_audited(shared_suite, runners):
    report = audit_tree(shared_suite / BUG, runners, suite_map=load_suite_map())
    assert {(f.kind, f.scope) for f in report.findings} == {(K.SILENT_SKIP, "test_trtllm_mha_guard_bug.py::TestTRTLLMMHADecode")}
