"""Keep only the generated modules CI would run: each one audited by `specmatrix guards`, as CI's schedule places it.

A module is kept when the guard audit, given the schedule read from the workflows, reports nothing against it (no
error, no warning) and the selecting jobs run it on the runner whose cells it holds. Every module left out comes
with the audit's reason, so `register` can say which runner configs it left out and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from matrix.core.finding import Severity
from matrix.core.profile import RunnerProfile
from matrix.guards.finder import analyse_source
from matrix.register.modules import GeneratedModule
from matrix.registered_suite.audit import AuditSettings, audit_file, load_suite_map

if TYPE_CHECKING:
    from matrix.schedule.model import Schedule


@dataclass(frozen=True, kw_only=True)
class LeftOut:
    module: GeneratedModule
    why: str


@dataclass(frozen=True, kw_only=True)
class Scheduled:
    kept: tuple[GeneratedModule, ...]
    left_out: tuple[LeftOut, ...]


def _loud(severity: Severity) -> bool:
    return severity in (Severity.ERROR, Severity.WARNING)


def scheduled_modules(modules: Sequence[GeneratedModule], runners: Mapping[str, RunnerProfile], schedule: Schedule) -> Scheduled:
    """The modules some scheduled job runs on their own runner, with nothing for `guards` to report; the rest, why."""
    settings = AuditSettings(runners=runners, suite_map=load_suite_map(), schedule=schedule)
    kept: list[GeneratedModule] = []
    left: list[LeftOut] = []
    for module in modules:
        audit = audit_file(analyse_source(module.file_name, module.text), settings)
        loud = [f for f in audit.findings if _loud(f.severity)]
        if loud:
            why = "; ".join(dict.fromkeys(f"{f.kind}: {f.message}" for f in loud))
            left.append(LeftOut(module=module, why=why))
        elif module.runner not in audit.runners:
            where = ", ".join(audit.runners) or "no runner profile"
            left.append(
                LeftOut(
                    module=module,
                    why=f"the jobs that select it run on {where}, not on {module.runner} whose cells it holds",
                )
            )
        else:
            kept.append(module)
    return Scheduled(kept=tuple(kept), left_out=tuple(left))
