"""Edge: the plugin's command-line options and the frozen settings resolved from them once per run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from matrix.audit.pytest_options import ENGAGING, Role, role_of, worker_count
from matrix.audit.selection import expand_select_args
from matrix.core.errors import SelectorError, UsageError
from matrix.core.options import CliOverrides, Options, resolve_options, warn_deprecated
from matrix.core.textfiles import read_text


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    options: Options
    engaged: bool
    role: Role
    workers: int
    workers_per_gpu: int
    report_path: Path | None
    select_args: tuple[str, ...]
    selects: tuple[str, ...]
    run_expected_skips: bool
    shard: str | None
    collect_only: bool


__all__ = ["AuditSettings", "Role", "role_of", "settings_from"]


def _read_text(path: str) -> str:
    return read_text(Path(path), SelectorError, f"--matrix-select @{path}")


MAX_WORKERS_PER_GPU = 16


def _workers_per_gpu(value: Any) -> int:
    if not isinstance(value, int) or not 1 <= value <= MAX_WORKERS_PER_GPU:
        raise UsageError(f"--matrix-workers-per-gpu must be 1 to {MAX_WORKERS_PER_GPU}, got {value!r}")
    return value


def _allowlist(opt: Any, role: Role) -> Path | None:
    if opt.matrix_allow and not opt.matrix_allowlist and role is not Role.WORKER:  # one line per run, not per worker
        warn_deprecated("--matrix-allow")
    chosen = opt.matrix_allowlist or opt.matrix_allow
    return Path(chosen) if chosen else None


def settings_from(config: pytest.Config, env: Mapping[str, str]) -> AuditSettings:
    """Resolve the cascade (defaults, pyproject [tool.specmatrix], SPECMATRIX_* env, these options) once."""
    opt: Any = config.option
    cwd = config.invocation_params.dir
    options = resolve_options(
        cli=CliOverrides(
            matrix_path=Path(opt.matrix_file) if opt.matrix_file else None,
            runner_files=tuple(Path(p) for p in opt.matrix_runners),
            runner=opt.matrix_runner,
            allowlist=_allowlist(opt, role_of(config)),
            replace_runners=tuple(opt.matrix_replace_runner),
        ),
        env=env,
        cwd=cwd,
    )
    engaged = any(getattr(opt, name) for name in ENGAGING) or options.runner != "auto"
    select_args = tuple(opt.matrix_select)
    return AuditSettings(
        options=options,
        engaged=engaged,
        role=role_of(config),
        workers=worker_count(config),
        workers_per_gpu=_workers_per_gpu(getattr(opt, "matrix_workers_per_gpu", 1)),
        report_path=Path(opt.matrix_report) if opt.matrix_report else None,
        select_args=select_args,
        selects=expand_select_args(select_args, _read_text),
        run_expected_skips=bool(opt.matrix_run_expected_skips),
        shard=opt.matrix_shard,
        collect_only=bool(config.getoption("collectonly", False)),
    )
