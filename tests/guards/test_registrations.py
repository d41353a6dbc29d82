"""Reading register_*_ci calls: positional and keyword forms, stage/runner_config, problems."""

from __future__ import annotations

import ast

import pytest

from matrix.guards import source as registrations
from matrix.guards.model import Platform
from matrix.guards.source import platform_of, read_registrations

# call -> (platform, suite, nightly, disabled, est_time, problem substring or None)
CASES: dict[str, tuple[Platform, str | None, bool, str | None, float | None, str | None]] = {
    'register_cuda_ci(60, "stage-b-test-1-gpu-large")': (Platform.CUDA, "stage-b-test-1-gpu-large", False, None, 60, None),
    'register_cuda_ci(60, "nightly-1-gpu", True)': (Platform.CUDA, "nightly-1-gpu", True, None, 60, None),
    'register_cuda_ci(60, "base-b-test-1-gpu-small", False, "flaky")': (
        Platform.CUDA,
        "base-b-test-1-gpu-small",
        False,
        "flaky",
        60,
        None,
    ),
    'register_cuda_ci(est_time=9.5, suite="x", nightly=True, disabled="why")': (Platform.CUDA, "x", True, "why", 9.5, None),
    'register_cuda_ci(est_time=10, stage="base-b", runner_config="4-gpu-b200")': (
        Platform.CUDA,
        "base-b-test-4-gpu-b200",
        False,
        None,
        10,
        None,
    ),
    'ci.register_cpu_ci(est_time=3, suite="base-a-test-cpu")': (Platform.CPU, "base-a-test-cpu", False, None, 3, None),
    'register_amd_ci(est_time=3, suite="stage-b-test-1-gpu-small-amd")': (
        Platform.AMD,
        "stage-b-test-1-gpu-small-amd",
        False,
        None,
        3,
        None,
    ),
    'register_npu_ci(est_time=3, suite="nightly-1-npu-a3", nightly=True)': (
        Platform.NPU,
        "nightly-1-npu-a3",
        True,
        None,
        3,
        None,
    ),
    'register_xpu_ci(1, "stage-a-test-1-gpu-xpu")': (Platform.XPU, "stage-a-test-1-gpu-xpu", False, None, 1, None),
    'register_mlx_ci(1, "stage-a-unit-test-mlx")': (Platform.MLX, "stage-a-unit-test-mlx", False, None, 1, None),
    'register_musa_ci(1, "nightly-musa-1-gpu", True)': (Platform.MUSA, "nightly-musa-1-gpu", True, None, 1, None),
    "register_cuda_ci(est_time=10, suite=SUITE)": (Platform.CUDA, None, False, None, None, "must be a literal"),
    'register_cuda_ci(est_time=10, suite="a", stage="b", runner_config="c")': (Platform.CUDA, None, False, None, 10, "not both"),
    'register_cuda_ci(est_time=10, stage="base-b")': (Platform.CUDA, None, False, None, 10, "go together"),
    "register_cuda_ci(est_time=10)": (Platform.CUDA, None, False, None, 10, "no suite"),
    'register_cuda_ci(suite="x")': (Platform.CUDA, "x", False, None, None, "est_time is missing"),
    'register_cuda_ci(1, "x", "yes")': (Platform.CUDA, None, False, None, None, "nightly must be"),
    'register_cuda_ci(*args, suite="x")': (Platform.CUDA, None, False, None, None, "cannot be read"),
    'register_cuda_ci(1, "x", gpus=2)': (Platform.CUDA, None, False, None, None, "unknown argument"),
    # sglang's collector accepts an empty suite on a disabled registration; without disabled= it is still an error.
    'register_npu_ci(est_time=400, suite="", nightly=True, disabled="no runner")': (
        Platform.NPU,
        "",
        True,
        "no runner",
        400,
        None,
    ),
    'register_cuda_ci(est_time=4, suite="", disabled="off")': (Platform.CUDA, "", False, "off", 4, None),
    'register_npu_ci(est_time=400, suite="", nightly=True)': (Platform.NPU, None, False, None, None, "non-empty string"),
}


def read_one(call: str):
    source = f"from sglang.test.ci.ci_register import *\n{call}\n"
    (reg,) = read_registrations(ast.parse(source), source)
    return reg


@pytest.mark.parametrize("call", sorted(CASES))
def test_registration_forms(call):
    platform, suite, nightly, disabled, est_time, problem = CASES[call]
    reg = read_one(call)
    assert reg.platform is platform
    assert reg.line == 2
    assert reg.source == call
    if problem is None:
        assert reg.problem is None
        assert (reg.suite, reg.nightly, reg.disabled, reg.est_time) == (suite, nightly, disabled, est_time)
    else:
        assert reg.problem is not None
        assert problem in reg.problem


def test_swapped_positional_order_turns_the_positional_cases_red(monkeypatch):
    monkeypatch.setattr(registrations, "POSITIONAL", ("est_time", "suite", "disabled", "nightly"))
    wrong = [c for c in CASES if c.startswith("register_cuda_ci(60") and (r := read_one(c)) and r.nightly != CASES[c][2]]
    assert wrong


@pytest.mark.parametrize(
    ("name", "platform"),
    [
        ("register_cuda_ci", Platform.CUDA),
        ("register_rocm_ci", Platform.AMD),
        ("register_tpu_ci", Platform.OTHER),
        ("register_cuda", None),
        ("cuda_ci", None),
    ],
)
def test_platform_of(name, platform):
    assert platform_of(name) is platform


def test_registrations_inside_functions_are_not_read():
    source = "def helper():\n    register_cuda_ci(1, 'x')\nif True:\n    register_cuda_ci(2, 'y')\n"
    assert [r.suite for r in read_registrations(ast.parse(source), source)] == ["y"]
