"""One xdist worker per GPU (or N with --matrix-workers-per-gpu): which device each worker gets; pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matrix.core.errors import UsageError

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
GPU_INDEX_ENV = "SPECMATRIX_GPU_INDEX"
GPU_DEVICE_ENV = "SPECMATRIX_GPU"


def gpu_slots(env: Mapping[str, str], gpus: int) -> tuple[str, ...]:
    """The devices workers may pin: an existing CUDA_VISIBLE_DEVICES list, else 0..gpus-1."""
    visible = env.get(CUDA_VISIBLE_DEVICES)
    if visible is not None:
        return tuple(d.strip() for d in visible.split(",") if d.strip())
    return tuple(str(i) for i in range(gpus))


def shared_slots(slots: Sequence[str], per_gpu: int) -> tuple[str, ...]:
    """Each device offered per_gpu times, round robin, so the lowest free slots spread workers over the GPUs."""
    return tuple(device for _ in range(per_gpu) for device in slots)


def check_workers(workers: int, slots: Sequence[str], runner: str, per_gpu: int = 1) -> None:
    """More workers than GPUs (times the workers allowed per GPU) would crowd a device: refuse before any starts."""
    if workers > len(slots) * per_gpu:
        shown = ",".join(slots) or "none"
        allowed = f"; --matrix-workers-per-gpu {per_gpu} allows {len(slots) * per_gpu}" if per_gpu > 1 else ""
        raise UsageError(
            f"-n {workers} starts {workers} xdist workers but runner {runner!r} has {len(slots)} GPU(s) ({shown})"
            f"{allowed}; use -n {len(slots) * per_gpu} or fewer, or let workers share a GPU with "
            "--matrix-workers-per-gpu"
        )


class SlotPool:
    """Hands each live worker the lowest free slot, so a restarted worker takes over its dead predecessor's GPU."""

    def __init__(self, slots: Sequence[str]) -> None:
        self._slots = tuple(slots)
        self._owner: dict[int, str] = {}

    def take(self, worker: str) -> int:
        for index in range(len(self._slots)):
            if index not in self._owner:
                self._owner[index] = worker
                return index
        raise UsageError(f"no free GPU for xdist worker {worker} ({len(self._slots)} GPU(s), all in use)")

    def release(self, worker: str) -> None:
        for index, owner in list(self._owner.items()):
            if owner == worker:
                del self._owner[index]


def pinned_env(slot: int, slots: Sequence[str]) -> dict[str, str]:
    """What a worker on `slot` sets before anything initialises CUDA."""
    device = slots[slot]  # with workers sharing GPUs (shared_slots) the index is the device's, not the slot's
    return {CUDA_VISIBLE_DEVICES: device, GPU_INDEX_ENV: str(slots.index(device)), GPU_DEVICE_ENV: device}
