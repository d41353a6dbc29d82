"""Edge: detect this machine's GPUs and library versions (the only module that imports torch)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from matrix.core.errors import DetectionError
from matrix.core.machine import MachineFacts

DETECT_ENV = "SPECMATRIX_DETECT"
LIBRARIES = {"torch": "torch", "flashinfer": "flashinfer-python", "sglang": "sglang", "triton": "triton"}


def installed_versions() -> dict[str, str]:
    """Library versions from installed distributions, without importing them."""
    out: dict[str, str] = {}
    for lib, dist in LIBRARIES.items():
        try:
            out[lib] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def facts_from_override(text: str) -> MachineFacts:
    """`{"gpus": 4, "capability": [10, 0], "versions": {...}}`; missing keys mean not present."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DetectionError(f"{DETECT_ENV} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise DetectionError(f"{DETECT_ENV} must be a JSON object")
    unknown = set(data) - {"gpus", "capability", "name", "versions"}
    if unknown:
        raise DetectionError(f"{DETECT_ENV}: unknown key {sorted(unknown)[0]!r} (use gpus, capability, name, versions)")
    gpus = data.get("gpus", 0)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0:
        raise DetectionError(f"{DETECT_ENV}: gpus must be a non-negative integer")
    cap = data.get("capability")
    if cap is not None and not (isinstance(cap, list) and len(cap) == 2 and all(isinstance(c, int) for c in cap)):
        raise DetectionError(f"{DETECT_ENV}: capability must be [major, minor]")
    if gpus and cap is None:
        raise DetectionError(f"{DETECT_ENV}: gpus given without capability")
    versions = data.get("versions", {})
    if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
        raise DetectionError(f"{DETECT_ENV}: versions must map library names to version strings")
    name = data.get("name")
    return MachineFacts(
        gpus=gpus,
        capabilities=tuple((cap[0], cap[1]) for _ in range(gpus)) if cap else (),
        names=tuple(str(name) for _ in range(gpus)) if name else (),
        versions=dict(versions),
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
