"""Edge: the plugin's command-line options, a process's xdist role, and whether a run engages the audit.

Imported by the `pytest11` entry point into every pytest run of the environment, so it imports nothing but
pytest: the planning core and the audit machinery load only once a run engages the audit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

from matrix.core.option_table import BY_NAME, PLUGIN_OPTIONS

MATRIX_FIXTURE = "matrix_cell"
REPORT_CELL_ATTR = "specmatrix_cell"  # set by a worker on each matrix item's reports; xdist carries it across
# A test whose cell crashed in an isolated child process adds (CRASHED_PROPERTY, error text) before failing.
CRASHED_PROPERTY = "specmatrix_crashed"
PAYLOAD_KEY = "specmatrix"  # the controller's plan, handed to each xdist worker

# Options that, when given, turn the audit on from the start (otherwise it waits for a matrix_cell test).
ENGAGING = (
    BY_NAME["runner"].plugin_attr,
    "matrix_report",
    BY_NAME["allowlist"].plugin_attr,
    "matrix_allow",
    "matrix_select",
    "matrix_run_expected_skips",
    "matrix_shard",
)
ENV_PREFIX = "SPECMATRIX_"
# Environment that configures the audit: any of these set means "plan now", as the options above do.
ENGAGING_ENV = (BY_NAME["runner"].env,)
PYPROJECT_TABLE = "tool.specmatrix"


class Role(StrEnum):
    LOCAL = "local"  # no xdist: this process collects, runs and reports
    CONTROLLER = "controller"  # xdist controller: sees only node ids and reports
    WORKER = "worker"  # xdist worker: collects and runs, reports nothing itself


def _add_cascade_option(group: Any, name: str) -> None:
    """One option of the cascade, as the option table declares it."""
    spec = BY_NAME[name]
    extra: dict[str, Any] = {"action": "append", "default": []} if spec.kind.accumulates else {}
    if spec.plugin_dest:
        extra["dest"] = spec.plugin_dest
    group.addoption(spec.plugin_flag, metavar=spec.plugin_metavar or spec.metavar, help=spec.plugin_help, **extra)


def add_options(parser: pytest.Parser) -> None:
    """The plugin's options, as the option table lists them (`matrix.core.option_table.PLUGIN_OPTIONS`)."""
    group = parser.getgroup("specmatrix", "specmatrix skip audit")
    for option in PLUGIN_OPTIONS:
        if isinstance(option, str):
            _add_cascade_option(group, option)
            continue
        extra: dict[str, Any] = {"default": option.default}
        if option.switch:
            extra["action"] = "store_true"
        else:
            extra["metavar"] = option.metavar
        if option.repeated:
            extra["action"] = "append"
        if option.integer:
            extra["type"] = int
        group.addoption(option.flag, help=option.help, **extra)


def worker_count(config: pytest.Config) -> int:
    if config.getoption("dist", "no") == "no":
        return 0
    count = 0
    for spec in config.getoption("tx", None) or ():
        head, star, _ = str(spec).partition("*")
        count += int(head) if star and head.isdigit() else 1
    return count


def role_of(config: pytest.Config) -> Role:
    if hasattr(config, "workerinput"):
        return Role.WORKER
    return Role.CONTROLLER if worker_count(config) else Role.LOCAL


def _pyproject_mentions_us(start: Path) -> bool:
    """Whether the nearest pyproject.toml may hold [tool.specmatrix] (a text probe: parsing waits for engagement)."""
    from matrix.core.textfiles import read_limited

    for folder in (start, *start.parents):
        try:
            return b"specmatrix" in read_limited(folder / "pyproject.toml", 4 * 1024 * 1024)
        except OSError:
            continue
    return False


def engaged_at_start(config: pytest.Config, env: Mapping[str, str] | None = None) -> bool:
    """Whether this run must load the audit now; otherwise it loads when a matrix test (or report) appears."""
    env = os.environ if env is None else env
    opt: Any = config.option
    if any(getattr(opt, name, None) for name in ENGAGING):
        return True
    if any(getattr(opt, BY_NAME[name].plugin_attr, None) for name in ("matrix", "runners")):
        return True
    if any(env.get(name) for name in ENGAGING_ENV):
        return True
    return _pyproject_mentions_us(Path(config.invocation_params.dir))
