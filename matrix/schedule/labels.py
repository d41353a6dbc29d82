"""Which runner profiles a set of runs-on labels means: the one place every schedule reader asks; pure.

A profile is meant when one of the labels is among its `labels`, or among its `former_labels` (a label CI used for
the same machines before a rename; said as an assumption). Labels no profile knows become an `UnknownLabel` with
the nearest names, which the audits report as the `unknown-label` finding.
"""

from __future__ import annotations

import difflib
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

    def resolve(self, labels: Sequence[str]) -> Resolution:
        """Every profile one of `labels` names; a former label adds an assumption."""
        names: list[str] = []
        former: list[str] = []
        for label in labels:
            for name, is_former in self._by_label.get(label, ()):
                if name not in names:
                    names.append(name)
                if is_former:
                    former.append(f"{label} is a former label of {name}")
        return Resolution(profiles=tuple(names), assumptions=tuple(dict.fromkeys(former)))

    def unknown(self, labels: Sequence[str], origin: Origin) -> UnknownLabel:
        """The finding for a label set no profile knows, shown without the generic labels."""
        label = ", ".join(x for x in labels if x not in GENERIC_LABELS) or ", ".join(labels) or "(no runs-on)"
        if label not in self._nearest:
            self._nearest[label] = tuple(difflib.get_close_matches(label, self._known, n=3, cutoff=0.5))
        return UnknownLabel(label=label, origin=origin, nearest=self._nearest[label])
