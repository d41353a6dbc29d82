"""Read a repository's schedule with the default command readers (the edge: files are read here)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import OutsideTreeError
from matrix.core.treefiles import TreeFiles
from matrix.schedule.model import CommandReader, Schedule

if TYPE_CHECKING:
    from matrix.schedule.sources import ScheduleSource

# The walker, the readers and the declared-file reader are imported when a schedule is read: a
# `guards --no-workflows` run never loads them.

__all__ = [
    "TreeLoader",
    "all_readers",
    "default_readers",
    "find_workflows",
    "load_schedule",
    "read_sources",
    "sources",
]

MAX_SOURCE_BYTES = 4 * 1024 * 1024
MAX_ENTRIES = 20_000  # entries of one folder listed for pathname expansion


def find_workflows(start: Path) -> Path | None:
    """The nearest folder at or above `start` that has `.github/workflows` (what `guards` reads by itself)."""
    from matrix.schedule import files

    return files.find_workflows(start)


def default_readers() -> tuple[CommandReader, ...]:
    """The command readers the guard audit's schedule is read with (sglang's run_suite.py)."""
    from matrix.schedule.commands.run_suite import RunSuiteReader

    return (RunSuiteReader(),)


def all_readers() -> tuple[CommandReader, ...]:
    """Every command reader: sglang's run_suite.py and pytest (what `specmatrix schedule` shows)."""
    from matrix.schedule.commands.pytest_command import PytestCommandReader
    from matrix.schedule.commands.run_suite import RunSuiteReader

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
        self.files = TreeFiles(self.root)

    def __call__(self, path: str) -> str | None:
        if path.startswith("/") or ".." in path.split("/"):
            self.refused[path] = "is outside the repository"
            return None
        try:
            # Walked from the root's descriptor, links resolved by hand; a FIFO or device is refused, never waited on.
            data = self.files.read(path, MAX_SOURCE_BYTES)
        except OutsideTreeError:
            self.refused[path] = "is a link to a file outside the repository"
            return None
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

    def entries(self, folder: str) -> list[tuple[str, str]] | None:
        """(name, kind) of each entry of a repository-relative folder, for pathname expansion (`shell.globs`):
        None when it is no folder inside the root (outside, through a link to outside, missing), at most
        MAX_ENTRIES of them."""
        from matrix.schedule.shell.globs import FILE, FOLDER, LINKED_FOLDER

        if folder.startswith("/") or ".." in folder.split("/"):
            return None
        target = self.root / folder
        try:
            if not target.resolve().is_relative_to(self.root) or not target.is_dir():
                return None
            out: list[tuple[str, str]] = []
            with os.scandir(target) as listing:
                for entry in listing:
                    if len(out) >= MAX_ENTRIES:
                        return None
                    folder_like = entry.is_dir(follow_symlinks=True)
                    kind = (LINKED_FOLDER if entry.is_symlink() else FOLDER) if folder_like else FILE
                    out.append((entry.name, kind))
        except OSError:
            return None
        return out


def load_schedule(
    root: Path,
    runners: Mapping[str, RunnerProfile],
    readers: Sequence[CommandReader] | None = None,
    *,
    cache_dir: Path | None = None,
    follow_scripts: bool = False,
    workflows: bool = True,
    schedule_files: Sequence[Path] = (),
    buildkite_files: Sequence[Path] = (),
) -> Schedule:
    """The schedule every command audits: the GitHub workflows under `root` (a repository root or its
    `.github/workflows`; unless `workflows` is false), then each declared file, then each Buildkite file, merged.
    With `cache_dir` (and the default readers) a workflow schedule read before from the same files is reused; with
    `follow_scripts` the shell scripts steps run (inside the repository) are read too."""
    chosen = default_readers() if readers is None else tuple(readers)
    return read_sources(
        sources(
            root,
            cache_dir=cache_dir if readers is None else None,
            follow_scripts=follow_scripts,
            workflows=workflows,
            schedule_files=schedule_files,
            buildkite_files=buildkite_files,
        ),
        runners,
        chosen,
    )


def sources(
    root: Path,
    *,
    cache_dir: Path | None = None,
    follow_scripts: bool = False,
    workflows: bool = True,
    schedule_files: Sequence[Path] = (),
    buildkite_files: Sequence[Path] = (),
) -> list[ScheduleSource]:
    """The schedule sources a command names, in the order their entries are listed."""
    from matrix.schedule.sources import BuildkiteFile, DeclaredFile, GithubWorkflows

    found: list[ScheduleSource] = []
    if workflows:
        given = frozenset(path.resolve() for path in buildkite_files)  # read below, so not listed as CI not read
        found.append(GithubWorkflows(root=root, follow_scripts=follow_scripts, cache_dir=cache_dir, given=given))
    found += [DeclaredFile(path=path, root=root) for path in schedule_files]
    found += [BuildkiteFile(path=path, root=root) for path in buildkite_files]
    return found


def read_sources(
    found: Sequence[ScheduleSource], runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]
) -> Schedule:
    """Each source read, then merged (one source's schedule is returned as read)."""
    schedules = [source.read(runners, readers) for source in found]
    return schedules[0] if len(schedules) == 1 else Schedule.merge(schedules)
