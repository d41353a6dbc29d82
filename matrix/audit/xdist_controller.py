"""Edge: the xdist controller's side: hand workers the plan and a GPU each, learn the planned items from their ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from matrix.audit.gpus import SlotPool
from matrix.audit.pytest_options import PAYLOAD_KEY
from matrix.audit.session import AuditSession, facts_json
from matrix.core.errors import SpecmatrixError


class XdistController:
    """Registered only on an xdist controller; every hook here is optional so pytest without xdist never sees them."""

    def __init__(self, audit: AuditSession, slots: Sequence[str]) -> None:
        self.audit = audit
        self.slots = tuple(slots)
        self.pool = SlotPool(slots) if slots else None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Detection happened here, before pinning; a worker pinned to one GPU must not detect again."""
        plan = self.audit.plan
        if plan is None:
            return
        payload: dict[str, object] = {"runner": plan.runner.name, "facts": facts_json(plan.facts)}
        if self.pool is not None:
            payload["slot"] = self.pool.take(str(node.gateway.id))
            payload["slots"] = list(self.slots)
        node.workerinput[PAYLOAD_KEY] = payload

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        worker = str(node.gateway.id)
        if self.pool is not None:
            self.pool.release(worker)
        if error is not None:
            self.audit.node_errors[worker] = str(error)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        try:
            self.audit.plan_from_ids(ids)
        except SpecmatrixError as exc:  # reported at the end: raising here would stop the xdist event loop
            self.audit.planning_error = str(exc)
