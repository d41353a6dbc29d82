"""What to change so a skip on a registered runner goes away: the predicate that would admit it, or the
registration to drop. Read from the facts the evaluation consulted."""

from __future__ import annotations

from matrix.guards.evaluate import Evaluation
from matrix.guards.predicates import RunnerFacts

# sglang.srt.utils.common: one predicate per compute-capability major.
_ARCH_PREDICATE = {9: "is_sm90_supported()", 10: "is_sm100_supported()", 12: "is_sm120_supported()"}
_ARCH_FACTS = frozenset(
    {
        "is_sm90_supported",
        "is_sm100_supported",
        "is_sm120_supported",
        "is_blackwell",
        "is_blackwell_supported",
        "get_device_sm",
        "torch.cuda.get_device_capability",
        "torch.cuda.get_device_name",
    }
)
_GPU_COUNT = frozenset({"torch.cuda.device_count"})
_CI = frozenset({"is_in_ci", "is_in_amd_ci", "env"})
_PLATFORM = frozenset({"is_hip", "is_npu", "is_xpu", "torch.version.hip"})


def silent_skip_hint(evaluation: Evaluation, facts: RunnerFacts, every: tuple[str, ...] = ()) -> str:
    """One sentence: which predicate would admit the runner, or which registration to drop."""
    profile = facts.profile
    runners = ", ".join(every) if every else profile.name
    drop = f"drop the {runners} registration{'s' if len(every) > 1 else ''}"
    if len(every) > 1 and evaluation.facts and set(evaluation.facts) <= _ARCH_FACTS and profile.capability is not None:
        drop = f"drop the {runners} registrations"
    used = set(evaluation.facts)
    if used & _PLATFORM:
        return f"the guard wants another platform (ROCm/NPU/XPU): register it with that platform's register_*_ci, or {drop}"
    if used & _ARCH_FACTS and profile.capability is not None and profile.sm is not None:
        arch = f"sm{profile.sm}"
        predicate = _ARCH_PREDICATE.get(profile.capability[0], f"get_device_sm() == {profile.sm}")
        return f"guard excludes {arch}, the runner is {arch}: add `{predicate}`, or {drop}"
    if used & _GPU_COUNT:
        gpus = f"the runner has {profile.gpus} GPU(s), fewer than the guard needs"
        return f"{gpus}: register it on a suite with enough GPUs, or {drop}"
    if used & _CI:
        return f"the guard skips in CI on {profile.name}: make the skip depend on the hardware, or {drop} (or set disabled=)"
    if "torch.version.cuda" in used:
        return f"the guard rejects the runner's CUDA {profile.cuda}: relax the version check, or {drop}"
    if not profile.gpus:
        return f"the guard needs a GPU: register it with register_cuda_ci on a GPU suite, or {drop}"
    return f"change the guard so {profile.name} passes it, or {drop}"
