"""`specmatrix schedule [PATH]`: what the audits believe CI runs, read from the repository's CI files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from matrix.cli.options import add_output_options
from matrix.core.errors import ConfigError
from matrix.core.options import Options, load_runner_profiles
from matrix.core.output import text_lines
from matrix.schedule.load import find_workflows, load_schedule
from matrix.schedule.model import PytestSelection, Schedule, ScheduleEntry, SuiteSelection

SCHEMA = "specmatrix.schedule/1"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "schedule",
        help="print the CI schedule read from a repository's workflows (what runs where, and why it is believed)",
        description=(
            "Walk the GitHub workflows of the repository at or above PATH (reusable workflows, matrices, runner-config "
            "tables) and print every entry: what it selects, its runs-on labels and the runner profiles they name, its "
            "gating, its origin file:line and every assumption made to read it. Exit 0; 2 when no workflow is found."
        ),
    )
    p.add_argument("path", type=Path, nargs="?", default=Path("."), help="repository root or a folder inside it (default: .)")
    add_output_options(p, ("text", "json"))
    p.set_defaults(func=cmd_schedule)


def cmd_schedule(args: argparse.Namespace, options: Options) -> int:
    root = find_workflows(args.path) if args.path.exists() else None
    if root is None:
        raise ConfigError(f"{args.path}: no .github/workflows folder at or above it")
    schedule = load_schedule(root, load_runner_profiles(options))
    # Job names, labels and commands come from the repository's CI files: text is escaped like every audit's.
    print(to_json(schedule) if args.format == "json" else text_lines(to_text(schedule, root).split("\n")))
    return 0


def _selection(entry: ScheduleEntry) -> str:
    s = entry.selection
    if isinstance(s, SuiteSelection):
        return f"run_suite.py --suite {s.suite}" + (f" --hw {s.hw}" if s.hw else "") + (" --nightly" if s.nightly else "")
    assert isinstance(s, PytestSelection)
    return f"pytest {' '.join(s.paths)} (in {s.working_dir})"


def to_text(schedule: Schedule, root: Path) -> str:
    lines = [f"schedule of {root}: {len(schedule.entries)} entries from {len(schedule.sources)} CI files"]
    for entry in schedule.entries:
        profiles = ", ".join(entry.profiles) or "NO PROFILE"
        gates = "/".join(g.value for g in entry.gates)
        lines.append(f"{_selection(entry)}  on {', '.join(entry.labels)} -> {profiles}  [{gates}]")
        lines.append(f"    from {entry.origin}")
        for assumption in entry.assumptions:
            lines.append(f"    assumed: {assumption}")
    if schedule.unread:
        lines.append(f"unread ({len(schedule.unread)}):")
        lines += [f"  {u.origin}: {u.reason}" for u in schedule.unread]
    if schedule.unknown_labels:
        lines.append(f"labels no runner profile knows ({len(schedule.unknown_labels)}):")
        for u in schedule.unknown_labels:
            near = f" (nearest: {', '.join(u.nearest)})" if u.nearest else ""
            lines.append(f"  {u.label}{near}: {u.origin}")
    lines.append("files read: " + ", ".join(schedule.sources))
    return "\n".join(lines)


def _origin(o: Any) -> dict[str, Any]:
    return {"file": o.file, "line": o.line, "job": o.job, "via": list(o.via)}


def to_json(schedule: Schedule) -> str:
    def selection(entry: ScheduleEntry) -> dict[str, Any]:
        s = entry.selection
        if isinstance(s, SuiteSelection):
            return {"type": "run_suite", "suite": s.suite, "hw": s.hw, "nightly": s.nightly}
        return {"type": "pytest", "paths": list(s.paths), "working_dir": s.working_dir}

    doc = {
        "schema": SCHEMA,
        "sources": list(schedule.sources),
        "entries": [
            {
                "selection": selection(e),
                "labels": list(e.labels),
                "profiles": list(e.profiles),
                "env": dict(e.env),
                "gates": [g.value for g in e.gates],
                "assumptions": list(e.assumptions),
                "origin": _origin(e.origin),
            }
            for e in schedule.entries
        ],
        "unread": [{"origin": _origin(u.origin), "reason": u.reason} for u in schedule.unread],
        "unknown_labels": [
            {"label": u.label, "nearest": list(u.nearest), "origin": _origin(u.origin)} for u in schedule.unknown_labels
        ],
    }
    return json.dumps(doc, indent=2)
