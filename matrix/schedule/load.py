"""Read a repository's schedule with the default command readers (the edge: files are read here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matrix.core.model import RunnerProfile
from matrix.schedule.model import CommandReader, Schedule

# The walker and readers are imported when a schedule is read: `guards --no-workflows` never loads them.

__all__ = ["default_readers", "find_workflows", "load_schedule"]


def find_workflows(start: Path) -> Path | None:
    """The nearest folder at or above `start` that has `.github/workflows` (what `guards` reads by itself)."""
    from matrix.schedule import github

    return github.find_workflows(start)


def default_readers() -> tuple[CommandReader, ...]:
    """The command readers every schedule is read with (sglang's run_suite.py)."""
    from matrix.schedule.run_suite import RunSuiteReader

    return (RunSuiteReader(),)


def load_schedule(
    root: Path,
    runners: Mapping[str, RunnerProfile],
    readers: Sequence[CommandReader] | None = None,
    *,
    cache_dir: Path | None = None,
) -> Schedule:
    """The schedule of the GitHub workflows under `root` (a repository root or its `.github/workflows`); with
    `cache_dir` (and the default readers) a schedule read before from the same files is reused."""
    from matrix.schedule.cache import cached, schedule_key
    from matrix.schedule.github import ci_script_files, read_github, workflow_files
    from matrix.schedule.runner_configs import CANDIDATES

    chosen = default_readers() if readers is None else tuple(readers)
    if cache_dir is None or readers is not None:
        return read_github(root, chosen, runners)
    repo, files = workflow_files(root)
    inputs = [*files, *(repo / c for c in CANDIDATES if (repo / c).is_file()), *ci_script_files(repo)]
    key = schedule_key(inputs, repo, runners, ",".join(type(r).__name__ for r in chosen))
    return cached(cache_dir, key, lambda: read_github(root, chosen, runners))
