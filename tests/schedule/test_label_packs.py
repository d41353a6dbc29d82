"""Label packs: a label no profile lists is another name for a profile's machines, a known runner without a CUDA
profile, or unknown; never dropped."""

from __future__ import annotations

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.labels import KINDS, LabelIndex, label_packs

RUNNERS = load_runners()
INDEX = LabelIndex(RUNNERS)


@pytest.mark.parametrize(
    ("labels", "profiles", "others", "unknown"),
    [
        (("linux.g5.4xlarge.nvidia.gpu",), ("a10g",), (), ()),
        (("linux.g6.4xlarge.experimental.nvidia.gpu",), ("l4",), (), ()),
        (("linux.aws.h100",), ("h100",), (), ()),
        (("linux.4xlarge",), ("cpu",), (), ()),
        (("macos-14",), (), ("macos-14",), ()),
        (("self-hosted", "runner-gfx942-a"), (), ("runner-gfx942-a",), ()),
        (("linux.idc.xpu",), (), ("linux.idc.xpu",), ()),
        (("linux-aarch64-a3-2",), (), ("linux-aarch64-a3-2",), ()),
        (("linux.g5.12xlarge.nvidia.gpu",), (), ("linux.g5.12xlarge.nvidia.gpu",), ()),
        (("self-hosted", "rack-nine"), (), (), ("rack-nine",)),
        (("sm86", "rack-nine"), ("a10g",), (), ("rack-nine",)),
        (("modal-h100",), ("h100",), (), ()),
        (("modal-cpu",), ("cpu",), (), ()),
        (("modal-a100-80gb-x2",), (), ("modal-a100-80gb-x2",), ()),
    ],
)
def test_a_label_resolves_to_a_profile_a_known_runner_or_unknown(labels, profiles, others, unknown):
    found = INDEX.resolve(labels)
    assert found.profiles == profiles
    assert tuple(o.split(":")[0] for o in found.others) == others
    assert found.unknown == unknown
    if profiles and not set(labels) & {label for p in RUNNERS.values() for label in p.labels}:
        assert any("judged as profile" in a for a in found.assumptions)  # a pack's name for a profile is said


def test_every_pack_entry_names_an_existing_profile_or_a_known_kind_and_its_source():
    for entry in label_packs():
        assert entry.source and entry.what, entry
        assert bool(entry.profile) != bool(entry.kind), entry
        assert not entry.profile or entry.profile in RUNNERS, entry
        assert not entry.kind or entry.kind in KINDS, entry


def test_a_pack_entry_for_a_missing_profile_is_not_used(monkeypatch):
    index = LabelIndex({k: v for k, v in RUNNERS.items() if k != "a10g"})
    found = index.resolve(("linux.g5.4xlarge.nvidia.gpu",))
    assert found.profiles == () and found.unknown == ("linux.g5.4xlarge.nvidia.gpu",)
