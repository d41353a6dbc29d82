"""Silent skips judged with the matrix (what the test tests, where its backend runs) and with where the test still runs.

Each tree is written here, fresh: a dual-registered test per backend, a suite that runs on two runners, a gate on a
CI fact. Every case is red on the audit that judged each guard alone (every certain skip an error, "drop the
registration" as its hint).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.errors import ConfigError
from matrix.guards.model import GuardFindingKind as K
from matrix.registered_suite import audit_tree
from matrix.registered_suite.audit import parse_suite_map
from matrix.registered_suite.intent import MatrixIntent

H100, B200, B200X8 = "1-gpu-h100", "4-gpu-b200", "8-gpu-b200"

DUAL = 'register_cuda_ci(est_time=30, stage="base-b", runner_config="4-gpu-b200")\n' + (
    'register_cuda_ci(est_time=30, stage="base-b", runner_config="1-gpu-large")\n'
)


def write(root: Path, rel: str, body: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")


def module(registrations: str, guard: str, cls: str, imports: str = "") -> str:
    return (
        "import unittest\n"
        "from sglang.srt.utils import get_device_sm, is_sm90_supported, is_sm120_supported, is_in_ci\n"
        "from sglang.test.ci.ci_register import register_cuda_ci\n"
        f"{imports}\n{registrations}\n\n{guard}\nclass {cls}(unittest.TestCase):\n"
        "    def test_it(self):\n        self.assertEqual(1, 1)\n"
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    # The seed's class: trtllm_mha has trtllm-gen kernels on sm100, the gate forgets them.
    write(
        root,
        "dense/test_paged_trtllm_mha.py",
        module(DUAL, '@unittest.skipUnless(is_sm90_supported() or is_sm120_supported(), "xqa")', "TestPagedDecode"),
    )
    # fa3 is Hopper-only: the B200 registration skipping it is by design; it runs on the H100.
    write(
        root,
        "dense/test_hopper_attn.py",
        module(DUAL, '@unittest.skipIf(get_device_sm() >= 100, "Hopper kernels")', "TestFA3Prefill"),
    )
    # A backend the matrix does not know, gated to Blackwell: a registration that only ever skips.
    write(
        root,
        "mla/test_latent_decode.py",
        module(DUAL, '@unittest.skipIf(get_device_sm() < 100, "sm100 kernels")', "TestLatentDecode"),
    )
    # Not an arch gate: a CI fact, on a test that also runs elsewhere, stays an error.
    write(
        root, "misc/test_ci_gate.py", module(DUAL, '@unittest.skipIf(is_in_ci() and get_device_sm() >= 100, "slow")', "TestSlow")
    )
    # The matrix knows it through its imports: a triton attention test with an arch gate that admits sm90 only.
    write(
        root,
        "dense/test_dense_import.py",
        module(
            DUAL,
            '@unittest.skipUnless(is_sm90_supported(), "hopper")',
            "TestDense",
            "from sglang.srt.layers.attention.triton_backend import TritonAttnBackend",
        ),
    )
    return root


def findings(report, path: str):
    return {f.kind: f for f in report.findings if f.path == path}


def test_a_skip_where_the_matrix_runs_the_backend_is_an_error_naming_the_rule(tree, runners):
    got = findings(audit_tree(tree, runners), "dense/test_paged_trtllm_mha.py")
    error = got[K.SILENT_SKIP]
    assert error.runners == (B200,)
    assert "trtllm_mha runs on 4-gpu-b200 (sm100), as trtllm-gen: rule trtllm-mha-arch" in error.message
    assert "source sglang 0.5.23 TRTLLMHAAttnBackend.is_xqa_impl" in error.message
    assert "test name TestPagedDecode" not in error.message  # found by the file name, and says so
    assert "file name test_paged_trtllm_mha.py names trtllm_mha" in error.message
    assert "is_sm100_supported()" in error.hint and "drop" not in error.hint


def test_a_skip_where_the_matrix_says_the_backend_cannot_run_is_by_design(tree, runners):
    got = findings(audit_tree(tree, runners), "dense/test_hopper_attn.py")
    assert set(got) == {K.BY_DESIGN_SKIP}
    info = got[K.BY_DESIGN_SKIP]
    assert info.runners == (B200,)
    assert "fa3 cannot run on 4-gpu-b200 (sm100): rule fa3-hopper-only" in info.message
    assert f"it runs on {H100}" in info.message
    assert not info.failing


def test_an_arch_gate_on_a_backend_the_matrix_does_not_know_is_a_warning_with_a_fitting_hint(tree, runners):
    got = findings(audit_tree(tree, runners), "mla/test_latent_decode.py")
    assert set(got) == {K.SKIP_ONLY_REGISTRATION}
    warning = got[K.SKIP_ONLY_REGISTRATION]
    assert warning.runners == (H100,) and not warning.failing
    assert "only ever skips this test, which runs on 4-gpu-b200" in warning.message
    assert "drop that registration" in warning.hint


def test_a_gate_on_a_ci_fact_stays_an_error(tree, runners):
    got = findings(audit_tree(tree, runners), "misc/test_ci_gate.py")
    assert set(got) == {K.SILENT_SKIP}


def test_the_backend_is_read_from_the_imports_when_no_name_says_it(tree, runners):
    got = findings(audit_tree(tree, runners), "dense/test_dense_import.py")
    assert "the file's imports names triton" in got[K.SILENT_SKIP].message
    assert "triton runs on 4-gpu-b200 (sm100): rule triton-sm80" in got[K.SILENT_SKIP].message


def test_one_suite_on_two_runners_gets_no_drop_hint(tmp_path, runners):
    root = tmp_path / "suite"
    write(
        root,
        "big/test_blackwell_model.py",
        module(
            'register_cuda_ci(est_time=900, suite="nightly-8-gpu-shared", nightly=True)\n',
            '@unittest.skipUnless(get_device_sm() >= 100, "fp4")',
            "TestFp4Model",
        ),
    )
    suite_map = parse_suite_map({"suite": {"nightly-8-gpu-shared": ["8-gpu-h200", B200X8]}}, "map.toml")
    got = findings(audit_tree(root, runners, suite_map=suite_map), "big/test_blackwell_model.py")
    warning = got[K.SKIP_ONLY_REGISTRATION]
    assert warning.runners == ("8-gpu-h200",)
    assert "through the same suite nightly-8-gpu-shared" in warning.message
    assert warning.hint.startswith("nothing to drop: suite nightly-8-gpu-shared also runs on 8-gpu-b200")


def test_a_test_of_one_runner_only_still_never_runs(tmp_path, runners):
    root = tmp_path / "suite"
    single = 'register_cuda_ci(est_time=30, stage="base-b", runner_config="4-gpu-b200")\n'
    write(root, "dense/test_fa3_only.py", module(single, '@unittest.skipIf(get_device_sm() >= 100, "Hopper")', "TestFA3Decode"))
    got = findings(audit_tree(root, runners), "dense/test_fa3_only.py")
    assert set(got) == {K.NEVER_RUNS}


def test_an_override_file_decides_what_a_test_tests(tree, tmp_path, runners):
    overrides = tmp_path / "tested.toml"
    overrides.write_text('[test]\n"mla/test_latent_decode.py::*" = "trtllm_mha"\n"dense/test_hopper_attn.py" = ""\n')
    report = audit_tree(tree, runners, intent=MatrixIntent.from_paths(None, overrides))
    latent = findings(report, "mla/test_latent_decode.py")
    # trtllm_mha runs on sm90 (xqa): the gate that keeps it off the H100 is an error now.
    assert "trtllm_mha runs on 1-gpu-h100 (sm90), as xqa" in latent[K.SILENT_SKIP].message
    assert "override 'mla/test_latent_decode.py::*'" in latent[K.SILENT_SKIP].message
    hopper = findings(report, "dense/test_hopper_attn.py")
    assert set(hopper) == {K.SKIP_ONLY_REGISTRATION}  # no backend: judged by where it runs


def test_an_override_naming_an_unknown_backend_is_refused(tree, tmp_path, runners):
    overrides = tmp_path / "tested.toml"
    overrides.write_text('[test]\n"x" = "cutlass"\n')
    with pytest.raises(ConfigError, match="expected one of"):
        audit_tree(tree, runners, intent=MatrixIntent.from_paths(None, overrides))


def test_cli_tested_by_bad_file_is_exit_2(tree, tmp_path, capsys):
    overrides = tmp_path / "tested.toml"
    overrides.write_text("[nope]\n")
    code = main(["guards", str(tree), "--no-workflows", "--no-cache", "--tested-by", str(overrides)])
    assert code == 2
    assert "unknown key 'nope'" in capsys.readouterr().err
