"""Read matrix cells back out of pytest node ids (the xdist controller never sees items, only ids)."""

from __future__ import annotations

from collections.abc import Iterable


def strip_params(nodeid: str) -> str:
    """`path::Class::test_f[params]` -> `path::Class::test_f`."""
    return nodeid.partition("[")[0]


class CellIdIndex:
    """Finds the cell id inside a node id's parameter part, however pytest joined it with other params."""

    def __init__(self, cell_ids: Iterable[str]) -> None:
        self._ids = frozenset(cell_ids)
        widths = {i.count("-") + 1 for i in self._ids} or {1}
        self._widths = tuple(sorted(widths, reverse=True))

    def __contains__(self, cell_id: object) -> bool:
        return cell_id in self._ids

    def cell_in(self, nodeid: str) -> str | None:
        """The cell id parametrizing `nodeid`, or None when it is not a matrix item."""
        start = nodeid.find("[")
        if start < 0 or not nodeid.endswith("]"):
            return None
        params = nodeid[start + 1 : -1]
        if params in self._ids:
            return params
        # Other parametrizations are joined with '-', which cell ids also use: try every window of parts.
        parts = params.split("-")
        for width in self._widths:
            for first in range(len(parts) - width + 1):
                candidate = "-".join(parts[first : first + width])
                if candidate in self._ids:
                    return candidate
        return None
