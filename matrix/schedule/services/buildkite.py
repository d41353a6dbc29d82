"""vLLM's Buildkite `test_areas/*.yaml` steps as schedule entries; pure (the YAML arrives parsed).

A step names a `device` and `num_devices` (a profile carries the label `DEVICE` for one device and
`DEVICExN` for N), `commands` run relative to `working_dir` (default `/vllm-workspace/tests`, the repository's
`tests/`), `parallelism: N` runs the step N times with `$BUILDKITE_PARALLEL_JOB` = 0..N-1, and
`optional: true` makes it manual on pull requests (it runs nightly). `mirror:` blocks (AMD copies) and
steps without a device are not CUDA steps and are listed as unread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matrix.core.profile import RunnerProfile
from matrix.schedule.commands.pytest_command import commands_of, logical_lines
from matrix.schedule.model import (
    CommandReader,
    Gate,
    Origin,
    Schedule,
    ScheduleEntry,
    Selection,
    StepContext,
    UnknownLabel,
    UnreadableCommand,
    UnreadJob,
)

CONTAINER_ROOT = "/vllm-workspace"
DEFAULT_WORKING_DIR = "/vllm-workspace/tests"
MAX_STEPS = 2_000
MAX_PARALLELISM = 64


def repo_dir(working_dir: str) -> str:
    """The repository-relative folder of a container path (`/vllm-workspace/tests` -> `tests`)."""
    trimmed = working_dir.rstrip("/")
    if trimmed == CONTAINER_ROOT:
        return "."
    if trimmed.startswith(CONTAINER_ROOT + "/"):
        return trimmed[len(CONTAINER_ROOT) + 1 :]
    return trimmed.lstrip("/") or "."


def device_profile(device: str, count: int, profiles: Mapping[str, RunnerProfile]) -> str | None:
    """The profile labelled `DEVICExCOUNT`, or `DEVICE` when one device is asked for."""
    wanted = [f"{device}x{count}"] + ([device] if count == 1 else [])
    for label in wanted:
        for profile in profiles.values():
            if label in profile.labels:
                return profile.name
    return None


def _line_of(step: Mapping[str, Any], lines: Mapping[str, int]) -> int:
    key = step.get("key") or step.get("label")
    return lines.get(str(key), 0)


def read_test_area(
    data: Any,
    file: str,
    profiles: Mapping[str, RunnerProfile],
    readers: Sequence[CommandReader],
    lines: Mapping[str, int] | None = None,
) -> Schedule:
    """Every step of one test-area file; `lines` maps a step's key (or label) to its line for the origin."""
    where = lines or {}
    if not isinstance(data, Mapping) or not isinstance(data.get("steps"), list):
        return Schedule(unread=(UnreadJob(origin=Origin(file=file, line=1, job="(file)"), reason="no steps list"),))
    entries: list[ScheduleEntry] = []
    unread: list[UnreadJob] = []
    unknown: list[UnknownLabel] = []
    for index, step in enumerate(data["steps"][:MAX_STEPS]):
        if not isinstance(step, Mapping):
            continue
        name = str(step.get("key") or step.get("label") or f"step {index + 1}")
        origin = Origin(file=file, line=_line_of(step, where), job=name)
        device = step.get("device")
        count = step.get("num_devices", 1)
        if not isinstance(device, str) or not isinstance(count, int) or isinstance(count, bool) or count < 1:
            unread.append(UnreadJob(origin=origin, reason="no device (or a num_devices that is not a count)"))
            continue
        profile = device_profile(device, count, profiles)
        label = f"{device}x{count}" if count > 1 else device
        if profile is None:
            unknown.append(UnknownLabel(label=label, origin=origin, nearest=_nearest(device, profiles)))
            continue
        gates = (Gate.SCHEDULE, Gate.MANUAL) if step.get("optional") is True else (Gate.ALWAYS,)
        working_dir = repo_dir(str(step.get("working_dir", DEFAULT_WORKING_DIR)))
        parallelism = step.get("parallelism", 1)
        shards = parallelism if isinstance(parallelism, int) and 1 < parallelism <= MAX_PARALLELISM else 1
        found: list[Selection] = []
        problems: list[str] = []
        for shard in range(shards):
            env = {"BUILDKITE_PARALLEL_JOB": str(shard), "BUILDKITE_PARALLEL_JOB_COUNT": str(shards)}
            context = StepContext(working_dir=working_dir, env=env, origin=origin)
            selections, why = _step_commands(step.get("commands", step.get("command", [])), context, readers)
            found.extend(s for s in selections if s not in found)
            problems.extend(w for w in why if w not in problems)
        unread.extend(UnreadJob(origin=origin, reason=why) for why in problems)
        deps = step.get("source_file_dependencies")
        assumption = ("runs only when a changed file matches source_file_dependencies",) if isinstance(deps, list) else ()
        entries.extend(
            ScheduleEntry(selection=s, labels=(label,), profiles=(profile,), gates=gates, assumptions=assumption, origin=origin)
            for s in found
        )
    return Schedule(entries=tuple(entries), unread=tuple(unread), unknown_labels=tuple(unknown), sources=(file,))


def _step_commands(commands: Any, context: StepContext, readers: Sequence[CommandReader]) -> tuple[list[Selection], list[str]]:
    items = [commands] if isinstance(commands, str) else commands if isinstance(commands, list) else []
    found: list[Selection] = []
    problems: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        lines = logical_lines(item)
        control = any(line.startswith(("case ", "if ", "for ", "while ")) for _, line in lines)
        if control and "pytest" in item:
            why = "pytest lines under shell control flow (case/if/for) are counted for every shard"
            if why not in problems:
                problems.append(why)
        for _, line in lines:
            words_list = commands_of(line)
            if words_list is None:
                if "pytest" in line:
                    problems.append("a pytest command that does not tokenise")
                continue
            for words in words_list:
                try:
                    for reader in readers:
                        found.extend(reader.selections(words, context))
                except UnreadableCommand as exc:
                    problems.append(exc.reason)
    return found, problems


def _nearest(device: str, profiles: Mapping[str, RunnerProfile]) -> tuple[str, ...]:
    stem = device.split("_", maxsplit=1)[0].split("-", maxsplit=1)[0]
    return tuple(sorted(p.name for p in profiles.values() if any(stem in label for label in p.labels)))[:3]
