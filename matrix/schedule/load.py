"""Read a repository's schedule with the default command readers (the edge: files are read here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matrix.core.model import RunnerProfile
from matrix.schedule.github import find_workflows, read_github
from matrix.schedule.model import CommandReader, Schedule
from matrix.schedule.run_suite import RunSuiteReader

__all__ = ["default_readers", "find_workflows", "load_schedule"]


def default_readers() -> tuple[CommandReader, ...]:
    """The command readers every schedule is read with (sglang's run_suite.py)."""
    return (RunSuiteReader(),)


def load_schedule(
    root: Path, runners: Mapping[str, RunnerProfile], readers: Sequence[CommandReader] | None = None
) -> Schedule:
    """The schedule of the GitHub workflows under `root` (a repository root or its `.github/workflows`)."""
    return read_github(root, default_readers() if readers is None else readers, runners)
