"""Which runner profiles a set of runs-on labels means: the one place every schedule reader asks; pure.

A profile is meant when one of the labels is among its `labels`, or among its `former_labels` (a label CI used for
the same machines before a rename; said as an assumption). A label no profile lists may be in a label pack
(`matrix/data/runner_labels.toml`, each with its source): another name for a profile's machines (said as an
assumption), or a known runner without a profile (a ROCm, XPU, NPU, macOS or CPU host, a CUDA host of no profile's
shape: its tests run there, and what its labels say of its hardware, `RunnerHardware`, is what a guard is judged
on). A label naming a GPU model (`8-gpu-h100`) is that model's machine, with the GPU count its name gives. Labels
none of these know become an `UnknownLabel` with the nearest names, which the audits report as the
`unknown-label` finding; GitHub sends a job only to a runner that carries every label, so one unknown label beside a
known one leaves the runner unknown. GitHub matches labels ignoring case ("Using labels with self-hosted runners").
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from matrix.core.profile import RunnerProfile
from matrix.schedule.model import Origin, RunnerHardware, RunnerPlatform, UnknownLabel

# Labels every self-hosted or hosted runner carries: they never name a machine, so an unknown label is shown
# without them (`sm99` rather than `self-hosted, linux, x64, gpu, sm99`).
GENERIC_LABELS = frozenset({"self-hosted", "linux", "x64", "arm64", "arm", "gpu", "on-demand"})


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """The profiles a label set names (in label order), and the former labels that were used to find them."""

    profiles: tuple[str, ...]
    assumptions: tuple[str, ...] = ()
    # Known runners without a CUDA profile the labels name ("macos-14: a GitHub-hosted macOS runner").
    others: tuple[str, ...] = ()
    # Labels (other than the generic ones) that neither a profile nor a pack knows.
    unknown: tuple[str, ...] = ()
    # What the runner named by `others` is, merged over its labels (None: nothing, or labels that disagree).
    hardware: RunnerHardware | None = None


# The kinds of runner a label pack may name without a profile (matrix/data/runner_labels.toml), each with the vendor
# of its GPUs when a label does not say.
KINDS: Mapping[str, str] = {
    "cpu": "",
    "cuda": "nvidia",
    "rocm": "amd",
    "xpu": "intel",
    "npu": "huawei",
    "macos": "apple",
    "windows": "",
}
_GPU_KINDS = frozenset({"cuda", "rocm", "xpu", "npu"})
_VENDOR_KINDS = {"nvidia": "cuda", "amd": "rocm", "intel": "xpu", "huawei": "npu"}


@dataclass(frozen=True, kw_only=True)
class PackLabel:
    """One label (or `fnmatch` pattern) of a label pack: the profile it is another name for, or its kind and what
    it says of the machine's GPUs."""

    match: str
    what: str
    source: str
    profile: str = ""
    kind: str = ""
    vendor: str = ""
    gpus: int | None = None
    arch: str = ""
    # The runner's operating system (`sys.platform`: linux, win32, darwin) and CPU (`platform.machine()` on Linux:
    # x86_64, aarch64), where the label says them; "" otherwise.
    os: str = ""
    machine: str = ""
    avx2: bool = False  # the CPU has AVX2 (or AVX-512), as the source says
    avx512: bool = False  # the CPU has AVX-512 F/BW/DQ/VL (oneDNN's avx512_core), as the source says


@dataclass(frozen=True, kw_only=True)
class GpuModel:
    """A GPU model a label may name: its vendor and architecture."""

    token: str
    vendor: str
    arch: str
    source: str


@dataclass(frozen=True, kw_only=True)
class LabelTable:
    """The shipped label table: pack entries (exact labels first), GPU-count rules and GPU models."""

    packs: tuple[PackLabel, ...]
    counts: tuple[tuple[re.Pattern[str], str], ...]
    models: Mapping[str, GpuModel]


@functools.cache
def label_table() -> LabelTable:
    """matrix/data/runner_labels.toml, read once."""
    from matrix.core.textfiles import package_text

    doc = tomllib.loads(package_text("data/runner_labels.toml"))
    packs = [
        PackLabel(
            match=str(item["match"]).lower(),
            what=str(item.get("what", "")),
            source=str(pack.get("source", "")),
            profile=str(item.get("profile", "")),
            kind=str(item.get("kind", "")),
            vendor=str(item.get("vendor", "")),
            gpus=_count(item.get("gpus")),
            arch=str(item.get("arch", "")),
            os=str(item.get("os", "")),
            machine=str(item.get("machine", "")),
            avx2=item.get("avx2") is True,
            avx512=item.get("avx512") is True,
        )
        for pack in doc.get("pack", [])
        for item in pack.get("labels", [])
    ]
    counts = tuple((re.compile(str(rule["pattern"])), str(rule.get("source", ""))) for rule in doc.get("count", []))
    models = {
        str(t["token"]).lower(): GpuModel(
            token=str(t["token"]).lower(), vendor=str(t["vendor"]), arch=str(t.get("arch", "")), source=str(group["source"])
        )
        for group in doc.get("model", [])
        for t in group.get("tokens", [])
    }
    return LabelTable(packs=tuple(sorted(packs, key=lambda p: "*" in p.match)), counts=counts, models=models)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def label_packs() -> tuple[PackLabel, ...]:
    """The shipped label packs, exact labels first (a pattern answers only for labels no exact entry names)."""
    return label_table().packs


_PARTS = re.compile(r"[-_.]")
_GFX = re.compile(r"gfx[0-9a-f]{3,4}")
_MODEL = re.compile(r"^([a-z]*\d+[a-z]*?)(?:x\d{1,2})?$")


def gpu_count(label: str) -> int | None:
    """The GPU count a label's name gives (`8gpu`, `gpu-8`, `h100-x4`), by the table's [[count]] rules."""
    low = label.lower()
    for pattern, _ in label_table().counts:
        found = pattern.search(low)
        if found:
            return int(found.group(1))
    return None


def gpu_model(label: str) -> GpuModel | None:
    """The GPU model a label names as one of its parts (`8-gpu-h100`, `b200x2`), by the table's [[model]] tokens."""
    models = label_table().models
    for part in _PARTS.split(label.lower()):
        if part in models:
            return models[part]
        joined = _MODEL.match(part)
        if joined and joined.group(1) in models:
            return models[joined.group(1)]
    return None


def hardware_of(label: str, entry: PackLabel | None) -> RunnerHardware | None:
    """What one label says of its machine: its pack entry's kind, GPU count and architecture, each filled from the
    label's name where the entry leaves it out; for a label no pack names, the GPU model it names."""
    model = gpu_model(label)
    if entry is not None and entry.kind:
        kind = entry.kind
        vendor = entry.vendor or KINDS.get(kind, "")
        arch = entry.arch or (model.arch if model is not None and model.vendor == vendor else "")
    elif entry is None and model is not None:
        kind, vendor, arch = _VENDOR_KINDS.get(model.vendor, ""), model.vendor, model.arch
        if not kind:
            return None
    else:
        return None
    if not arch and vendor == "amd" and (isa := _GFX.search(label.lower())) is not None:
        arch = isa.group(0)  # the label names the ISA itself: `linux.rocm.gpu.gfx942.1`
    gpus = entry.gpus if entry is not None and entry.gpus is not None else None
    if kind not in _GPU_KINDS:
        gpus = 0
    elif gpus is None:
        gpus = gpu_count(label)
    return RunnerHardware(kind=kind, vendor=vendor, gpus=gpus, arch=arch, labels=(label,))


def merged(found: Sequence[RunnerHardware]) -> RunnerHardware | None:
    """One machine's hardware from what each of its labels says; None when two labels disagree on what it is."""
    if not found:
        return None
    out = found[0]
    for other in found[1:]:
        if other.kind != out.kind or other.vendor != out.vendor:
            return None
        gpus = out.gpus if out.gpus is not None else other.gpus
        if other.gpus is not None and gpus != other.gpus:
            gpus = None  # two counts: not known which
        arch = out.arch or other.arch
        if other.arch and arch != other.arch:
            return None
        out = replace(out, gpus=gpus, arch=arch, labels=(*out.labels, *other.labels))
    return out


# What GitHub's default labels of a self-hosted runner say of it: the runner application adds one for its operating
# system and one for its architecture (docs.github.com, "Using labels with self-hosted runners": `linux`, `windows`,
# `macOS`; `x64`, `ARM`, `ARM64`), matched ignoring case.
_DEFAULT_OS: Mapping[str, str] = {"linux": "linux", "windows": "win32", "macos": "darwin"}
_DEFAULT_MACHINE: Mapping[str, str] = {"x64": "x86_64", "arm64": "aarch64"}


@functools.cache
def platform_of(labels: tuple[str, ...]) -> RunnerPlatform:
    """The operating system and CPU a runner's labels say (GitHub's default labels, then the label packs' `os` and
    `machine`); a field two labels disagree on is not known."""
    systems: set[str] = set()
    machines: set[str] = set()
    avx2 = avx512 = False
    said: list[str] = []
    for label in labels:
        low = label.lower()
        entry = _pack_entry(low)
        system = _DEFAULT_OS.get(low, entry.os if entry is not None else "")
        machine = _DEFAULT_MACHINE.get(low, entry.machine if entry is not None else "")
        avx2 = avx2 or (entry is not None and entry.avx2)
        avx512 = avx512 or (entry is not None and entry.avx512)
        if system or machine:
            said.append(label)
        if system:
            systems.add(system)
        if machine:
            machines.add(machine)
    return RunnerPlatform(
        os=next(iter(systems)) if len(systems) == 1 else "",
        machine=next(iter(machines)) if len(machines) == 1 else "",
        avx2=avx2 and len(machines) == 1,
        avx512=avx512 and len(machines) == 1,
        labels=tuple(said),
    )


def _pack_entry(low: str) -> PackLabel | None:
    """The first label pack entry that names a label (exact entries first), whatever profile it points to."""
    for entry in label_packs():
        if entry.match == low if "*" not in entry.match else fnmatch.fnmatchcase(low, entry.match):
            return entry
    return None


class LabelIndex:
    """runs-on label -> runner profiles, built once from the profiles."""

    def __init__(self, runners: Mapping[str, RunnerProfile]) -> None:
        self._by_label: dict[str, list[tuple[str, bool]]] = {}
        for name, profile in runners.items():
            for label in profile.labels:
                self._by_label.setdefault(label, []).append((name, False))
            for label in profile.former_labels:
                self._by_label.setdefault(label, []).append((name, True))
        self._known = sorted(set(self._by_label) | set(runners))
        self._nearest: dict[str, tuple[str, ...]] = {}
        self._runners = runners
        self._packs: dict[str, PackLabel | None] = {}

    def pack(self, label: str) -> PackLabel | None:
        """The label pack entry for a label no profile lists (its profile, when named, must exist); a label no entry
        names but that names a GPU model is that model's machine."""
        if label not in self._packs:
            found = None
            low = label.lower()
            for entry in label_packs():
                if (entry.match == low if "*" not in entry.match else fnmatch.fnmatchcase(low, entry.match)) and (
                    not entry.profile or entry.profile in self._runners
                ):
                    found = entry
                    break
            if found is None and (model := gpu_model(label)) is not None and model.vendor in _VENDOR_KINDS:
                count = gpu_count(label)
                many = f"{count} " if count is not None else ""
                found = PackLabel(
                    match=label,
                    what=f"{many or 'a host of '}{model.token.upper()} GPU(s) (named by the label)",
                    source=model.source,
                    kind=_VENDOR_KINDS[model.vendor],
                )
            self._packs[label] = found
        return self._packs[label]

    def resolve(self, labels: Sequence[str]) -> Resolution:
        """Every profile one of `labels` names; a former label or a pack's label adds an assumption."""
        names: list[str] = []
        said: list[str] = []
        others: list[str] = []
        unknown: list[str] = []
        machine: list[RunnerHardware] = []
        for label in labels:
            found = self._by_label.get(label)
            if found:
                for name, is_former in found:
                    if name not in names:
                        names.append(name)
                    if is_former:
                        said.append(f"{label} is a former label of {name}")
                continue
            if label.lower() in GENERIC_LABELS:
                continue
            entry = self.pack(label)
            if entry is None:
                unknown.append(label)
            elif entry.profile:
                if entry.profile not in names:
                    names.append(entry.profile)
                said.append(f"{label} is {entry.what} ({entry.source}): judged as profile {entry.profile}")
            else:
                others.append(f"{label}: {entry.what}")
                said.append(f"{label} is {entry.what} ({entry.source}): a runner without a CUDA profile")
                described = hardware_of(label, entry)
                if described is not None:
                    machine.append(described)
        hardware = merged(machine) if others and not names else None
        if hardware is not None and hardware.kind in _GPU_KINDS:
            torch = "ROCm" if hardware.kind == "rocm" else "CUDA" if hardware.kind == "cuda" else hardware.kind.upper()
            said.append(f"{', '.join(hardware.labels)}: judged as {hardware.describe()}, with torch built for {torch}")
        return Resolution(
            profiles=tuple(names),
            assumptions=tuple(dict.fromkeys(said)),
            others=tuple(dict.fromkeys(others)),
            unknown=tuple(dict.fromkeys(unknown)),
            hardware=hardware,
        )

    def unknown(self, labels: Sequence[str], origin: Origin) -> UnknownLabel:
        """The finding for a label set no profile knows, shown without the generic labels."""
        unknown = self.resolve(labels).unknown
        label = ", ".join(unknown or [x for x in labels if x not in GENERIC_LABELS]) or ", ".join(labels) or "(no runs-on)"
        if label not in self._nearest:
            self._nearest[label] = tuple(difflib.get_close_matches(label, self._known, n=3, cutoff=0.5))
        return UnknownLabel(label=label, origin=origin, nearest=self._nearest[label])
