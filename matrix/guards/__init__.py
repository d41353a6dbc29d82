"""Static guard audit: find silent skips in a registered test suite without importing it.

`audit_tree(path, runners)` is the entry point; `specmatrix guards PATH` is its command.
"""

from __future__ import annotations

from matrix.guards.audit import AuditSettings, SuiteMap, audit_file, load_suite_map, read_suite_list
from matrix.guards.evaluate import Evaluation, Tri, evaluate_guard, evaluate_text
from matrix.guards.finder import analyse_source
from matrix.guards.model import FAILING_KINDS, FileAnalysis, Guard, GuardFindingKind, GuardReport, finding_fields, guard_finding
from matrix.guards.predicates import PREDICATES, RunnerFacts
from matrix.guards.tree import audit_tree

__all__ = [
    "FAILING_KINDS",
    "PREDICATES",
    "AuditSettings",
    "Evaluation",
    "FileAnalysis",
    "Guard",
    "GuardFindingKind",
    "GuardReport",
    "RunnerFacts",
    "SuiteMap",
    "Tri",
    "analyse_source",
    "audit_file",
    "audit_tree",
    "evaluate_guard",
    "evaluate_text",
    "finding_fields",
    "guard_finding",
    "load_suite_map",
    "read_suite_list",
]
