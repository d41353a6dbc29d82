"""Which runner profiles a set of runs-on labels means: the one place every schedule reader asks; pure.

A profile is meant when one of the labels is among its `labels`, or among its `former_labels` (a label CI used for
the same machines before a rename; said as an assumption). A label no profile lists may be in a label pack
(`matrix/data/runner_labels.toml`, each with its source): another name for a profile's machines (said as an
assumption), or a known runner without a CUDA profile (a ROCm, XPU, NPU or macOS host: its tests run there, no
guard is judged on it). Labels neither knows become an `UnknownLabel` with the nearest names, which the audits
report as the `unknown-label` finding; GitHub sends a job only to a runner that carries every label, so one
unknown label beside a known one leaves the runner unknown.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from matrix.core.profile import RunnerProfile
from matrix.schedule.model import Origin, UnknownLabel

# Labels every self-hosted or hosted runner carries: they never name a machine, so an unknown label is shown
# without them (`sm99` rather than `self-hosted, linux, x64, gpu, sm99`).
GENERIC_LABELS = frozenset({"self-hosted", "linux", "x64", "arm64", "gpu", "on-demand"})


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """The profiles a label set names (in label order), and the former labels that were used to find them."""

    profiles: tuple[str, ...]
    assumptions: tuple[str, ...] = ()
    # Known runners without a CUDA profile the labels name ("macos-14: a GitHub-hosted macOS runner").
    others: tuple[str, ...] = ()
    # Labels (other than the generic ones) that neither a profile nor a pack knows.
    unknown: tuple[str, ...] = ()


# The kinds of runner a label pack may name without a profile (matrix/data/runner_labels.toml).
KINDS = frozenset({"cpu", "cuda", "rocm", "xpu", "npu", "macos", "windows"})


@dataclass(frozen=True, kw_only=True)
class PackLabel:
    """One label (or `fnmatch` pattern) of a label pack: the profile it is another name for, or its kind."""

    match: str
    what: str
    source: str
    profile: str = ""
    kind: str = ""


@functools.cache
def label_packs() -> tuple[PackLabel, ...]:
    """The shipped label packs, exact labels first (a pattern answers only for labels no exact entry names)."""
    from matrix.core.textfiles import package_text

    doc = tomllib.loads(package_text("data/runner_labels.toml"))
    out = [
        PackLabel(
            match=str(item["match"]),
            what=str(item.get("what", "")),
            source=str(pack.get("source", "")),
            profile=str(item.get("profile", "")),
            kind=str(item.get("kind", "")),
        )
        for pack in doc.get("pack", [])
        for item in pack.get("labels", [])
    ]
    return tuple(sorted(out, key=lambda p: "*" in p.match))


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
        """The label pack entry for a label no profile lists (its profile, when named, must exist)."""
        if label not in self._packs:
            found = None
            for entry in label_packs():
                if (entry.match == label if "*" not in entry.match else fnmatch.fnmatchcase(label, entry.match)) and (
                    not entry.profile or entry.profile in self._runners
                ):
                    found = entry
                    break
            self._packs[label] = found
        return self._packs[label]

    def resolve(self, labels: Sequence[str]) -> Resolution:
        """Every profile one of `labels` names; a former label or a pack's label adds an assumption."""
        names: list[str] = []
        said: list[str] = []
        others: list[str] = []
        unknown: list[str] = []
        for label in labels:
            found = self._by_label.get(label)
            if found:
                for name, is_former in found:
                    if name not in names:
                        names.append(name)
                    if is_former:
                        said.append(f"{label} is a former label of {name}")
                continue
            if label in GENERIC_LABELS:
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
        return Resolution(
            profiles=tuple(names),
            assumptions=tuple(dict.fromkeys(said)),
            others=tuple(dict.fromkeys(others)),
            unknown=tuple(dict.fromkeys(unknown)),
        )

    def unknown(self, labels: Sequence[str], origin: Origin) -> UnknownLabel:
        """The finding for a label set no profile knows, shown without the generic labels."""
        unknown = self.resolve(labels).unknown
        label = ", ".join(unknown or [x for x in labels if x not in GENERIC_LABELS]) or ", ".join(labels) or "(no runs-on)"
        if label not in self._nearest:
            self._nearest[label] = tuple(difflib.get_close_matches(label, self._known, n=3, cutoff=0.5))
        return UnknownLabel(label=label, origin=origin, nearest=self._nearest[label])
