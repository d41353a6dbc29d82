"""specmatrix: a CI test matrix for GPU attention backends in speculative decoding.

Layers: `matrix.core` (pure planning, no torch) <- feature packages (audit, guards, shard, coverage,
register, gpu, sglang_check) <- entry points (`matrix.cli`, `matrix.plugin`, noxfile). See docs/architecture.md.
"""

from __future__ import annotations

__version__ = "0.1.0"
