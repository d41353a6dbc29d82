"""A declared schedule file: what CI runs where, written down for the jobs no reader can follow statically.

A GitHub matrix built at run time (flashinfer's `jq` step read back by `runs-on: ${{ matrix.runner }}`) or a
runner that drives pytest from Python cannot be read; the declaration says what it selects (a pytest command
line or a script the job calls), on which labels, with which env and gating, and where it stands in CI.
Pure: TOML data in, schedule records out; scripts come through an injected loader.

    [schedule]
    source = ".github/workflows/pr-test.yml"
    [[entry]]
    job = "test (JIT Unittest 1 (A10G))"
    labels = ["self-hosted", "gpu", "sm86"]
    script = "scripts/task_jit_run_tests_part1.sh"      # or: pytest = "pytest tests/ --ignore=tests/x"
    gates = ["always", "label"]
    env = { CUDA_VISIBLE_DEVICES = "0" }
    base = "fresh"                                      # optional, also under [schedule]: "fresh" | "unknown"
    install = ["pip install -e .[dev]"]                 # optional, also under [schedule]: as the job runs them
    [markers]                                           # conftest hooks that turn a marker into a skip
    arch_blackwell = "torch.cuda.get_device_capability() < (10, 0)"
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.profile import RunnerProfile
from matrix.core.tomlfields import expect_keys, str_field, strings_field, table_field, tables_field
from matrix.schedule.commands.pytest_command import ScriptLoader, read_script, strip_prefixes
from matrix.schedule.environment.build import environment_of
from matrix.schedule.environment.installs import install_step
from matrix.schedule.environment.model import Base, InstallStep, JobEnvironment
from matrix.schedule.labels import LabelIndex, Resolution
from matrix.schedule.model import (
    CommandReader,
    Gate,
    Origin,
    Schedule,
    ScheduleEntry,
    StepContext,
    UnknownLabel,
    UnreadableCommand,
    UnreadJob,
    unread_entry,
)

MAX_ENTRIES = 1_000


@dataclass(frozen=True, kw_only=True)
class DeclaredEntry:
    job: str
    line: int
    labels: tuple[str, ...]
    profiles: tuple[str, ...]
    script: str | None
    command: str | None
    working_dir: str
    env: tuple[tuple[str, str], ...]
    gates: tuple[Gate, ...]
    note: str
    setup: DeclaredEnvironment | None = None


@dataclass(frozen=True, kw_only=True)
class DeclaredEnvironment:
    """What a declaration says the job's interpreter holds: its base (`fresh`: the standard library and pip only,
    `unknown`: anything) and its install commands in order, as the job runs them (read by the environment model's
    install reader; a command outside its subset is unread, and then the job may hold anything)."""

    base: Base | None = None
    install: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Declared:
    """A parsed declaration: the CI file it stands for, its entries, and marker conditions."""

    source: str
    entries: tuple[DeclaredEntry, ...]
    setup: DeclaredEnvironment | None = None
    markers: tuple[tuple[str, str], ...] = ()
    unread: tuple[tuple[str, int, str], ...] = ()  # (job, line, why) jobs declared as unreadable


_ENTRY_KEYS = {"job", "line", "labels", "profiles", "script", "pytest", "working_dir", "env", "gates", "note", "base", "install"}
MAX_INSTALLS = 200


def parse_declared(data: Mapping[str, Any], source: str) -> Declared:
    """Validate a declaration; any unknown key or wrong type is a ConfigError naming the entry."""
    expect_keys(data, {"schedule", "entry", "markers", "unread"}, source)
    head = table_field(data.get("schedule", {}), f"{source}: [schedule]")
    expect_keys(head, {"source", "note", "base", "install"}, f"{source}: [schedule]")
    ci_file = str_field(head.get("source", source), f"{source}: [schedule] source")
    raw = tables_field(data.get("entry", []), f"{source}: entry")
    if len(raw) > MAX_ENTRIES:
        raise ConfigError(f"{source}: more than {MAX_ENTRIES} entries")
    entries = tuple(_entry(t, f"{source}: entry {i + 1}") for i, t in enumerate(raw))
    markers = table_field(data.get("markers", {}), f"{source}: [markers]")
    marker_pairs = tuple((str(k), str_field(v, f"{source}: markers.{k}")) for k, v in markers.items())
    unread = tuple(
        (
            str_field(t.get("job"), f"{source}: unread {i + 1}: job"),
            _line(t.get("line", 0), f"{source}: unread {i + 1}: line"),
            str_field(t.get("reason"), f"{source}: unread {i + 1}: reason"),
        )
        for i, t in enumerate(tables_field(data.get("unread", []), f"{source}: unread"))
    )
    setup = _setup(head, f"{source}: [schedule]")
    return Declared(source=ci_file, entries=entries, markers=marker_pairs, unread=unread, setup=setup)


def _setup(t: Mapping[str, Any], where: str) -> DeclaredEnvironment | None:
    """The `base` and `install` keys of a table, or None when it has neither."""
    if "base" not in t and "install" not in t:
        return None
    base = None
    if "base" in t:
        text = str_field(t["base"], f"{where}: base")
        if text not in (Base.FRESH.value, Base.UNKNOWN.value):
            raise ConfigError(f"{where}: base must be fresh or unknown, got {text!r}")
        base = Base(text)
    install = strings_field(t.get("install", []), f"{where}: install")
    if len(install) > MAX_INSTALLS:
        raise ConfigError(f"{where}: more than {MAX_INSTALLS} install commands")
    for command in install:
        try:
            words = shlex.split(command)
        except ValueError:
            raise ConfigError(f"{where}: install command does not tokenise: {command[:80]!r}") from None
        if install_step(strip_prefixes(words)) is None:
            raise ConfigError(f"{where}: not an install command (pip, uv, conda): {command[:80]!r}")
    return DeclaredEnvironment(base=base, install=install)


def _line(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 10_000_000:
        raise ConfigError(f"{where}: expected a line number, got {value!r}")
    return value


def _entry(t: Mapping[str, Any], where: str) -> DeclaredEntry:
    expect_keys(t, _ENTRY_KEYS, where)
    script = str_field(t["script"], f"{where}: script") if "script" in t else None
    command = str_field(t["pytest"], f"{where}: pytest") if "pytest" in t else None
    if (script is None) == (command is None):
        raise ConfigError(f"{where}: give exactly one of script or pytest")
    gates_text = strings_field(t.get("gates", ["always"]), f"{where}: gates")
    try:
        gates = tuple(Gate(g) for g in gates_text)
    except ValueError:
        raise ConfigError(f"{where}: gates must be among {', '.join(g.value for g in Gate)}, got {list(gates_text)!r}") from None
    env = table_field(t.get("env", {}), f"{where}: env")
    return DeclaredEntry(
        job=str_field(t.get("job"), f"{where}: job"),
        line=_line(t.get("line", 0), f"{where}: line"),
        labels=strings_field(t.get("labels", []), f"{where}: labels"),
        profiles=strings_field(t.get("profiles", []), f"{where}: profiles"),
        script=script,
        command=command,
        working_dir=str_field(t.get("working_dir", "."), f"{where}: working_dir"),
        env=tuple((str(k), str_field(v, f"{where}: env.{k}")) for k, v in env.items()),
        gates=gates,
        note=str_field(t["note"], f"{where}: note") if "note" in t else "",
        setup=_setup(t, where),
    )


def declared_environment(
    schedule: DeclaredEnvironment | None, entry: DeclaredEnvironment | None, load: ScriptLoader
) -> JobEnvironment | None:
    """An entry's environment: the schedule's base and installs, then the entry's (an entry's own `base` starts
    over from it); None when neither says anything (the environment is then not read)."""
    if schedule is None and entry is None:
        return None
    if entry is not None and entry.base is not None:
        base, commands = entry.base, entry.install
    else:
        base = schedule.base if schedule is not None and schedule.base is not None else Base.UNKNOWN
        commands = (*(schedule.install if schedule is not None else ()), *(entry.install if entry is not None else ()))
    steps: list[InstallStep] = []
    for command in commands:
        step = install_step(strip_prefixes(shlex.split(command)))
        if step is not None:
            steps.append(step)
    note = "declared: a fresh interpreter" if base is Base.FRESH else "declared: what the interpreter holds is not known"
    return environment_of(steps, load, base=base, base_note=note)


def declared_schedule(
    declared: Declared, profiles: Mapping[str, RunnerProfile], load: ScriptLoader, readers: Sequence[CommandReader]
) -> Schedule:
    """Turn the declaration into schedule entries: each script read through the readers, labels to profiles."""
    entries: list[ScheduleEntry] = []
    unread: list[UnreadJob] = [
        UnreadJob(origin=Origin(file=declared.source, line=line, job=job), reason=why) for job, line, why in declared.unread
    ]
    unknown: list[UnknownLabel] = []
    labels = LabelIndex(profiles)
    for d in declared.entries:
        origin = Origin(file=declared.source, line=d.line, job=d.job)
        resolution = Resolution(profiles=d.profiles) if d.profiles else labels.resolve(d.labels)
        names = resolution.profiles
        missing = [n for n in names if n not in profiles]
        if missing:
            raise ConfigError(f"{declared.source}: job {d.job!r}: unknown profile {missing[0]!r}")
        if not names:
            unknown.append(labels.unknown(d.labels, origin))
            continue
        context = StepContext(working_dir=d.working_dir, env=dict(d.env), origin=origin)
        said = (f"declared: {d.note}",) if d.note else ("declared, not read from the workflow",)
        assumption = (*said, *resolution.assumptions)
        found: list[tuple[Any, Origin]] = []
        if d.script is not None:
            result = read_script(d.script, load, readers, context)
            found.extend(result.selections)
            unread.extend(result.unread_jobs())
        else:
            assert d.command is not None
            try:
                words = shlex.split(d.command)
            except ValueError:
                raise ConfigError(f"{declared.source}: job {d.job!r}: pytest command does not tokenise") from None
            for reader in readers:
                try:
                    found.extend((s, origin) for s in reader.selections(words, context))
                except UnreadableCommand as exc:
                    unread.append(unread_entry(origin, exc.reason, exc.reach))
        if not found:
            unread.append(UnreadJob(origin=origin, reason="no pytest invocation found in what the job runs"))
        environment = declared_environment(declared.setup, d.setup, load)
        entries.extend(
            ScheduleEntry(
                selection=selection,
                labels=d.labels,
                profiles=names,
                env=d.env,
                gates=d.gates,
                assumptions=assumption,
                origin=where,
                environment=environment,
            )
            for selection, where in found
        )
    return Schedule(entries=tuple(entries), unread=tuple(unread), unknown_labels=tuple(unknown), sources=(declared.source,))
