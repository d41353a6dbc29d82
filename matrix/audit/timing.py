"""Edge: let a matrix test record how long kernel compilation and setup took (the `matrix_timing` fixture)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from matrix.audit.accounting import TIMING_KEYS


class MatrixTiming:
    """Adds `compile_seconds` / `setup_seconds` to the item's user_properties, which the report picks up.

    Tests without the fixture can append `("compile_seconds", 8.2)` to `request.node.user_properties` directly.
    """

    def __init__(self, user_properties: list[tuple[str, object]]) -> None:
        self._props = user_properties

    def record(self, key: str, seconds: float) -> None:
        if key not in TIMING_KEYS:
            raise ValueError(f"matrix_timing records {' or '.join(TIMING_KEYS)}, not {key!r}")
        self._props.append((key, float(seconds)))

    @contextmanager
    def _timed(self, key: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record(key, time.perf_counter() - start)

    def compile(self) -> AbstractContextManager[None]:
        """`with matrix_timing.compile(): build()` records the block as compile_seconds."""
        return self._timed("compile_seconds")

    def setup(self) -> AbstractContextManager[None]:
        """`with matrix_timing.setup(): ...` records the block as setup_seconds."""
        return self._timed("setup_seconds")


def timings_from(user_properties: Sequence[tuple[str, object]]) -> dict[str, float]:
    """Sum every recorded compile/setup duration by key; other properties are left alone."""
    out: dict[str, float] = {}
    for prop in user_properties:
        if len(prop) == 2 and prop[0] in TIMING_KEYS and isinstance(prop[1], int | float) and not isinstance(prop[1], bool):
            out[prop[0]] = out.get(prop[0], 0.0) + float(prop[1])
    return out
