"""The guard engine: read a Python test file without importing it, find its skip guards, evaluate them on a runner.

Both static audits stand on it: sglang's registered suite (`matrix.registered_suite`, `specmatrix guards`) and any
pytest project (`matrix.pytest_suites`, `specmatrix pytest-audit`). `analyse_source(text, path)` reads one file,
`evaluate_guard(guard, facts)` answers one guard on one runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matrix.guards.evaluate import evaluate_guard, evaluate_text
    from matrix.guards.evaluation import Evaluation, Tri
    from matrix.guards.finder import analyse_source
    from matrix.guards.model import (
        FAILING_KINDS,
        FileAnalysis,
        Guard,
        GuardFindingKind,
        GuardReport,
        finding_fields,
        guard_finding,
    )
    from matrix.guards.predicates import PREDICATES, RunnerFacts

# Each name is imported from its module on first use (PEP 562): importing `matrix.guards.model` for its records
# does not build the evaluator and the finder, which a run that reads its audits from a cache never calls.
_HOMES = {
    "evaluate_guard": "evaluate",
    "evaluate_text": "evaluate",
    "Evaluation": "evaluation",
    "Tri": "evaluation",
    "analyse_source": "finder",
    "FAILING_KINDS": "model",
    "FileAnalysis": "model",
    "Guard": "model",
    "GuardFindingKind": "model",
    "GuardReport": "model",
    "finding_fields": "model",
    "guard_finding": "model",
    "PREDICATES": "predicates",
    "RunnerFacts": "predicates",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


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
