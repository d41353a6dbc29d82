"""Where a run's wall time went, per worker, and how a run on more GPUs compares with one on fewer.

Pure: reads `Report`s (their items' `started`, `duration`, `setup_seconds`, `compile_seconds`, `worker`);
tests outside the matrix that ran in the same session count as the worker's `other` time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from matrix.core.errors import ReportError
from matrix.core.report import CellResult, OutsideResult, Report

MAIN_PROCESS = "main"  # items run without xdist carry no worker


@dataclass(frozen=True, kw_only=True)
class WorkerLine:
    worker: str
    items: int  # matrix items
    first_start: float  # seconds after the session began
    last_end: float
    busy: float  # sum of matrix item durations (setup + call + teardown)
    setup: float  # of which recorded setup (imports, fixtures, first CUDA use)
    compile: float  # of which recorded JIT compile (or waiting for another worker's compile)
    others: int = 0  # tests outside the matrix
    other_busy: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Timeline:
    wall: float
    workers: tuple[WorkerLine, ...]
    untimed_others: int = 0  # tests outside the matrix with no start time (reports written before it was recorded)

    @property
    def busy(self) -> float:
        """Worker-seconds spent on matrix items."""
        return sum(w.busy for w in self.workers)

    @property
    def other_busy(self) -> float:
        """Worker-seconds spent on tests outside the matrix."""
        return sum(w.other_busy for w in self.workers)

    @property
    def start_gap(self) -> float:
        """Session start to the first item on any worker: start-up, collection, worker spawn."""
        return min(w.first_start for w in self.workers)

    @property
    def spread(self) -> float:
        """First worker done to last worker done: uneven work units."""
        ends = [w.last_end for w in self.workers]
        return max(ends) - min(ends)

    @property
    def tail(self) -> float:
        """Last item done to session end: report writing and teardown."""
        return self.wall - max(w.last_end for w in self.workers)

    @property
    def utilisation(self) -> float:
        """Busy worker-seconds (matrix items and other tests) over wall x workers."""
        return (self.busy + self.other_busy) / (self.wall * len(self.workers)) if self.wall > 0 else 0.0


@dataclass(frozen=True, kw_only=True)
class Scaling:
    base: Timeline
    scaled: Timeline

    @property
    def speedup(self) -> float:
        return self.base.wall / self.scaled.wall

    @property
    def worker_ratio(self) -> float:
        return len(self.scaled.workers) / len(self.base.workers)

    @property
    def efficiency(self) -> float:
        return self.speedup / self.worker_ratio


def timeline(report: Report, name: str = "report") -> Timeline:
    """Per-worker lines of a report; an error if it has no wall time or no item start times."""
    if report.wall_seconds is None:
        raise ReportError(f"{name}: has no wall_seconds")
    if report.wall_seconds <= 0:
        raise ReportError(f"{name}: wall_seconds is {report.wall_seconds:g}; a run takes some time (corrupt report?)")
    cells: dict[str, list[CellResult]] = defaultdict(list)
    others: dict[str, list[OutsideResult]] = defaultdict(list)
    for cell in report.cells:
        if cell.started is not None:
            cells[cell.worker or MAIN_PROCESS].append(cell)
    for other in report.outside:
        if other.started is not None:
            others[other.worker or MAIN_PROCESS].append(other)
    if not cells and not others:
        raise ReportError(f"{name}: no item has a start time (a report from before `started` was recorded?)")
    lines = []
    for worker in sorted(cells.keys() | others.keys()):
        mine, theirs = cells[worker], others[worker]
        spans = [(c.started or 0.0, c.duration) for c in mine] + [(o.started or 0.0, o.duration) for o in theirs]
        lines.append(
            WorkerLine(
                worker=worker,
                items=len(mine),
                first_start=min(start for start, _ in spans),
                last_end=max(start + duration for start, duration in spans),
                busy=sum(c.duration for c in mine),
                setup=sum(c.setup_seconds or 0.0 for c in mine),
                compile=sum(c.compile_seconds or 0.0 for c in mine),
                others=len(theirs),
                other_busy=sum(o.duration for o in theirs),
            )
        )
    untimed = sum(1 for o in report.outside if o.started is None)
    return Timeline(wall=report.wall_seconds, workers=tuple(lines), untimed_others=untimed)


def render_timeline(name: str, t: Timeline) -> list[str]:
    lines = [
        f"{name}: wall {t.wall:.1f} s, {len(t.workers)} worker(s), busy {t.busy:.1f} worker-s on matrix items "
        f"+ {t.other_busy:.1f} on other tests, utilisation {t.utilisation:.2f}",
        f"  start-up to first item {t.start_gap:.1f} s; workers finish {t.spread:.1f} s apart; "
        f"after the last item {t.tail:.1f} s",
    ]
    if t.untimed_others:
        lines.append(f"  {t.untimed_others} other tests ran without recorded times: they hide in the gaps above")
    for w in t.workers:
        lines.append(
            f"  {w.worker}: {w.items} items, {w.first_start:.1f}-{w.last_end:.1f} s, busy {w.busy:.1f} s "
            f"(setup {w.setup:.1f}, compile {w.compile:.1f}); {w.others} other tests, {w.other_busy:.1f} s"
        )
    return lines


def render_scaling(s: Scaling) -> list[str]:
    return [
        f"speedup {s.speedup:.2f}x on {s.worker_ratio:g}x the workers ({s.base.wall:.1f} s -> {s.scaled.wall:.1f} s), "
        f"efficiency {s.efficiency:.2f}",
        f"  busy worker-s {s.base.busy:.1f} -> {s.scaled.busy:.1f}; start-up {s.base.start_gap:.1f} -> "
        f"{s.scaled.start_gap:.1f} s; finish spread {s.base.spread:.1f} -> {s.scaled.spread:.1f} s",
    ]
