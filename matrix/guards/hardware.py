"""Runner facts on a runner no profile describes, from what its labels say of its hardware (`RunnerHardware`); pure.

Three cases, by what is known:
- an NVIDIA host whose labels give the GPU count and architecture (four A10Gs: `linux.g5.12xlarge.nvidia.gpu`) is a
  profile of its own (`as_profile`): every fact a profile answers, with no CUDA version and no CI facts (unknown);
- a host without a device of the CUDA API (CPU, macOS, Windows, Intel XPU, Ascend NPU) answers the CUDA facts as
  a GPU-less profile does (`torch.cuda.is_available()` false, `device_count()` 0), and its own accelerator
  (`torch.accelerator`, `is_xpu`, `is_npu`) is unknown;
- an NVIDIA or AMD host with less said answers only `DECLARED` (an AMD host through ROCm's torch, whose
  `torch.cuda` is the HIP backend: `is_available()` true, `device_count()` its GPUs, `torch.version.hip` set and
  `torch.version.cuda` None; PyTorch docs, "HIP (ROCm) semantics"); every other fact there is unknown.
A GPU host is assumed to run the torch built for it (CUDA torch on NVIDIA, ROCm torch on AMD), as profiles are;
the schedule says so on each entry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping

from matrix.core.profile import RunnerProfile
from matrix.guards.platform import PLATFORM_PREDICATES
from matrix.guards.predicates import PartText, Predicate, Record, RunnerFacts, Unknown, env_value
from matrix.schedule.model import CUDA_API_KINDS, RunnerHardware

Answer = Callable[[RunnerHardware, RunnerFacts], object]


def as_profile(hardware: RunnerHardware) -> RunnerProfile | None:
    """The profile of an NVIDIA host whose labels give its GPU count and compute capability, else None."""
    capability = hardware.capability
    if hardware.kind != "cuda" or not hardware.gpus or capability is None:
        return None
    return RunnerProfile(name=name_of(hardware), gpus=hardware.gpus, capability=capability, labels=hardware.labels)


def stand_in(hardware: RunnerHardware) -> RunnerProfile:
    """The profile a fact read outside `DECLARED` sees: no GPU of the CUDA API (what a GPU-less host is)."""
    return RunnerProfile(name=name_of(hardware), gpus=0, capability=None, labels=hardware.labels)


def name_of(hardware: RunnerHardware) -> str:
    return ", ".join(hardware.labels) or hardware.kind


def _count(hardware: RunnerHardware, facts: RunnerFacts) -> object:
    if hardware.gpus is None:
        return Unknown(why=f"how many GPUs {facts.profile.name} has (its labels do not say)")
    return hardware.gpus


def _accelerator_count(hardware: RunnerHardware, facts: RunnerFacts) -> object:
    if hardware.kind in CUDA_API_KINDS:
        return _count(hardware, facts)
    if hardware.kind in ("cpu", "windows"):
        return 0
    return Unknown(why=f"what torch.accelerator finds on {facts.profile.name} ({hardware.kind})")


def _accelerator(hardware: RunnerHardware, facts: RunnerFacts) -> object:
    count = _accelerator_count(hardware, facts)
    return count if isinstance(count, Unknown) else count > 0 if isinstance(count, int) else count


# What HIP reports as the compute capability (`hipDeviceProp_t` major and minor, which ROCm's torch returns from
# `torch.cuda.get_device_capability()`) for an AMD Instinct ISA: gfx90a (MI210/MI250) 9.0, gfx942 (MI300/MI325) 9.4,
# gfx950 (MI350/MI355) 9.5 (hipBLASLt's `hipblaslt-bench` prints "gfx942:sramecc+:xnack- ... compute capability 9.4";
# pytorch/torchtitan #4778: gfx950 reports (9, 5)). `gcnArchName` is the ISA with its feature flags.
_ROCM_CAPABILITY: Mapping[str, tuple[int, int]] = {"gfx90a": (9, 0), "gfx942": (9, 4), "gfx950": (9, 5)}


def _capability(hardware: RunnerHardware, facts: RunnerFacts) -> object:
    if hardware.kind == "rocm" and hardware.arch in _ROCM_CAPABILITY:
        return _ROCM_CAPABILITY[hardware.arch]
    if hardware.kind == "cuda" and hardware.capability is not None:
        return hardware.capability
    return Unknown(why=f"the compute capability of {facts.profile.name} (its labels do not name its GPU)")


def _properties(hardware: RunnerHardware, facts: RunnerFacts) -> object:
    capability = _capability(hardware, facts)
    if not isinstance(capability, tuple):
        return capability
    fields: tuple[tuple[str, object], ...] = (("major", capability[0]), ("minor", capability[1]))
    if hardware.kind == "rocm":
        arch = hardware.arch
        flags = [f"{arch}:sramecc{a}:xnack{b}" for a in "+-" for b in "+-"]
        name = PartText(why=f"the ISA of {facts.profile.name} with its feature flags", known=arch, within=tuple(flags))
        fields = (*fields, ("gcnArchName", name))
    return Record(kind="device properties", fields=fields)


def _amd_ci(hardware: RunnerHardware, facts: RunnerFacts) -> object:
    # sglang's is_in_amd_ci() reads SGLANG_IS_IN_CI_AMD: what the job gives, else the runner's own setting (unknown)
    value = env_value(facts, "SGLANG_IS_IN_CI_AMD")
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1")
    return value if isinstance(value, Unknown) else Unknown(why=f"whether {facts.profile.name} sets SGLANG_IS_IN_CI_AMD")


def _kind_is(*kinds: str) -> Answer:
    return lambda hardware, facts: hardware.kind in kinds


def _unknown_on(*kinds: str) -> Answer:
    def answer(hardware: RunnerHardware, facts: RunnerFacts) -> object:
        if hardware.kind in kinds:
            return Unknown(why=f"whether {facts.profile.name}'s torch finds its {hardware.kind} device (its plugin, its build)")
        return False

    return answer


# What an NVIDIA or AMD host without a profile answers (by the helper's own name or its dotted name); the rest is
# unknown there. Sources: PyTorch docs ("HIP (ROCm) semantics", `torch.cuda`, `torch.accelerator`); sglang's
# `sglang.srt.utils` (is_cuda: CUDA available and a CUDA build; is_hip: a HIP build; is_cuda_alike: either;
# is_flashinfer_available: flashinfer found and is_cuda; get_gpu_count: torch.accelerator.device_count()).
DECLARED: Mapping[str, Answer] = {
    "torch.cuda.is_available": _kind_is(*CUDA_API_KINDS),
    "torch.cuda.device_count": _count,
    "torch.cuda.get_device_capability": _capability,
    "torch.cuda.get_device_properties": _properties,
    "torch.accelerator.is_available": _accelerator,
    "torch.accelerator.device_count": _accelerator_count,
    "get_gpu_count": _accelerator_count,
    "is_cuda": _kind_is("cuda"),
    "is_hip": _kind_is("rocm"),
    "is_cuda_alike": _kind_is(*CUDA_API_KINDS),
    "is_npu": _unknown_on("npu"),
    "is_xpu": _unknown_on("xpu"),
    "is_in_amd_ci": _amd_ci,
}
# What a host with no device of the CUDA API answers besides a GPU-less profile's facts: its own accelerator.
_ACCELERATOR = frozenset(
    {"torch.accelerator.is_available", "torch.accelerator.device_count", "get_gpu_count", "is_npu", "is_xpu"}
)


class HardwareTable(Mapping[str, Predicate]):
    """The evaluator's predicate table as a runner without a profile answers it (see the module docstring)."""

    def __init__(self, base: Mapping[str, Predicate], hardware: RunnerHardware) -> None:
        self.base = base
        self.hardware = hardware
        self.gpu_less = hardware.kind not in CUDA_API_KINDS
        self._wrapped: dict[str, Predicate] = {}

    def __getitem__(self, key: str) -> Predicate:
        found = self._wrapped.get(key)
        if found is None:
            found = self._wrapped[key] = self._wrap(key, self.base[key])
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.base)

    def __len__(self) -> int:
        return len(self.base)

    def __contains__(self, key: object) -> bool:
        return key in self.base

    def _wrap(self, key: str, predicate: Predicate) -> Predicate:
        if key in PLATFORM_PREDICATES:
            return predicate  # read from the runner's labels and the job's environment, as on any runner
        name = key.rpartition(".")[2] if key not in DECLARED else key
        answer = DECLARED.get(key) or DECLARED.get(name)
        hardware = self.hardware
        if self.gpu_less and (key in _ACCELERATOR or name in _ACCELERATOR or name == "is_in_amd_ci"):
            assert answer is not None
            return functools.partial(answer, hardware)
        if self.gpu_less:
            return predicate  # a GPU-less host: the stand-in profile answers as a profile without a GPU does
        if answer is not None:
            return functools.partial(answer, hardware)
        if name in ("is_in_ci",):
            return predicate  # read from the job's environment (the stand-in says nothing of the runner's own)
        return functools.partial(_not_said, key)


def _not_said(key: str, facts: RunnerFacts) -> object:
    return Unknown(why=f"{key} on {facts.profile.name}: its labels do not say (no runner profile)")
