"""The one check every command's outputs pass before anything is written: an output never lands on an input.

An input is a file the command line names, or a file of a kind the audits read (Python, YAML, TOML, INI and
shell files) under a folder it names: `pytest-audit . --output tests/test_a.py` would otherwise replace a test
file, and `schedule . --output .github/workflows/ci.yml` a workflow. A new file under the folder is fine.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from matrix.core.atomic import refuse_input_targets

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
