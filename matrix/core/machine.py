"""What a machine is (facts) and which runner profile it satisfies; pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from matrix.core.errors import DetectionError, UnknownRunnerError
from matrix.core.model import RunnerProfile
from matrix.core.selectors import nearest_hint

AUTO = "auto"


@dataclass(frozen=True, kw_only=True)
class MachineFacts:
    """Detected (or injected) GPUs and library versions of this machine."""

    gpus: int
    capabilities: tuple[tuple[int, int], ...] = ()
    names: tuple[str, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    overridden: bool = False

    @property
    def capability(self) -> tuple[int, int] | None:
        return self.capabilities[0] if self.capabilities else None

    def describe(self) -> str:
        if not self.gpus:
            gpu = "no GPU"
        else:
            cap = self.capability
            kinds = ", ".join(sorted(set(self.names))) or "GPU"
            gpu = f"{self.gpus} x {kinds} (sm{cap[0]}{cap[1]})" if cap else f"{self.gpus} GPU(s)"
        return gpu + (" [detection overridden by SPECMATRIX_DETECT]" if self.overridden else "")


def differences(profile: RunnerProfile, facts: MachineFacts) -> list[str]:
    """How this machine falls short of the profile; empty when it satisfies it."""
    out: list[str] = []
    if facts.gpus < profile.gpus:
        out.append(f"needs {profile.gpus} GPU(s), sees {facts.gpus}")
    if profile.gpus and facts.gpus:
        caps = set(facts.capabilities)
        want = profile.capability
        if len(caps) > 1:
            out.append(f"GPUs of mixed compute capability {sorted(caps)}")
        elif want is not None and facts.capability != want:
            have = facts.capability
            out.append(f"needs sm{want[0]}{want[1]}, sees sm{have[0]}{have[1]}" if have else "capability unknown")
        if profile.device_name and facts.names and not all(profile.device_name in n for n in facts.names):
            out.append(f"needs {profile.device_name} GPUs, sees {', '.join(sorted(set(facts.names)))}")
    return out


def find_runner(runners: Mapping[str, RunnerProfile], name: str) -> RunnerProfile:
    """A profile by name; an unknown name is an error naming the nearest ones."""
    try:
        return runners[name]
    except KeyError:
        hint = nearest_hint(name, runners, noun="runners", listing="`specmatrix runners`")
        raise UnknownRunnerError(f"unknown runner {name!r}{hint}") from None


def auto_runner(runners: Mapping[str, RunnerProfile], facts: MachineFacts) -> RunnerProfile:
    """The profile this machine satisfies most exactly (same arch, most GPUs, name match first)."""
    fitting = [p for p in runners.values() if not differences(p, facts) and (p.gpus > 0) == (facts.gpus > 0)]
    if not fitting:
        raise DetectionError(f"no runner profile fits this machine ({facts.describe()}); add one with --runners FILE")

    def rank(p: RunnerProfile) -> tuple[int, int, int]:
        return (p.gpus, int(bool(p.device_name)), -len(p.name))

    return max(fitting, key=rank)


def claim_runner(runners: Mapping[str, RunnerProfile], name: str, facts: MachineFacts) -> RunnerProfile:
    """Resolve `name` (or `auto`) for a run on this machine; a claim the machine cannot back is an error."""
    if name == AUTO:
        return auto_runner(runners, facts)
    profile = find_runner(runners, name)
    gaps = differences(profile, facts)
    if gaps:
        raise DetectionError(
            f"runner {name!r} claimed, but this machine does not satisfy it: {'; '.join(gaps)} ({facts.describe()})"
        )
    return profile
