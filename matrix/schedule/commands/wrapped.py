"""Whether a command runs pytest, through whatever launches it; pure.

`pytest`, `python3 -W error -X dev -m pytest`, `$PYTHON -m pytest`, and pytest behind a launcher: `coverage run -m`,
`torchrun -m`, `python -m torch.distributed.run`, `mpirun`/`mpiexec`/`srun`, `xvfb-run`, `poetry`/`hatch`/`pixi`/
`conda`/`mamba`/`pdm`/`pipenv`/`rye` `run`. A command that runs `-m pytest` through a program this module does not
know is not guessed at: it comes back unread, with the program named, so its tests are undetermined rather than
unscheduled. The launchers read are declared in `commands.subset`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from matrix.schedule.commands.python_scripts import python_options
from matrix.schedule.commands.subset import LAUNCHERS, NOT_RUNS, PYTEST, PYTHON_LAUNCHERS, RUN_TOOLS, UNREAD_LAUNCHERS

_PYTHON = re.compile(r"^python(?:[23](?:\.\d+)?)?[mtd]?(?:\.exe)?$")
_VARIABLE = re.compile(r"^\$\{?[A-Za-z_]\w*\}?$")
# The declared tables (`commands.subset`).
_PYTEST, _LAUNCHERS, _RUN_TOOLS, _PYTHON_LAUNCHERS, _NOT_RUNS = PYTEST, LAUNCHERS, RUN_TOOLS, PYTHON_LAUNCHERS, NOT_RUNS


@dataclass(frozen=True, kw_only=True)
class PytestCall:
    """A command that runs pytest: its arguments, or why it cannot be read (then `arguments` is empty)."""

    arguments: list[str]
    unread: str = ""


def pytest_call(words: Sequence[str]) -> PytestCall | None:
    """The pytest run of `words`, None when they do not run pytest."""
    if not words:
        return None
    direct = _direct(words)
    if direct is not None:
        return PytestCall(arguments=direct)
    program = posixpath.basename(words[0])
    runs_module = _module_index(words)
    if _launches(program, words):
        for start in range(1, len(words)):
            # `hatch run test:pytest`: a hatch environment in front of the command
            head = words[start].partition(":")[2] if program == "hatch" and ":" in words[start] else words[start]
            inner = _direct([head, *words[start + 1 :]])
            if inner is not None:
                loaded = next((w for w in words[1:start] if w == "--env-file" or w.startswith("--env-file=")), None)
                if loaded is not None and program in _RUN_TOOLS:  # `uv run --env-file F pytest`: F's variables
                    return PytestCall(arguments=[], unread=f"`{program} run {loaded}` sets variables from a file not read")
                return PytestCall(arguments=inner)
            if runs_module is not None and start > runs_module:
                break
        if runs_module is not None:
            return PytestCall(arguments=list(words[runs_module + 2 :]))
        return None
    if runs_module is not None:
        return PytestCall(arguments=[], unread=f"pytest run through {words[0][:60]}, a launcher this reader does not know")
    if program in UNREAD_LAUNCHERS and any(_direct(words[i:]) is not None for i in range(1, len(words))):
        return PytestCall(arguments=[], unread=f"pytest run through {program}, with arguments known only at run time")
    return None


def _direct(words: Sequence[str]) -> list[str] | None:
    """Arguments of `pytest ...` or `python [options] -m pytest ...` (also `$PYTHON -m pytest`)."""
    program = posixpath.basename(words[0])
    if program in _PYTEST:
        return list(words[1:])
    if not (_python(program) or _VARIABLE.match(words[0])):
        return None
    found = python_options(words)  # `python -X dev -m pytest`, `python3 -mpytest`, `python -Bm pytest`
    if found is not None and found[0] == "m" and found[1] in _PYTEST:
        return list(words[found[2] :])
    return None  # `python -c '...'` (read by `python_launch`), a script, or another module


def _launches(program: str, words: Sequence[str]) -> bool:
    """Whether `words` run a launcher that runs the command after its own options."""
    if program in _LAUNCHERS:
        return True
    if program in _RUN_TOOLS:
        return len(words) > 1 and words[1] in ("run", "exec")
    if _python(program):
        module = next((words[i + 1] for i in range(1, len(words) - 1) if words[i] == "-m"), None)
        return module in _PYTHON_LAUNCHERS
    return False


def _python(program: str) -> bool:
    return _PYTHON.match(program) is not None


def _module_index(words: Sequence[str]) -> int | None:
    """Where `-m pytest` (or `--module pytest`) stands, if anywhere."""
    for i in range(len(words)):
        if words[i] in ("-m", "--module") and i + 1 < len(words) and words[i + 1] in _PYTEST:
            return i
        if words[i] in ("-mpytest", "-mpy.test"):
            return i - 1  # the arguments start where they would after `-m pytest`
    return None


def runs_tests(arguments: Sequence[str]) -> bool:
    """False for a pytest command that collects, lists or prints without running a test."""
    return not any(a in _NOT_RUNS for a in arguments)
