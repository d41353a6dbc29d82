"""A guard on a runner no profile describes is judged on what its labels say of its hardware: a test with no guard
runs anywhere; `torch.cuda.is_available()` is true on an NVIDIA host and on a ROCm host (ROCm's torch answers
through HIP), false on CPU, macOS and XPU hosts; `torch.version.hip` is set and `torch.version.cuda` None on a ROCm
host; the GPU count is the label's where it gives one; four A10Gs are a machine of compute capability 8.6; any
other fact of such a host stays unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main

WORKFLOW = """on: [pull_request]
jobs:
  tests:
    runs-on: {label}
    steps:
      - run: pytest tests
"""
GUARDED = """import pytest
import torch


@pytest.mark.skipif({condition}, reason="guarded")
def test_guarded():
    pass
"""

RUNS, SKIPS, UNKNOWN = "runs", "skips", "undetermined"


def _outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, source: str) -> str:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW.format(label=label), encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_one.py").write_text(source, encoding="utf-8")
    main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["scheduled_tests"] == 1, doc
    if any(f["kind"] == "silent-skip" for f in doc["findings"]):
        return SKIPS
    return UNKNOWN if doc["undetermined"] else RUNS


@pytest.mark.parametrize(
    "label",
    ["linux-mi300-gpu-1", "macos-14", "linux.idc.xpu", "linux.g5.12xlarge.nvidia.gpu", "windows-2022", "rack-nine", "8-gpu-h100"],
)
def test_a_test_with_no_guard_runs_on_any_runner(tmp_path, capsys, label):
    assert _outcome(tmp_path, capsys, label, "def test_plain():\n    pass\n") == RUNS


@pytest.mark.parametrize(
    ("label", "condition", "expected"),
    [
        # the CUDA API: NVIDIA and ROCm hosts have it, CPU, macOS, Windows and XPU hosts do not
        ("linux-mi300-gpu-1", "not torch.cuda.is_available()", RUNS),
        ("linux.g5.12xlarge.nvidia.gpu", "not torch.cuda.is_available()", RUNS),
        ("8-gpu-h100", "not torch.cuda.is_available()", RUNS),
        ("macos-14", "not torch.cuda.is_available()", SKIPS),
        ("linux.idc.xpu", "not torch.cuda.is_available()", SKIPS),
        ("windows-2022", "not torch.cuda.is_available()", SKIPS),
        ("linux-16-core", "not torch.cuda.is_available()", SKIPS),
        # the GPU count, where the label gives it
        ("linux-mi35x-gpu-8", "torch.cuda.device_count() < 4", RUNS),
        ("linux-mi300-gpu-1", "torch.cuda.device_count() < 2", SKIPS),
        ("linux.g5.12xlarge.nvidia.gpu", "torch.cuda.device_count() < 4", RUNS),
        ("linux.rocm.gpu.mi300", "torch.cuda.device_count() < 2", UNKNOWN),
        ("macos-14", "torch.cuda.device_count() == 0", SKIPS),
        # the torch build: ROCm's on a ROCm host
        ("linux-mi325-8gpu-sglang", "torch.version.hip is not None", SKIPS),
        ("linux-mi325-8gpu-sglang", "torch.version.hip is None", RUNS),
        ("linux-mi325-8gpu-sglang", "not torch.version.hip", RUNS),
        ("linux-mi325-8gpu-sglang", "torch.version.cuda is None", SKIPS),
        ("linux-mi325-8gpu-sglang", "torch.version.hip.startswith('5')", UNKNOWN),
        ("linux-mi325-8gpu-sglang", "torch.version.hip >= '6.0'", UNKNOWN),
        ("linux.g5.12xlarge.nvidia.gpu", "torch.version.hip is not None", RUNS),
        ("linux.g5.12xlarge.nvidia.gpu", "torch.version.cuda is None", UNKNOWN),
        # what the labels give of the architecture
        ("linux.g5.12xlarge.nvidia.gpu", "torch.cuda.get_device_capability() < (9, 0)", SKIPS),
        ("8-gpu-h100", "torch.cuda.get_device_capability() < (9, 0)", RUNS),
        (
            "linux-mi300-gpu-1",
            "torch.cuda.get_device_capability() < (9, 0)",
            RUNS,
        ),  # gfx942: torch reports capability 9.4 on ROCm
        # everything else about a host without a profile stays unknown
        ("linux-mi300-gpu-1", "torch.cuda.get_device_name() == 'x'", UNKNOWN),
        ("rack-nine", "not torch.cuda.is_available()", UNKNOWN),
    ],
)
def test_a_guard_is_judged_on_what_the_labels_say(tmp_path, capsys, label, condition, expected):
    assert _outcome(tmp_path, capsys, label, GUARDED.format(condition=condition)) == expected
