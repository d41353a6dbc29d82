"""Read a repository's schedule with the default command readers (the edge: files are read here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import read_limited
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
    """Repository-relative path -> text, or None: outside the root (also through a link), missing, or oversized;
    why is kept in `refused` (never the file's content), and every path read in `read`, in order. A script's
    bytes that are not UTF-8 (a Latin-1 comment) are read as bash reads them, as bytes that match no command
    (replaced); a Python file's are refused, as Python refuses them."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.refused: dict[str, str] = {}
        self.read: dict[str, None] = {}

    def __call__(self, path: str) -> str | None:
        if path.startswith("/") or ".." in path.split("/"):
            self.refused[path] = "is outside the repository"
            return None
        target = self.root / path
        try:
            if not target.resolve().is_relative_to(self.root):
                self.refused[path] = "is a link to a file outside the repository"
                return None
            data = read_limited(target, MAX_SOURCE_BYTES)  # a FIFO or device is refused, never waited on
        except FileNotFoundError:
            self.refused[path] = "is not in the tree"
            return None
        except OSError as exc:
            self.refused[path] = f"cannot be read ({exc.strerror or type(exc).__name__})"
            return None
        if len(data) > MAX_SOURCE_BYTES:
            self.refused[path] = f"is over the size limit ({MAX_SOURCE_BYTES} bytes)"
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            if path.endswith(".py"):  # Python reads UTF-8 without a coding line: such a file does not load
                self.refused[path] = "is not UTF-8 text"
                return None
            text = data.decode("utf-8", "replace")  # bash reads bytes: a stray byte matches no command
        self.read[path] = None
        return text


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
    from matrix.schedule.files import ci_script_files, container_files, workflow_files
    from matrix.schedule.runner_configs import CANDIDATES

    chosen = default_readers() if readers is None else tuple(readers)
    if cache_dir is None or readers is not None or follow_scripts:
        from matrix.schedule.github import read_github

        scripts = TreeLoader(workflow_files(root)[0]) if follow_scripts else None
        schedule = read_github(root, chosen, runners, scripts=scripts)
        if scripts is not None and scripts.read:  # "files read" names the scripts, Makefiles and Modal files too
            schedule = replace(schedule, sources=tuple(dict.fromkeys((*schedule.sources, *scripts.read))))
        return schedule
    repo, files = workflow_files(root)
    inputs = [*files, *(repo / c for c in CANDIDATES if (repo / c).is_file()), *ci_script_files(repo), *container_files(repo)]
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
