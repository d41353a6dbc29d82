"""The environment a CI job gives its test command: what its base holds and which distributions it installs; pure.

`JobEnvironment` is folded from the job's install steps in order (`matrix.schedule.environment.build`) and carried
by each schedule entry, so guards on imports and versions are judged on the job that runs the test."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


def normalized(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503, `packaging.utils.canonicalize_name`: runs of `-`, `_`
    and `.` are one `-`, letters lower case); written out so that a guard audit does not import packaging."""
    return re.sub(r"[-_.]+", "-", name).lower()


class Base(StrEnum):
    """What the interpreter holds before the job's installs: nothing but the standard library and pip (a fresh
    interpreter: `actions/setup-python`, a slim image), or not known (a self-hosted runner, an image not built here)."""

    FRESH = "fresh"
    UNKNOWN = "unknown"


class StepKind(StrEnum):
    """What one install step does to the environment."""

    FRESH = "fresh"  # a fresh interpreter from here on (setup-python, a slim image): earlier installs do not reach it
    UNKNOWN_BASE = "unknown-base"  # an interpreter whose contents are not known (an image not built here)
    INSTALL = "install"  # distributions installed (pip, uv, conda), read or not
    UNINSTALL = "uninstall"  # distributions removed (`pip uninstall -y X`)
    ACTIVATE = "activate"  # a conda environment activated (`conda activate NAME`): its interpreter from here on


@dataclass(frozen=True, kw_only=True)
class InstallStep:
    """One install command (or base change) as read from its words: requirement strings, local projects with their
    extras (`-e '.[dev]'`), requirement and constraint files, `uv sync` extras and groups; `unread` names what is
    not understood (then anything may have been installed)."""

    kind: StepKind = StepKind.INSTALL
    command: str
    requirements: tuple[str, ...] = ()
    projects: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (folder, extras) of `pip install -e .[dev]`
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (folder, dependency groups) of `uv sync --group`
    files: tuple[str, ...] = ()  # -r FILE, repository-relative
    no_deps: bool = False
    cpu_torch: bool = False  # --index-url .../whl/cpu: a CPU-only torch wheel
    unread: str = ""
    # The Python version the step's interpreter has (`3.10`: any 3.10.x), where it says: setup-python's
    # `python-version`, `conda create python=3.10`, an image `python:3.12-slim`; "" otherwise.
    python: str = ""
    environment: str = ""  # the conda environment `conda create -n NAME` makes or `conda activate NAME` enters


@dataclass(frozen=True, kw_only=True)
class Installed:
    """A distribution the job installs: its normalized name, the specifier of its last explicit install (`==4.52.0`,
    `>=4.52`; empty when none or when a later install may have changed its version), and the command."""

    distribution: str
    specifier: str = ""
    command: str = ""
    # Whether an install of it also installed its dependencies (one without --no-deps): they are there from then on.
    with_deps: bool = False


@dataclass(frozen=True, kw_only=True)
class JobEnvironment:
    """A job's Python environment where its tests run: its base, the distributions known installed, the ones it
    may install besides (None: not bounded, an install not read), and why anything is not known."""

    base: Base = Base.UNKNOWN
    base_note: str = "the runner's own Python: what it holds is not known"
    installed: tuple[Installed, ...] = ()
    # Named by the job's installs but not certainly installed (a list picked at run time in setup.py): besides
    # these and the dependencies of what is installed, nothing else is, when `base` is fresh.
    maybe: tuple[str, ...] | None = ()
    unknown: tuple[str, ...] = ()  # what the reading could not say (an install not read, a computed extra)
    cpu_torch: bool = False
    commands: tuple[str, ...] = ()
    # The Python version of the interpreter the tests run in (`3.10`: some 3.10.x), "" when not known.
    python: str = ""
    # The checkout's own projects it installs, whose requirements were read into `installed` and `maybe`.
    local: tuple[str, ...] = ()

    def get(self, distribution: str) -> Installed | None:
        wanted = normalized(distribution)
        return next((i for i in self.installed if i.distribution == wanted), None)

    def names(self) -> frozenset[str]:
        return frozenset(i.distribution for i in self.installed)

    def describe(self, shown: int = 6) -> str:
        """One line: the base, what is installed (the first `shown`), and the first thing not read."""
        base = f"a fresh interpreter ({self.base_note})" if self.base is Base.FRESH else self.base_note
        names = [f"{i.distribution}{i.specifier}" for i in self.installed]
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        installs = f"; installs {', '.join(names[:shown])}{more}" if names else "; installs nothing it names"
        unread = f"; not read: {self.unknown[0]}" if self.unknown else ""
        return f"{base}{installs}{unread}"


UNREAD = JobEnvironment(base_note="not read: the entry does not come from a job whose steps were read")


def environment_fields(environment: JobEnvironment | None) -> dict[str, Any] | None:
    """A job environment as plain JSON values (the schedule cache and `specmatrix schedule --format json`)."""
    if environment is None:
        return None
    return {
        "base": environment.base.value,
        "base_note": environment.base_note,
        "installed": [[i.distribution, i.specifier, i.command, i.with_deps] for i in environment.installed],
        "maybe": None if environment.maybe is None else list(environment.maybe),
        "unknown": list(environment.unknown),
        "cpu_torch": environment.cpu_torch,
        "commands": list(environment.commands),
        "python": environment.python,
        "local": list(environment.local),
    }


def environment_of_fields(doc: dict[str, Any] | None) -> JobEnvironment | None:
    """The inverse of `environment_fields`."""
    if doc is None:
        return None
    return JobEnvironment(
        base=Base(doc["base"]),
        base_note=str(doc["base_note"]),
        installed=tuple(
            Installed(distribution=str(row[0]), specifier=str(row[1]), command=str(row[2]), with_deps=bool(row[3:4] and row[3]))
            for row in doc["installed"]
        ),
        maybe=None if doc["maybe"] is None else tuple(str(m) for m in doc["maybe"]),
        unknown=tuple(str(u) for u in doc["unknown"]),
        cpu_torch=bool(doc["cpu_torch"]),
        commands=tuple(str(c) for c in doc["commands"]),
        python=str(doc.get("python", "")),
        local=tuple(str(n) for n in doc.get("local", ())),
    )
