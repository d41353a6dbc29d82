"""`specmatrix schedule [PATH]`: what the audits believe CI runs, read from the repository's CI files."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matrix.cli.options import add_output_options, add_schedule_file_option
from matrix.core.errors import ConfigError
from matrix.core.jsonio import dumps_indented
from matrix.core.options import Options, load_runner_profiles
from matrix.core.output import text_lines
from matrix.core.profile import RunnerProfile
from matrix.schedule.environment.model import environment_fields
from matrix.schedule.load import all_readers, find_workflows, load_schedule
from matrix.schedule.model import PytestSelection, RunnerHardware, Schedule, ScheduleEntry, SuiteSelection, selection_fields

SCHEMA = "specmatrix.schedule/1"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "schedule",
        help="print the CI schedule read from a repository's workflows (what runs where, and why it is believed)",
        description=(
            "Walk the GitHub workflows of the repository at or above PATH (reusable workflows, matrices, runner-config "
            "tables; the shell scripts steps run) and print every entry, sglang run_suite.py and pytest alike: what it "
            "selects, its runs-on labels and the runner profiles they name, its "
            "gating, its origin file:line and every assumption made to read it. Exit 0; 2 when no workflow is found."
        ),
    )
    p.add_argument("path", type=Path, nargs="?", default=Path("."), help="repository root or a folder inside it (default: .)")
    add_output_options(p, ("text", "json"))
    add_schedule_file_option(
        p,
        help="a declared schedule TOML for what the workflows cannot say, shown in its own section; repeatable (default: none)",
    )
    p.set_defaults(func=cmd_schedule)


def cmd_schedule(args: argparse.Namespace, options: Options) -> int:
    root = find_workflows(args.path) if args.path.exists() else None
    if root is None:
        raise ConfigError(f"{args.path}: no .github/workflows folder at or above it")
    runners = load_runner_profiles(options)
    schedule = read_ci_schedule(root, runners)
    declared = [(str(path), read_declared_schedule(root, runners, path)) for path in args.schedule_file]
    if args.format == "json":
        print(to_json(schedule, declared))
    else:
        # Job names, labels and commands come from the repository's CI files: each line is escaped as a whole, so
        # a newline inside a value (a runs-on label, a job id) is shown as `\n` and never starts a line of its own.
        print(text_lines(text_report(schedule, root, declared)))
    return 0


def read_ci_schedule(root: Path, runners: Mapping[str, RunnerProfile]) -> Schedule:
    """What CI runs, as `specmatrix schedule` prints it and `specmatrix gaps` judges it: the workflows under `root`
    read with every command reader (sglang's run_suite.py and pytest) and the shell scripts their steps run."""
    return load_schedule(root, runners, all_readers(), follow_scripts=True)


def read_declared_schedule(root: Path, runners: Mapping[str, RunnerProfile], path: Path) -> Schedule:
    """One declared schedule TOML (`--schedule-file`), read with the same readers as the workflows."""
    return load_schedule(root, runners, all_readers(), workflows=False, schedule_files=(path,))


def _selection(entry: ScheduleEntry) -> str:
    s = entry.selection
    if isinstance(s, SuiteSelection):
        return f"run_suite.py --suite {s.suite}" + (f" --hw {s.hw}" if s.hw else "") + (" --nightly" if s.nightly else "")
    assert isinstance(s, PytestSelection)
    parts = [*s.paths, *(f"--ignore={x}" for x in s.ignore), *(f"--deselect {x}" for x in s.deselect)]
    parts += [f"-k {s.keyword!r}"] if s.keyword else []
    parts += [f"-m {s.markexpr!r}"] if s.markexpr else []
    parts += [f"shard {s.shard[0]}/{s.shard[1]}"] if s.shard else []
    shown = " ".join(parts)
    return f"pytest {shown[:300]}{'...' if len(shown) > 300 else ''} (in {s.working_dir})"


def to_text(schedule: Schedule, root: Path, declared: Sequence[tuple[str, Schedule]] = ()) -> str:
    """The workflows' entries, then each declared file's, then every job not read and every unknown label."""
    return "\n".join(text_report(schedule, root, declared))


def text_report(schedule: Schedule, root: Path, declared: Sequence[tuple[str, Schedule]] = ()) -> list[str]:
    """`to_text`'s lines, each still holding its values as read (the caller escapes them line by line)."""
    lines = [f"schedule of {root}: {len(schedule.entries)} entries from {len(schedule.sources)} CI files"]
    lines += _entries(schedule)
    for name, extra in declared:
        lines.append(f"declared in {name}: {len(extra.entries)} entries")
        lines += _entries(extra)
    unread = [*schedule.unread, *(u for _, d in declared for u in d.unread)]
    unknown = [*schedule.unknown_labels, *(u for _, d in declared for u in d.unknown_labels)]
    if unread:
        lines.append(f"unread ({len(unread)}):")
        lines += [f"  {u.origin}: {u.reason}" for u in unread]
    not_run = [*schedule.not_run, *(u for _, d in declared for u in d.not_run)]
    if not_run:
        lines.append(f"jobs GitHub never starts ({len(not_run)}):")
        lines += [f"  {u.origin}: {u.reason}" for u in not_run]
    if unknown:
        lines.append(f"labels no runner profile knows ({len(unknown)}):")
        for u in unknown:
            near = f" (nearest: {', '.join(u.nearest)})" if u.nearest else ""
            lines.append(f"  {u.label}{near}: {u.origin}")
    lines.append("files read: " + ", ".join(schedule.sources))
    return lines


def _entries(schedule: Schedule) -> list[str]:
    lines: list[str] = []
    for entry in schedule.entries:
        machine = f"; {entry.hardware.describe()}" if entry.hardware is not None else ""
        profiles = ", ".join(entry.profiles) or (
            f"no CUDA profile ({'; '.join(entry.other_runners)}{machine})" if entry.other_runners else "NO PROFILE"
        )
        gates = "/".join(g.value for g in entry.gates)
        lines.append(f"{_selection(entry)}  on {', '.join(entry.labels)} -> {profiles}  [{gates}]")
        lines.append(f"    from {entry.origin}")
        if entry.container is not None:
            unread = f"; not fully read: {entry.container.unread}" if entry.container.unread else ""
            lines.append(f"    in the container {entry.container.name} (its environment only{unread})")
        if entry.environment is not None:
            lines.append(f"    environment: {entry.environment.describe()}")
        if entry.unset:
            lines.append(
                f"    its environment lacks {', '.join(entry.unset) if '*' not in entry.unset else 'all but its env (env -i)'}"
            )
        for assumption in entry.assumptions:
            lines.append(f"    assumed: {assumption}")
    return lines


def _hardware(h: RunnerHardware) -> dict[str, Any]:
    return {"kind": h.kind, "vendor": h.vendor, "gpus": h.gpus, "arch": h.arch, "labels": list(h.labels)}


def _origin(o: Any) -> dict[str, Any]:
    return {"file": o.file, "line": o.line, "job": o.job, "via": list(o.via)}


def _json_selection(entry: ScheduleEntry) -> dict[str, Any]:
    kind = "run_suite" if isinstance(entry.selection, SuiteSelection) else "pytest"
    return {"type": kind, **selection_fields(entry.selection)}


def to_json(schedule: Schedule, declared: Sequence[tuple[str, Schedule]] = ()) -> str:
    doc = _json_doc(schedule)
    doc["declared"] = [{"file": name, **_json_doc(extra)} for name, extra in declared]
    return dumps_indented(doc)


def _json_doc(schedule: Schedule) -> dict[str, Any]:
    selection = _json_selection
    return {
        "schema": SCHEMA,
        "sources": list(schedule.sources),
        "entries": [
            {
                "selection": selection(e),
                "labels": list(e.labels),
                "profiles": list(e.profiles),
                "other_runners": list(e.other_runners),
                **({"hardware": _hardware(e.hardware)} if e.hardware is not None else {}),
                "env": dict(e.env),
                "gates": [g.value for g in e.gates],
                "assumptions": list(e.assumptions),
                "origin": _origin(e.origin),
                **(
                    {}
                    if e.container is None
                    else {"container": {"name": e.container.name, "unread": e.container.unread, "notes": list(e.container.notes)}}
                ),
                **({} if e.environment is None else {"environment": environment_fields(e.environment)}),
                **({"unset": list(e.unset)} if e.unset else {}),
            }
            for e in schedule.entries
        ],
        "unread": [
            {"origin": _origin(u.origin), "reason": u.reason, **({"reach": list(u.reach)} if u.reach is not None else {})}
            for u in schedule.unread
        ],
        "not_run": [{"origin": _origin(u.origin), "reason": u.reason} for u in schedule.not_run],
        "unknown_labels": [
            {"label": u.label, "nearest": list(u.nearest), "origin": _origin(u.origin)} for u in schedule.unknown_labels
        ],
    }
