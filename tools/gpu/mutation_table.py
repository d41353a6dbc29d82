"""Pure: from one run's per-test statuses under a mutation, which cells went red, and whether that was expected."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from matrix.core.model import Cell
from matrix.core.report import CellResult, CellStatus
from matrix.core.selectors import Selector

RED = frozenset({CellStatus.FAILED, CellStatus.ERROR, CellStatus.CRASHED})
RAN = RED | {CellStatus.PASSED}


@dataclass(frozen=True, kw_only=True)
class MutationRow:
    """One mutation's verdict over the cells that ran (a cell is red when any of its tests is)."""

    mutation: str
    expected_red: tuple[str, ...]
    red: tuple[str, ...]
    green: tuple[str, ...]

    @property
    def missed(self) -> tuple[str, ...]:
        """Expected red, stayed green: the mutation escaped these cells."""
        return tuple(sorted(set(self.expected_red) & set(self.green)))

    @property
    def stray(self) -> tuple[str, ...]:
        """Red although the mutation should not reach them."""
        return tuple(sorted(set(self.red) - set(self.expected_red)))

    @property
    def ok(self) -> bool:
        return bool(self.red or self.green) and not self.missed and not self.stray

    def as_dict(self) -> dict[str, object]:
        return {
            "mutation": self.mutation,
            "expected_red": list(self.expected_red),
            "red": list(self.red),
            "green": list(self.green),
            "missed": list(self.missed),
            "stray": list(self.stray),
            "ok": self.ok,
        }


def cell_verdicts(results: Iterable[CellResult]) -> tuple[set[str], set[str]]:
    """(red cells, green cells) among those that ran; skipped and not-run entries are neither."""
    red: set[str] = set()
    ran: set[str] = set()
    for result in results:
        if result.status in RAN:
            ran.add(result.cell)
        if result.status in RED:
            red.add(result.cell)
    return red, ran - red


def mutation_row(name: str, red_selector: str, cells: Sequence[Cell], results: Iterable[CellResult]) -> MutationRow:
    """The row for one mutation run; `red_selector` is evaluated against the matrix (None matched: no cell expected)."""
    red, green = cell_verdicts(results)
    ran = red | green
    wanted = {c.id for c in Selector.parse(red_selector).filter(list(cells))} if red_selector else set()
    return MutationRow(
        mutation=name,
        expected_red=tuple(sorted(wanted & ran)),
        red=tuple(sorted(red)),
        green=tuple(sorted(green)),
    )


def markdown(rows: Sequence[MutationRow]) -> str:
    lines = [
        "| mutation | cells run | expected red | red | green | missed | stray | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        verdict = "ok" if r.ok else "WRONG"
        lines.append(
            f"| {r.mutation} | {len(r.red) + len(r.green)} | {len(r.expected_red)} | {len(r.red)} | {len(r.green)} "
            f"| {len(r.missed)} | {len(r.stray)} | {verdict} |"
        )
    return "\n".join(lines) + "\n"
