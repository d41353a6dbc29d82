"""What a runner label says of its machine (`matrix/data/runner_labels.toml`): GitHub-hosted images, ROCm hosts as
GPU projects name them, Intel XPU, multi-GPU hosts, macOS and CPU hosts: a kind, a GPU count and an architecture, or
unknown; every entry and rule of the table names its source."""

from __future__ import annotations

import re

import pytest

from matrix.core.loader import load_runners
from matrix.schedule import labels
from matrix.schedule.labels import KINDS, LabelIndex

INDEX = LabelIndex(load_runners())


@pytest.mark.parametrize(
    ("names", "profile", "hardware"),
    [
        # GitHub-hosted images and larger runners
        (("ubuntu-latest",), "cpu", None),
        (("ubuntu-24.04-arm",), "cpu", None),
        (("ubuntu-latest-4-cores",), "cpu", None),
        (("windows-2022",), "", ("windows", 0, "")),
        (("windows-latest-8-cores",), "", ("windows", 0, "")),
        (("macos-14",), "", ("macos", 0, "")),
        (("self-hosted", "macOS", "ARM64"), "", ("macos", 0, "")),
        (("linux-16-core",), "", ("cpu", 0, "")),
        (("gpu-t4-4-core",), "", ("cuda", 1, "sm75")),
        (("4-core-ubuntu-gpu-t4",), "", ("cuda", 1, "sm75")),
        # ROCm hosts
        (("linux-mi300-gpu-1",), "", ("rocm", 1, "gfx942")),
        (("linux-mi325-8gpu-sglang",), "", ("rocm", 8, "gfx942")),
        (("linux-mi35x-gpu-8",), "", ("rocm", 8, "gfx950")),
        (("linux-mi35x-gpu-8.fabric",), "", ("rocm", 8, "gfx950")),
        (("linux.rocm.gpu.2",), "", ("rocm", 2, "")),
        (("linux.rocm.gpu.gfx942.1",), "", ("rocm", 1, "gfx942")),
        (("linux.rocm.gpu.mi250",), "", ("rocm", None, "gfx90a")),
        (("linux-gfx942-8gpu-ossci-rocm",), "", ("rocm", 8, "gfx942")),
        (("linux-mi325-1gpu-ossci-rocm",), "", ("rocm", 1, "gfx942")),
        (("self-hosted", "amd-gpu"), "", ("rocm", None, "")),
        # Intel XPU, Ascend NPU
        (("linux.idc.xpu",), "", ("xpu", None, "")),
        (("intel-bmg",), "", ("xpu", None, "")),
        (("linux-aarch64-a3-16",), "", ("npu", None, "")),
        # multi-GPU NVIDIA hosts
        (("linux.g5.12xlarge.nvidia.gpu",), "", ("cuda", 4, "sm86")),
        (("linux.g4dn.12xlarge.nvidia.gpu",), "", ("cuda", 4, "sm75")),
        (("8-gpu-h100",), "", ("cuda", 8, "sm90")),
        (("4-gpu-a100",), "", ("cuda", 4, "sm80")),
        (("b300x8",), "", ("cuda", 8, "sm103")),
        (("h100x4",), "h100-x4", None),
        (("modal-a100-80gb-x2",), "", ("cuda", 2, "sm80")),
        # CPU hosts
        (("linux-amd64-cpu-8",), "", ("cpu", 0, "")),
        (("linux.24xlarge",), "", ("cpu", 0, "")),
    ],
)
def test_a_label_gives_a_profile_or_what_its_machine_is(names, profile, hardware):
    found = INDEX.resolve(names)
    assert found.profiles == ((profile,) if profile else ())
    assert not found.unknown
    if hardware is None:
        assert found.hardware is None
    else:
        assert found.hardware is not None
        assert (found.hardware.kind, found.hardware.gpus, found.hardware.arch) == hardware


@pytest.mark.parametrize("names", [("s5000-1-gpu-runner",), ("rack-nine",), ("self-hosted", "amd64")])
def test_a_label_naming_no_known_machine_stays_unknown(names):
    found = INDEX.resolve(names)
    assert found.unknown and found.hardware is None and not found.others


def test_two_labels_that_disagree_on_the_machine_describe_none():
    found = INDEX.resolve(("linux-mi300-gpu-1", "macos-14"))
    assert found.hardware is None


def test_a_gpu_host_says_which_torch_it_is_judged_with():
    found = INDEX.resolve(("linux-mi325-8gpu-sglang",))
    assert any("torch built for ROCm" in a for a in found.assumptions)


@pytest.mark.parametrize(
    ("label", "count"),
    [("linux-mi325-8gpu-sglang", 8), ("linux-mi35x-gpu-2", 2), ("h100-x4", 4), ("b200x2", 2), ("linux.rocm.gpu.gfx950.1", 1)],
)
def test_the_gpu_count_rules(label, count):
    assert labels.gpu_count(label) == count


@pytest.mark.parametrize("label", ["linux.rocm.gpu.ecosystem.gfx950", "linux-amd64-cpu-8", "ubuntu-22.04", "mi35x"])
def test_a_label_without_a_count_gives_none(label):
    assert labels.gpu_count(label) is None


@pytest.mark.parametrize(("label", "arch"), [("8-gpu-h200", "sm90"), ("b200x2", "sm100"), ("linux-mi35x-gpu-8", "gfx950")])
def test_the_model_tokens(label, arch):
    model = labels.gpu_model(label)
    assert model is not None and model.arch == arch


def test_every_entry_and_rule_names_its_source_and_a_known_kind():
    table = labels.label_table()
    for entry in table.packs:
        assert entry.source and entry.what, entry
        assert bool(entry.profile) != bool(entry.kind), entry
        assert not entry.kind or entry.kind in KINDS, entry
        assert not entry.arch or re.fullmatch(r"sm\d{2,3}|gfx[0-9a-f]{3,4}x?", entry.arch), entry
    for pattern, source in table.counts:
        assert source and pattern.groups >= 1
    for model in table.models.values():
        assert model.source and model.vendor in {"nvidia", "amd", "intel"}
