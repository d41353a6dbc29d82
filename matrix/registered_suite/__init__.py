"""Static audit of sglang's registered test suite: find silent skips without importing it.

`audit_tree(path, runners)` is the entry point; `specmatrix guards PATH` is its command. It reads each file's
registrations and guards with the guard engine (`matrix.guards`) and judges them on the runners the file is
registered for.
"""

from __future__ import annotations

from matrix.guards.model import GuardFindingKind, GuardReport
from matrix.registered_suite.audit import AuditSettings, SuiteMap, audit_file, load_suite_map, read_suite_list
from matrix.registered_suite.tree import audit_tree

__all__ = [
    "AuditSettings",
    "GuardFindingKind",
    "GuardReport",
    "SuiteMap",
    "audit_file",
    "audit_tree",
    "load_suite_map",
    "read_suite_list",
]
