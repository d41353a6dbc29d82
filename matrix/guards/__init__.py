"""The guard engine: read a Python test file without importing it, find its skip guards, evaluate them on a runner.

Both static audits stand on it: sglang's registered suite (`matrix.registered_suite`, `specmatrix guards`) and any
pytest project (`matrix.pytest_suites`, `specmatrix pytest-audit`). `analyse_source(text, path)` reads one file,
`evaluate_guard(guard, facts)` answers one guard on one runner.
"""

from __future__ import annotations

from matrix.guards.evaluate import Evaluation, Tri, evaluate_guard, evaluate_text
from matrix.guards.finder import analyse_source
from matrix.guards.model import FAILING_KINDS, FileAnalysis, Guard, GuardFindingKind, GuardReport, finding_fields, guard_finding
from matrix.guards.predicates import PREDICATES, RunnerFacts

__all__ = [
    "FAILING_KINDS",
    "PREDICATES",
    "Evaluation",
    "FileAnalysis",
    "Guard",
    "GuardFindingKind",
    "GuardReport",
    "RunnerFacts",
    "Tri",
    "analyse_source",
    "evaluate_guard",
    "evaluate_text",
    "finding_fields",
    "guard_finding",
]
