"""Cells no runner of a CI schedule would run: the combinations nobody tests; pure.

Each runner's expectations come from `matrix.core.expect.expected` (through the plan of each runner, as `specmatrix
cells --runner R` lists them); a cell is untested when none of them is RUN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matrix.core.finding import Finding, Tool, spec_of
from matrix.core.model import Cell, Expectation, Outcome

KIND = "untested-cell"
SCHEMA = "specmatrix.gaps/1"  # what `specmatrix gaps --format json` writes (and `report` reads)


def untested_cells(
    cells: Sequence[Cell],
    by_runner: Mapping[str, Mapping[str, Expectation]],
    elsewhere: Mapping[str, Sequence[str]] | None = None,
) -> list[Finding]:
    """One finding per cell that no runner of `by_runner` (runner -> cell id -> expectation) is expected to RUN;
    `elsewhere` (cell id -> profiles outside the schedule that would run it) says whether any machine could."""
    spec = spec_of(Tool.COVERAGE, KIND)
    out: list[Finding] = []
    runners = tuple(by_runner)
    for cell in cells:
        exps = [(name, by_runner[name][cell.id]) for name in runners]
        if any(e.outcome is Outcome.RUN for _, e in exps):
            continue
        why = " | ".join(f"on {name}: {e.reason}" for name, e in exps) or "the schedule runs on no runner profile"
        out.append(
            Finding(
                tool=Tool.COVERAGE,
                kind=KIND,
                subject=cell.id,
                message=f"no runner of the CI schedule runs {cell.id} ({len(runners)} runners); " + _could(cell.id, elsewhere),
                runners=runners,
                detail=why,
                hint=spec.help,
            )
        )
    return out


def _could(cell_id: str, elsewhere: Mapping[str, Sequence[str]] | None) -> str:
    if elsewhere is None:
        return "other runner profiles not asked"
    found = elsewhere.get(cell_id, ())
    if found:
        return f"it would run on {', '.join(found)}, which no job of the schedule uses"
    return "no runner profile would run it (the matrix keeps it off every one)"
