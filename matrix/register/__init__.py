"""`specmatrix register`: test modules registered the way sglang's CI registers its own."""

from __future__ import annotations
