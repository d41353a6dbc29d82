"""specmatrix: a CI test matrix for GPU attention backends in speculative decoding.

The planning core (model, loader, expect, selectors, machine) imports no torch.
"""

from __future__ import annotations

__version__ = "0.1.0"
