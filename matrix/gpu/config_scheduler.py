"""xdist scheduler: one work unit per kernel configuration, so a host compiles each once (imports xdist)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScopeScheduling

from matrix.audit.items import CellIdIndex
from matrix.core.loader import load_matrix
from matrix.gpu.grouping import config_key


class ConfigGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """Like --dist loadgroup, with the group of a matrix item derived from its cell's config key."""

    def __init__(self, config: Any, log: Any = None) -> None:
        super().__init__(config, log)
        path = config.getoption("matrix_file", None)
        self._matrix = load_matrix(Path(path) if path else None)
        self._index = CellIdIndex(c.id for c in self._matrix.cells)

    def _split_scope(self, nodeid: str) -> str:
        cell_id = self._index.cell_in(nodeid)
        if cell_id is None:
            return nodeid.rsplit("@", 1)[-1] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid
        return "config:" + config_key(self._matrix, self._matrix.cell(cell_id), None)


def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    """Hook for a conftest: with --dist loadgroup, group matrix cells by kernel configuration."""
    if config.getoption("dist", "no") != "loadgroup":
        return None
    return ConfigGroupScheduling(config, log)
