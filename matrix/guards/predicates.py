"""What the guard helpers of sglang and torch return on a runner profile (docs/sources.md#guard-helpers).

A predicate returns a plain value, or `Unknown` when the profile cannot say.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from matrix.core.model import RunnerProfile


@dataclass(frozen=True, kw_only=True)
class Unknown:
    """A value the profile does not determine; `why` says which fact is missing."""

    why: str


@dataclass(frozen=True, kw_only=True)
class RunnerFacts:
    """A profile plus what the audit is told about installed modules."""

    profile: RunnerProfile
    installed: frozenset[str] = frozenset()

    def describe(self) -> str:
        p = self.profile
        if not p.gpus or p.capability is None:
            return f"{p.name}: no GPU"
        name = f", {p.device_name}" if p.device_name else ""
        return f"{p.name}: sm{p.sm}, {p.gpus} GPU(s){name}"


Predicate = Callable[[RunnerFacts], object]


def _major_in(*majors: int) -> Predicate:
    def predicate(facts: RunnerFacts) -> object:
        cap = facts.profile.capability
        # sglang's is_smNN_supported() returns False off CUDA rather than raising.
        return cap is not None and facts.profile.gpus > 0 and cap[0] in majors

    return predicate


def _device_sm(facts: RunnerFacts) -> object:
    # sglang get_device_sm() is major*10+minor, 0 when CUDA is not available.
    return facts.profile.sm if facts.profile.gpus and facts.profile.sm is not None else 0


def _capability(facts: RunnerFacts) -> object:
    cap = facts.profile.capability
    if cap is None or not facts.profile.gpus:
        return Unknown(why="torch.cuda.get_device_capability() raises without a GPU")
    return cap


def _device_name(facts: RunnerFacts) -> object:
    if not facts.profile.gpus:
        return Unknown(why="torch.cuda.get_device_name() raises without a GPU")
    return facts.profile.device_name or Unknown(why=f"profile {facts.profile.name} names no device")


def _has_cuda(facts: RunnerFacts) -> object:
    return facts.profile.gpus > 0


def _flashinfer(facts: RunnerFacts) -> object:
    # sglang: find_spec("flashinfer") is not None and is_cuda(); a profile does not know what is installed.
    if not facts.profile.gpus:
        return False
    if "flashinfer" in facts.installed:
        return True
    return Unknown(why="whether flashinfer is installed (pass --assume-installed flashinfer)")


def _false(facts: RunnerFacts) -> object:
    return False


# Keys without a dot match a helper by its own name wherever it is imported from (sglang.srt.utils,
# sglang.srt.utils.common, `utils.` ...); dotted keys match the resolved import path.
PREDICATES: Mapping[str, Predicate] = {
    "is_sm90_supported": _major_in(9),
    "is_sm100_supported": _major_in(10),
    "is_sm120_supported": _major_in(12),
    "is_blackwell": _major_in(10, 11, 12),
    "is_blackwell_supported": _major_in(10, 11, 12),
    "get_device_sm": _device_sm,
    "is_hip": _false,
    "is_npu": _false,
    "is_xpu": _false,
    "is_cuda": _has_cuda,
    "is_cuda_alike": _has_cuda,
    "is_flashinfer_available": _flashinfer,
    "torch.cuda.is_available": _has_cuda,
    "torch.cuda.device_count": lambda facts: facts.profile.gpus,
    "torch.cuda.get_device_capability": _capability,
    "torch.cuda.get_device_name": _device_name,
}

# Attributes read without a call.
ATTRIBUTES: Mapping[str, Predicate] = {
    "torch.version.hip": lambda facts: None,
}


def lookup(table: Mapping[str, Predicate], resolved: str) -> Predicate | None:
    """The predicate a resolved dotted name refers to, if it is a known one."""
    if resolved in table:
        return table[resolved]
    return table.get(resolved.rpartition(".")[2]) if "." in resolved else None
