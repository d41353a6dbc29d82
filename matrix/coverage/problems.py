"""What the page shows first: its title from the inputs, and the findings as one list of problems; pure.

Each finding is listed once (a run report and the coverage merge made from it state the same finding: the row names
both inputs), errors before warnings before information, and within a severity what was seen to happen (run
reports, coverage merges, ledger joins) before what a static audit predicts and the cells no runner would run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matrix.coverage.inputs import FindingRow, InputFile, InputKind, RowSeverity

NO_RUNNER = "no runner"  # a finding about what no runner runs (an unscheduled file) says so in its runner column

_SEVERITY_ORDER = {RowSeverity.ERROR: 0, RowSeverity.WARNING: 1, RowSeverity.INFO: 2}
_ORIGIN_ORDER = {
    InputKind.RUN_REPORT: 0,
    InputKind.COVERAGE: 0,
    InputKind.LEDGER_JOIN: 1,
    InputKind.GUARD_AUDIT: 2,
    InputKind.PYTEST_AUDIT: 2,
    InputKind.GAPS: 3,
}


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One finding as the page lists it: the row, and every input that stated it (in the order given)."""

    row: FindingRow
    origins: tuple[InputKind, ...]

    @property
    def origin_text(self) -> str:
        return " + ".join(o.value for o in self.origins)


def _key(row: FindingRow) -> tuple[str, str, str, int, str, str, str]:
    return (row.kind, row.severity.value, row.path, row.line or 0, row.subject, row.runner, row.message)


def problems(rows: Sequence[FindingRow]) -> list[Problem]:
    """The rows once each, worst first; a row several inputs state is one problem naming each of them."""
    seen: dict[tuple[str, str, str, int, str, str, str], list[InputKind]] = {}
    first: dict[tuple[str, str, str, int, str, str, str], FindingRow] = {}
    for row in rows:
        key = _key(row)
        origins = seen.setdefault(key, [])
        first.setdefault(key, row)
        if row.origin not in origins:
            origins.append(row.origin)
    listed = [Problem(row=first[key], origins=tuple(origins)) for key, origins in seen.items()]
    return sorted(listed, key=lambda p: (_SEVERITY_ORDER[p.row.severity], min(_ORIGIN_ORDER.get(o, 4) for o in p.origins)))


def page_title(matrix: str, files: Sequence[InputFile], runners: Sequence[str], *, grid: bool) -> str:
    """What the page is about, from its inputs: the matrix and its runners when a run report drew the grid, else
    each kind of input and what it audited (`pytest audit of /repo`), never the matrix no input used."""
    if grid:
        return f"{matrix} on {', '.join(runners) or 'no runner'}"
    parts = []
    for kind in dict.fromkeys(f.kind for f in files):
        scopes = list(dict.fromkeys(f.scope for f in files if f.kind is kind and f.scope))
        shown = ", ".join(scopes[:3]) + (f" and {len(scopes) - 3} more" if len(scopes) > 3 else "")
        parts.append(f"{kind.value} of {shown}" if scopes else kind.value)
    return "; ".join(parts) or "no input"
