"""Edge: detect this machine's GPUs and library versions (the only module that imports torch)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any

from matrix.core.errors import DetectionError
from matrix.core.jsonio import loads_untrusted
from matrix.core.machine import MachineFacts
from matrix.core.versions import checked_versions

DETECT_ENV = "SPECMATRIX_DETECT"
MAX_GPUS = 1024  # no host has more; a bigger number is a typo (and would build a huge per-GPU table)
MAX_OVERRIDE_CHARS = 64 * 1024
LIBRARIES = {"torch": "torch", "flashinfer": "flashinfer-python", "sglang": "sglang", "triton": "triton"}


def installed_versions() -> dict[str, str]:
    """Library versions from installed distributions, without importing them."""
    out: dict[str, str] = {}
    for lib, dist in LIBRARIES.items():
        try:
            out[lib] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return checked_versions(out, "installed distributions", DetectionError)


def facts_from_override(text: str) -> MachineFacts:
    """`{"gpus": 4, "capability": [10, 0], "versions": {...}}`; missing keys mean not present."""
    if len(text) > MAX_OVERRIDE_CHARS:
        raise DetectionError(f"{DETECT_ENV} is longer than {MAX_OVERRIDE_CHARS} characters")
    data: Any = loads_untrusted(text, DETECT_ENV, DetectionError, malformed="not valid")
    if not isinstance(data, dict):
        raise DetectionError(f"{DETECT_ENV} must be a JSON object")
    unknown = set(data) - {"gpus", "capability", "name", "versions"}
    if unknown:
        raise DetectionError(f"{DETECT_ENV}: unknown key {sorted(unknown)[0]!r} (use gpus, capability, name, versions)")
    gpus = data.get("gpus", 0)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= MAX_GPUS:
        raise DetectionError(f"{DETECT_ENV}: gpus must be an integer from 0 to {MAX_GPUS}, got {gpus!r}")
    cap = data.get("capability")
    if cap is not None and not (
        isinstance(cap, list)
        and len(cap) == 2
        and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 100 for c in cap)
    ):
        raise DetectionError(f"{DETECT_ENV}: capability must be [major, minor]")
    if gpus and cap is None:
        raise DetectionError(f"{DETECT_ENV}: gpus given without capability")
    versions = checked_versions(data.get("versions", {}), DETECT_ENV, DetectionError)
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > 200):
        raise DetectionError(f"{DETECT_ENV}: name must be a device name string such as 'NVIDIA B200'")
    return MachineFacts(
        gpus=gpus,
        capabilities=tuple((cap[0], cap[1]) for _ in range(gpus)) if cap else (),
        names=tuple(name for _ in range(gpus)) if name else (),
        versions=versions,
        overridden=True,
    )


def detect(env: Mapping[str, str], *, gpus: bool = True) -> MachineFacts:
    """This machine's facts; `SPECMATRIX_DETECT` replaces detection entirely."""
    override = env.get(DETECT_ENV)
    if override:
        return facts_from_override(override)
    versions = installed_versions()
    if not gpus:
        return MachineFacts(gpus=0, versions=versions)
    try:
        import torch
    except ImportError:
        return MachineFacts(gpus=0, versions=versions)
    if not torch.cuda.is_available():
        return MachineFacts(gpus=0, versions=versions)
    count = torch.cuda.device_count()
    caps = tuple(torch.cuda.get_device_capability(i) for i in range(count))
    names = tuple(torch.cuda.get_device_name(i) for i in range(count))
    return MachineFacts(gpus=count, capabilities=caps, names=names, versions=versions)
