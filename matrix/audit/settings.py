"""Edge: the plugin's command-line options and the frozen settings resolved from them once per run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

from matrix.audit.selection import expand_select_args
from matrix.core.options import CliOverrides, Options, resolve_options

# Options that, when given, turn the audit on from the start (otherwise it waits for a matrix_cell test).
_ENGAGING = ("matrix_runner", "matrix_report", "matrix_allow", "matrix_select", "matrix_run_expected_skips", "matrix_shard")


class Role(StrEnum):
    LOCAL = "local"  # no xdist: this process collects, runs and reports
    CONTROLLER = "controller"  # xdist controller: sees only node ids and reports
    WORKER = "worker"  # xdist worker: collects and runs, reports nothing itself


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    options: Options
    engaged: bool
    role: Role
    workers: int
    report_path: Path | None
    select_args: tuple[str, ...]
    selects: tuple[str, ...]
    run_expected_skips: bool
    shard: str | None
    collect_only: bool


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("specmatrix", "specmatrix skip audit")
    group.addoption(
        "--matrix-runner", metavar="NAME", help="runner profile this run claims (checked against the machine), or 'auto'"
    )
    group.addoption(
        "--matrix-report", metavar="PATH", help="write the audit report: JSON at PATH, JUnit XML and Markdown beside it"
    )
    group.addoption("--matrix-allow", metavar="FILE", help="allowlist TOML for skips outside the matrix on strict runners")
    group.addoption(
        "--matrix-select",
        metavar="S",
        action="append",
        default=[],
        help="run only the cells a selector keeps (repeatable; @FILE reads one selector or cell id per line)",
    )
    group.addoption(
        "--matrix-run-expected-skips",
        action="store_true",
        default=False,
        help="run cells the matrix expects to skip instead of skipping them, to check the rules",
    )
    group.addoption(
        "--matrix", dest="matrix_file", metavar="PATH", help="matrix TOML (default: cascade, then the built-in matrix)"
    )
    group.addoption(
        "--matrix-runners", metavar="FILE", action="append", default=[], help="extra runner-profile TOML (repeatable)"
    )
    group.addoption("--matrix-shard", metavar="LABEL", help="shard label recorded in the report")


def _worker_count(config: pytest.Config) -> int:
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
    return Role.CONTROLLER if _worker_count(config) else Role.LOCAL


def _read_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def settings_from(config: pytest.Config, env: Mapping[str, str]) -> AuditSettings:
    """Resolve the cascade (defaults, pyproject [tool.specmatrix], SPECMATRIX_* env, these options) once."""
    opt: Any = config.option
    cwd = config.invocation_params.dir
    options = resolve_options(
        cli=CliOverrides(
            matrix_path=Path(opt.matrix_file) if opt.matrix_file else None,
            runner_files=tuple(Path(p) for p in opt.matrix_runners),
            runner=opt.matrix_runner,
            allowlist=Path(opt.matrix_allow) if opt.matrix_allow else None,
        ),
        env=env,
        cwd=cwd,
    )
    engaged = any(getattr(opt, name) for name in _ENGAGING) or options.runner != "auto"
    select_args = tuple(opt.matrix_select)
    return AuditSettings(
        options=options,
        engaged=engaged,
        role=role_of(config),
        workers=_worker_count(config),
        report_path=Path(opt.matrix_report) if opt.matrix_report else None,
        select_args=select_args,
        selects=expand_select_args(select_args, _read_text),
        run_expected_skips=bool(opt.matrix_run_expected_skips),
        shard=opt.matrix_shard,
        collect_only=bool(config.getoption("collectonly", False)),
    )
