"""Cells no runner of a CI schedule would run, though some runner profile would: the combinations nobody tests; pure.

Each runner's expectations come from `matrix.core.expect.expected` (through the plan of each runner, as `specmatrix
cells --runner R` lists them). A cell is a gap when none of the scheduled runners is expected to RUN it while some
other profile is; a cell no profile runs at all (the matrix keeps it off every one, an impossible configuration) is
no gap: nothing could be scheduled for it, so it is counted apart and never listed as a finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from matrix.core.finding import Finding, Tool, spec_of
from matrix.core.model import Cell, Expectation, Outcome

KIND = "untested-cell"
SCHEMA = "specmatrix.gaps/1"  # what `specmatrix gaps --format json` writes (and `report` reads)


@dataclass(frozen=True, kw_only=True)
class Gaps:
    """The untested cells a schedule could close (`findings`) and the cells no profile runs (`unsupported`, ids)."""

    findings: tuple[Finding, ...]
    unsupported: tuple[str, ...]


def untested_cells(
    cells: Sequence[Cell],
    by_runner: Mapping[str, Mapping[str, Expectation]],
    elsewhere: Mapping[str, Sequence[str]],
) -> Gaps:
    """One finding per cell that no runner of `by_runner` (runner -> cell id -> expectation) is expected to RUN and
    that some profile of `elsewhere` (cell id -> the profiles outside the schedule that would run it) would run."""
    spec = spec_of(Tool.COVERAGE, KIND)
    out: list[Finding] = []
    unsupported: list[str] = []
    runners = tuple(by_runner)
    for cell in cells:
        exps = [(name, by_runner[name][cell.id]) for name in runners]
        if any(e.outcome is Outcome.RUN for _, e in exps):
            continue
        could = elsewhere.get(cell.id, ())
        if not could:
            unsupported.append(cell.id)
            continue
        why = " | ".join(f"on {name}: {e.reason}" for name, e in exps) or "the schedule runs on no runner profile"
        out.append(
            Finding(
                tool=Tool.COVERAGE,
                kind=KIND,
                subject=cell.id,
                message=(
                    f"no runner of the CI schedule runs {cell.id} ({len(runners)} runners); "
                    f"it would run on {', '.join(could)}, which no job of the schedule uses"
                ),
                runners=runners,
                detail=why,
                hint=spec.help,
            )
        )
    return Gaps(findings=tuple(out), unsupported=tuple(unsupported))
