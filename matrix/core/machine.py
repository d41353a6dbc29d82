"""What a machine is (facts) and which runner profile it satisfies; pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from matrix.core.errors import DetectionError, UnknownRunnerError
from matrix.core.profile import RunnerProfile
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


_TOKEN = re.compile(r"[A-Za-z0-9]+")


def device_name_matches(wanted: str, seen: str) -> bool:
    """`wanted`'s tokens appear as consecutive whole tokens of `seen`, ignoring case.

    "H200" matches "NVIDIA H200" but "H20" does not (a substring test once detected 8 x H200 as 8-gpu-h20).
    """
    want = [t.lower() for t in _TOKEN.findall(wanted)]
    have = [t.lower() for t in _TOKEN.findall(seen)]
    if not want:
        return False
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


def differences(profile: RunnerProfile, facts: MachineFacts, *, exact_count: bool = True) -> list[str]:
    """How this machine differs from the profile; empty when it satisfies it.

    GPU counts must be equal for detection (an 8-GPU host is not a 4-GPU runner); a claimed profile
    (`exact_count=False`) may use fewer GPUs than the machine has.
    """
    out: list[str] = []
    if facts.gpus < profile.gpus or (exact_count and facts.gpus != profile.gpus):
        out.append(f"needs {profile.gpus} GPU(s), sees {facts.gpus}")
    if profile.gpus and facts.gpus:
        caps = set(facts.capabilities)
        want = profile.capability
        if len(caps) > 1:
            out.append(f"GPUs of mixed compute capability {sorted(caps)}")
        elif want is not None and facts.capability != want:
            have = facts.capability
            out.append(f"needs sm{want[0]}{want[1]}, sees sm{have[0]}{have[1]}" if have else "capability unknown")
        if profile.device_name and facts.names and not all(device_name_matches(profile.device_name, n) for n in facts.names):
            seen = ", ".join(repr(n) for n in sorted(set(facts.names)))
            out.append(f"needs GPUs named {profile.device_name!r}, sees {seen}")
    return out


def find_runner(runners: Mapping[str, RunnerProfile], name: str) -> RunnerProfile:
    """A profile by name; an unknown name is an error naming the nearest ones."""
    try:
        return runners[name]
    except KeyError:
        hint = nearest_hint(name, runners, noun="runners", listing="`specmatrix runners`")
        raise UnknownRunnerError(f"unknown runner {name!r}{hint}") from None


NEAREST_SHOWN = 3


def nearest_profiles(runners: Mapping[str, RunnerProfile], facts: MachineFacts) -> list[tuple[RunnerProfile, list[str]]]:
    """The profiles closest to this machine, each with what separates it: fewest gaps, then nearest GPU count."""
    scored = [(p, differences(p, facts)) for p in runners.values()]

    def distance(entry: tuple[RunnerProfile, list[str]]) -> tuple[int, int, str]:
        profile, gaps = entry
        return (len(gaps), abs(profile.gpus - facts.gpus), profile.name)

    return sorted(scored, key=distance)[:NEAREST_SHOWN]


def auto_runner(runners: Mapping[str, RunnerProfile], facts: MachineFacts) -> RunnerProfile:
    """The profile this machine satisfies exactly (GPU count, arch, device name); a named device wins a tie, then
    a profile that serves runner configs."""
    fitting = [p for p in runners.values() if not differences(p, facts)]
    if not fitting:
        near = "; ".join(f"{p.name}: {', '.join(gaps)}" for p, gaps in nearest_profiles(runners, facts))
        raise DetectionError(
            f"no runner profile fits this machine ({facts.describe()}); nearest: {near}; add one with --runners FILE"
        )

    def rank(p: RunnerProfile) -> tuple[int, int, str]:
        # Then a profile serving sglang runner configs: a B200 machine whose name was not read is the 4-gpu-b200
        # runner, not the 4-gpu-gb200 one (the same sm100 GPUs on a Grace host, which no config serves yet).
        return (int(bool(p.device_name)), int(bool(p.runner_configs)), p.name)

    return max(fitting, key=rank)


def claim_runner(runners: Mapping[str, RunnerProfile], name: str, facts: MachineFacts) -> RunnerProfile:
    """Resolve `name` (or `auto`) for a run on this machine; a claim the machine cannot back is an error."""
    if name == AUTO:
        return auto_runner(runners, facts)
    profile = find_runner(runners, name)
    gaps = differences(profile, facts, exact_count=False)
    if gaps:
        raise DetectionError(
            f"runner {name!r} claimed, but this machine does not satisfy it: {'; '.join(gaps)} ({facts.describe()})"
        )
    return profile
