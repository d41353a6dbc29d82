"""CUDA device queries answered from NVML while the fork server preloads, so that no import starts CUDA before fork.

flashinfer 0.7.2 asks `torch.cuda.get_device_capability` at import (flashinfer/jit/env.py builds a
`CompilationContext`, flashinfer/compilation_context.py reads every device's capability), and sglang's
`get_device_sm`, `is_sm*_supported` and JIT arch detection (sglang/kernels/jit/utils/arch.py
`_init_jit_cuda_arch_once`: `current_device()`, then its capability) ask too. Through torch the question starts CUDA
(`torch.cuda._lazy_init`), and a process holding a CUDA context cannot fork a GPU worker. NVML (libnvidia-ml, the
driver's management library) knows the same capability without a CUDA context. While the server imports,
`torch.cuda.get_device_capability`, `get_device_name` and `current_device` are answered from NVML; afterwards
torch's own functions are back (in the server, so in every forked worker), and a reference a library kept to a
stand-in forwards to torch's function.

Answered only where the answer cannot depend on which GPU a worker is later pinned to: every GPU of the host has the
same capability and name (CUDA's default device order, fastest first, need not be NVML's PCI order, so on a mixed
host an ordinal names no NVML device for sure), and the ordinal is one CUDA would make visible. The current device
of a process that never initialised CUDA is ordinal 0 (selecting another one initialises CUDA, which the preload
refuses). Anything else goes to torch's function, which the preload then cuts short (docs/gpu.md).
"""

from __future__ import annotations

import ctypes
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

NVML_LIBRARY = "libnvidia-ml.so.1"
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"
MAX_GPUS = 64  # NVML's device count is read from a C library: bounded before it sizes anything
_NAME_BYTES = 96  # NVML_DEVICE_NAME_V2_BUFFER_SIZE


@dataclass(frozen=True, kw_only=True)
class Gpu:
    """What NVML says of one GPU: its compute capability and its name."""

    capability: tuple[int, int]
    name: str


def read_nvml(library: str = NVML_LIBRARY) -> tuple[Gpu, ...] | str:
    """Every GPU's capability and name from NVML (init, query, shutdown), or why NVML could not say."""
    try:
        nvml = ctypes.CDLL(library)
    except OSError as exc:
        return f"no NVML ({exc})"

    def call(name: str, *args: object) -> None:
        code = getattr(nvml, name)(*args)
        if code != 0:
            raise OSError(f"{name} returned NVML error {code}")

    try:
        call("nvmlInit_v2")
    except (OSError, AttributeError) as exc:
        return f"NVML did not start ({exc})"
    try:
        count = ctypes.c_uint(0)
        call("nvmlDeviceGetCount_v2", ctypes.byref(count))
        gpus = []
        for index in range(min(count.value, MAX_GPUS)):
            handle = ctypes.c_void_p()
            call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(handle))
            major, minor = ctypes.c_int(0), ctypes.c_int(0)
            call("nvmlDeviceGetCudaComputeCapability", handle, ctypes.byref(major), ctypes.byref(minor))
            name = ctypes.create_string_buffer(_NAME_BYTES)
            call("nvmlDeviceGetName", handle, name, ctypes.c_uint(_NAME_BYTES))
            gpus.append(Gpu(capability=(major.value, minor.value), name=name.value.decode("utf-8", "replace")))
        return tuple(gpus)
    except (OSError, AttributeError) as exc:
        return f"NVML query failed ({exc})"
    finally:
        getattr(nvml, "nvmlShutdown", lambda: 0)()


def uniform(gpus: tuple[Gpu, ...]) -> Gpu | None:
    """The one kind of GPU of the host, or None when there is none or more than one."""
    return gpus[0] if gpus and all(g == gpus[0] for g in gpus) else None


def visible_count(value: str | None, gpus: int) -> int | None:
    """How many ordinals CUDA makes visible under CUDA_VISIBLE_DEVICES=value (indices only: it stops at the first
    index out of range); None for what is not read here (UUIDs, MIG names, a repeated index)."""
    if value is None:
        return gpus
    seen: list[int] = []
    for raw in value.split(","):
        entry = raw.strip()
        if not re.fullmatch(r"[0-9]{1,4}", entry):
            return None
        index = int(entry)
        if index in seen:
            return None
        if index >= gpus:
            break
        seen.append(index)
    return len(seen)


def ordinal(device: object) -> int | None:
    """The CUDA ordinal a torch device argument names without asking CUDA (None: the current device, 0 in a
    process that never selected one); None for a form not read here."""
    if device is None:
        return 0
    if isinstance(device, bool):
        return None
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        found = re.fullmatch(r"cuda(?::([0-9]{1,4}))?", device.strip())
        return None if found is None else int(found.group(1) or 0)
    if getattr(device, "type", None) == "cuda":
        index = getattr(device, "index", None)
        return 0 if index is None else index if isinstance(index, int) and not isinstance(index, bool) else None
    return None


@dataclass
class NvmlAnswers:
    """Installed on `torch.cuda` for the preload: capability and name of a visible ordinal come from `gpu`; any
    other question goes to torch. `answered` lists what was answered (the status shows it)."""

    cuda: types.ModuleType
    gpu: Gpu
    env: Mapping[str, str]
    gpus: int
    answered: list[str] = field(default_factory=list)
    active: bool = False
    _originals: dict[str, Callable[..., object]] = field(default_factory=dict)

    def _visible(self, device: object) -> int | None:
        index = ordinal(device)
        count = visible_count(self.env.get(VISIBLE_ENV), self.gpus)
        return index if index is not None and count is not None and 0 <= index < count else None

    def _stand_in(self, name: str, answer: Callable[[], object]) -> Callable[..., object]:
        original = self._originals[name]

        def query(device: object = None) -> object:
            index = self._visible(device) if self.active else None
            if index is None:
                return original(device)
            self.answered.append(f"{name}({index})")
            return answer()

        query.__name__ = query.__qualname__ = name
        return query

    def _current_device(self) -> Callable[[], object]:
        original = self._originals["current_device"]

        def current_device() -> object:
            if not self.active or self._visible(0) is None:
                return original()
            self.answered.append("current_device()")
            return 0

        return current_device

    def __enter__(self) -> NvmlAnswers:
        answers: dict[str, Callable[[], object]] = {
            "get_device_capability": lambda: self.gpu.capability,
            "get_device_name": lambda: self.gpu.name,
        }
        for name in (*answers, "current_device"):
            self._originals[name] = getattr(self.cuda, name)
        for name, answer in answers.items():
            setattr(self.cuda, name, self._stand_in(name, answer))
        self.cuda.current_device = self._current_device()  # type: ignore[attr-defined]
        self.active = True
        return self

    def __exit__(self, *_: object) -> None:
        # A library that bound the stand-in (`from torch.cuda import get_device_capability`) keeps it: inactive, it
        # forwards every question to torch's own function.
        self.active = False
        for name, original in self._originals.items():
            setattr(self.cuda, name, original)
        self._originals.clear()
