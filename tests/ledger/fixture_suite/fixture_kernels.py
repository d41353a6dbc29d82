"""A small kernel module the optional-import test depends on (present in this suite under this name)."""

from __future__ import annotations


def fused_add(a: list[float], b: list[float]) -> list[float]:
    return [x + y for x, y in zip(a, b, strict=True)]
