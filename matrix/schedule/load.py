"""Read a repository's schedule with the default command readers (the edge: files are read here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import read_tree_bytes
from matrix.schedule.model import CommandReader, Schedule

# The walker, the readers and the declared-file reader are imported when a schedule is read: a
# `guards --no-workflows` run never loads them.

__all__ = ["TreeLoader", "all_readers", "default_readers", "find_workflows", "load_declared", "load_schedule"]

MAX_SOURCE_BYTES = 4 * 1024 * 1024


def find_workflows(start: Path) -> Path | None:
    """The nearest folder at or above `start` that has `.github/workflows` (what `guards` reads by itself)."""
    from matrix.schedule import files

    return files.find_workflows(start)


def default_readers() -> tuple[CommandReader, ...]:
    """The command readers the guard audit's schedule is read with (sglang's run_suite.py)."""
    from matrix.schedule.run_suite import RunSuiteReader

    return (RunSuiteReader(),)


def all_readers() -> tuple[CommandReader, ...]:
    """Every command reader: sglang's run_suite.py and pytest (what `specmatrix schedule` shows)."""
    from matrix.schedule.pytest_command import PytestCommandReader
    from matrix.schedule.run_suite import RunSuiteReader

    return (RunSuiteReader(), PytestCommandReader())


class TreeLoader:
    """Repository-relative path -> text, or None: outside the root (symlinks resolved), missing, oversized or not UTF-8."""

    def __init__(self, root: Path):
        self.root = root.resolve()

    def __call__(self, path: str) -> str | None:
        try:
            # Symlinks resolved, a target outside the root refused; a FIFO or device is refused, never waited on.
            data = read_tree_bytes(self.root, path, MAX_SOURCE_BYTES)
            return data.decode("utf-8") if len(data) <= MAX_SOURCE_BYTES else None
        except (OSError, UnicodeDecodeError):
            return None


def load_schedule(
    root: Path,
    runners: Mapping[str, RunnerProfile],
    readers: Sequence[CommandReader] | None = None,
    *,
    cache_dir: Path | None = None,
    follow_scripts: bool = False,
) -> Schedule:
    """The schedule of the GitHub workflows under `root` (a repository root or its `.github/workflows`); with
    `cache_dir` (and the default readers) a schedule read before from the same files is reused; with
    `follow_scripts` the shell scripts steps run (inside the repository) are read too."""
    from matrix.schedule.cache import cached, schedule_key
    from matrix.schedule.files import ci_script_files, workflow_files
    from matrix.schedule.runner_configs import CANDIDATES

    chosen = default_readers() if readers is None else tuple(readers)
    if cache_dir is None or readers is not None or follow_scripts:
        from matrix.schedule.github import read_github

        scripts = TreeLoader(workflow_files(root)[0]) if follow_scripts else None
        return read_github(root, chosen, runners, scripts=scripts)
    repo, files = workflow_files(root)
    inputs = [*files, *(repo / c for c in CANDIDATES if (repo / c).is_file()), *ci_script_files(repo)]
    key = schedule_key(inputs, repo, runners, ",".join(type(r).__name__ for r in chosen))
    return cached(cache_dir, key, lambda: _read(root, chosen, runners))


def _read(root: Path, readers: tuple[CommandReader, ...], runners: Mapping[str, RunnerProfile]) -> Schedule:
    from matrix.schedule.github import read_github  # only when the cache has no schedule for these files

    return read_github(root, readers, runners)


def load_declared(
    path: Path, root: Path, runners: Mapping[str, RunnerProfile], readers: Sequence[CommandReader]
) -> tuple[Schedule, dict[str, str]]:
    """A declared schedule file (scripts it names read from the checkout at `root`) and its marker conditions."""
    from matrix.core.tomlfields import read_toml_file
    from matrix.schedule.declared import declared_schedule, parse_declared

    declared = parse_declared(read_toml_file(path), str(path))
    return declared_schedule(declared, runners, TreeLoader(root), readers), dict(declared.markers)
