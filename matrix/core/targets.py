"""The checks every command's outputs pass: an output never lands on an input.

Before the command runs, an input is a file the command line names, or a file of a kind the audits read (Python,
YAML, TOML, INI and shell files) under a folder it names: `pytest-audit . --output tests/test_a.py` would otherwise
replace a test file, and `schedule . --output .github/workflows/ci.yml` a workflow. A new file under the folder is
fine. When the command writes, every output is checked again against every file it read (`READ_FILES`, noted by
the readers themselves: the schedule's CI files, scripts, Makefiles and Dockerfiles, the test files, the conftests,
the configuration files), whatever its name: a Dockerfile, a Makefile or an `.env` file the audit read is never
replaced by its report.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from matrix.core.atomic import append_text, refuse_input_targets, write_text_atomic
from matrix.core.errors import OutputError
from matrix.core.textfiles import READ_FILES

# What any audit reads from a tree it is given: test modules and conftests, workflows and Buildkite files,
# pyproject/pytest.ini/tox.ini/setup.cfg, the shell scripts CI steps run.
READ_SUFFIXES = frozenset({".py", ".pyi", ".yml", ".yaml", ".toml", ".ini", ".cfg", ".sh", ".bash"})
# The options that name files a command writes (as argparse stores them).
OUTPUT_DESTS = {"output": "--output", "summary": "--summary", "write_baseline": "--write-baseline", "json_file": "--json"}


def _read_from(target: Path, folders: Iterable[Path]) -> Path | None:
    """The folder `target` lies under when it is an existing file of a kind the audits read, else None."""
    if target.suffix not in READ_SUFFIXES or not target.is_file():
        return None
    full = target.resolve()
    for folder in folders:
        base = folder.resolve()
        if base in full.parents:
            return folder
    return None


def refuse_outputs_on_inputs(outputs: Iterable[tuple[str, Path | None]], named: Iterable[Path]) -> None:
    """Refuse (one `OutputError` line) any output that is a named input or a read file under a named folder."""
    outs = [(option, target) for option, target in outputs if target is not None]
    if not outs:
        return
    inputs = list(named)
    folders = [p for p in inputs if p.is_dir()]
    files = [p for p in inputs if not p.is_dir()]
    refuse_input_targets(outs, files)
    for option, target in outs:
        if _read_from(target, folders) is not None:
            refuse_input_targets([(option, target)], [target])


def refuse_read_outputs(outputs: Iterable[tuple[str, Path | None]]) -> None:
    """Refuse (one `OutputError` line) any output that names a file this run read (`READ_FILES`)."""
    for option, target in outputs:
        if target is None:
            continue
        label = READ_FILES.read_as(target)
        if label is not None:
            raise OutputError(f"{option} {target}: the audit read this file ({label}); write the output elsewhere")


def write_output(option: str, path: Path, text: str) -> None:
    """Write a command's output file (atomically), unless the run read that file."""
    refuse_read_outputs([(option, path)])
    write_text_atomic(path, text)


def append_output(option: str, path: Path, text: str) -> None:
    """Append to a command's summary file, unless the run read that file."""
    refuse_read_outputs([(option, path)])
    append_text(path, text)
