"""Runner profiles: what a CI machine is (GPUs, compute capability, labels, CI facts); `matrix.core.model` re-exports them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SkipPolicy(StrEnum):
    """`strict`: every skip outside the matrix needs an allowlist entry."""

    LENIENT = "lenient"
    STRICT = "strict"


@dataclass(frozen=True, kw_only=True)
class RunnerProfile:
    name: str
    gpus: int
    capability: tuple[int, int] | None
    device_name: str | None = None
    labels: tuple[str, ...] = ()
    # Labels CI used for the same machines before a rename (sglang's `1-gpu-runner` is today's `1-gpu-h100`).
    former_labels: tuple[str, ...] = ()
    runner_configs: tuple[str, ...] = ()
    skip_policy: SkipPolicy = SkipPolicy.LENIENT
    description: str = ""
    # CI facts guards read (None: the profile does not say): is_in_ci(), is_in_amd_ci(), torch.version.cuda.
    in_ci: bool | None = None
    amd_ci: bool | None = None
    cuda: str | None = None
    # The host CPU architecture when it matters (a Grace host is aarch64); None: x86_64 or not stated.
    host_arch: str | None = None

    @property
    def sm(self) -> int | None:
        if self.capability is None:
            return None
        return self.capability[0] * 10 + self.capability[1]
