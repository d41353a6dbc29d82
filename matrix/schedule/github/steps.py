"""The step stage of the GitHub Actions walk: a job leg's `run:` steps (and an external workflow's `with.script`),
command by command, through the CommandReaders and the files the commands hand work to; each selection becomes a
schedule entry on each of the job's label sets, and what cannot be read an unread entry."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from matrix.schedule.commands.pytest_command import install_lines
from matrix.schedule.containers.docker import DockerStep
from matrix.schedule.environment.installs import fresh_python
from matrix.schedule.environment.jobs import container_steps, job_environment
from matrix.schedule.environment.model import InstallStep, JobEnvironment
from matrix.schedule.github.checkout import Checkout, workspace_folder
from matrix.schedule.github.context import Found, JobContext, LabelSets, Notes
from matrix.schedule.github.expressions import PLACEHOLDER, OneOf, Unknown, expand
from matrix.schedule.github.local_actions import ACTION, ActionStep
from matrix.schedule.github.run_lines import script_lines
from matrix.schedule.github.step_writes import step_writes
from matrix.schedule.github.workflow_doc import reads_shell, run_facts
from matrix.schedule.model import (
    Container,
    Origin,
    PytestSelection,
    ScheduleEntry,
    Selection,
    StepContext,
    UnreadableCommand,
    UnreadJob,
    unread_entry,
)
from matrix.schedule.shell.commands import CONTAINER, Command, commands, inside
from matrix.schedule.shell.commands import environment as command_environment

if TYPE_CHECKING:
    from matrix.schedule.github.walk import Walker

MAX_ENTRIES = 20_000  # entries one read makes (with the job budget, `github.MAX_WALK_JOBS`)

# An install step and the container it runs in ("": the runner itself).
Placed = tuple[str, InstallStep]
# (selection, where it was read, the shell conditions it runs under, (labels, notes) of its own runner or None,
# the install steps the followed files run before it, (env pairs, names it lacks) of its command when a followed
# script changed them, else None)
_Followed = tuple[
    Selection,
    Origin,
    tuple[str, ...],
    tuple[tuple[str, ...], tuple[str, ...]] | None,
    tuple[InstallStep, ...],
    tuple[tuple[tuple[str, str], ...], tuple[str, ...]] | None,
]


def walk_steps(walker: Walker, job: JobContext, steps: Any, *, env: dict[str, str], notes: Notes, found: Found) -> None:
    """Each step of one job leg, in order: what a step writes to `$GITHUB_ENV` and `$GITHUB_OUTPUT` reaches the
    steps after it, `actions/checkout` says where the repository is, an action whose `with:` holds a test command is
    listed as unread (`subset.STEP_KINDS`)."""
    ctx, event, matrix = job.workflow, job.event, job.matrix
    docker_steps: list[DockerStep] = []  # the leg's steps that may start or build containers (`_container_env`)
    installs: list[Placed] = []  # the leg's install steps so far (`matrix.schedule.environment`)
    outputs: dict[str, dict[str, str | None]] = {}  # step id -> the outputs it writes (`values.KnownValues.lookup`)
    checkout = Checkout()
    for step in steps or []:
        run = step.get("run")
        if run is None:
            uses = str(step.get("uses", ""))
            if uses.startswith("actions/setup-python@") and step.get("if") is None:
                given = step.get("with", {}).get("python-version", "") if isinstance(step.get("with"), dict) else ""
                version, _ = expand(str(given), walker.values.lookup(ctx.inputs, event, matrix, env, Notes(), outputs))
                installs.append(("", fresh_python(f"uses: {uses}", version if isinstance(version, str) else "")))
            if (
                step.get("if") is None
                or walker.values.step_condition(ctx, step["if"], event, matrix=matrix, env=env, notes=Notes()) is not False
            ):
                checkout = checkout.after(step)
                _action_command(walker, job, step, found)
            continue
        text = str(run)
        if "docker" in text or "podman" in text:
            _docker_step(walker, job, step, text, env=env, outputs=outputs, docker_steps=docker_steps)
        first_line, _ = run_facts(text)
        writes = "GITHUB_ENV" in text or "GITHUB_OUTPUT" in text
        if not walker.interesting(run) and step.get("if") is None:
            # a step that only installs: what it installs reaches the steps after it
            where = step.get("working-directory", job.working)
            folder = str(where) if isinstance(where, str) else job.working
            installs.extend((box, s) for _, _, s, box in install_lines(text, folder, env, containers=True))
        if not walker.interesting(run) and not writes:
            continue
        step_notes = notes
        sure = True  # whether the step runs whenever its job does (its `if:` true or absent)
        if step.get("if") is not None:
            said = Notes()
            runs = walker.values.step_condition(ctx, step["if"], event, matrix=matrix, env=env, notes=said)
            if runs is False:
                continue
            sure = runs is True
            if said.items:
                step_notes = Notes(items=[*notes.items, *(x for x in said.items if x not in notes.items)])
        step_env = {**env, **walker.values.env(ctx, step.get("env"), event=event, matrix=matrix, env=env, notes=notes)}
        script, unknown = expand(text, walker.values.lookup(ctx.inputs, event, matrix, step_env, notes, outputs), degrade=True)
        step_origin, lines = _step_lines(walker, job, step, text, first_line)
        texts = () if isinstance(script, Unknown) else tuple(map(str, script.values if isinstance(script, OneOf) else (script,)))
        if isinstance(script, Unknown) and script.bound:
            if walker.interesting(run):
                found.unread.append(
                    UnreadJob(origin=step_origin, reason=f"run: {script.bound}", runners=job_runners(walker, job))
                )
        elif walker.interesting(run) and not reads_shell(str(step.get("shell", job.shell) or "bash")):
            shell = " ".join(str(step.get("shell", job.shell)).split())[:60]
            reason = f"a `shell: {shell}` step: its script is not bash, outside what this reader models"
            found.unread.append(UnreadJob(origin=step_origin, reason=reason, runners=job_runners(walker, job)))
        elif walker.interesting(run):
            start = _start(walker, job, step, checkout=checkout, env=step_env, notes=notes, outputs=outputs)
            if start is None and _may_run_tests(walker, texts, step_env, step_origin):
                said_where = " ".join(str(step.get("working-directory", job.working)).split())[:80]
                reason = f"working-directory {said_where} is known only at run time"
                found.unread.append(UnreadJob(origin=step_origin, reason=reason, runners=job_runners(walker, job)))
            for one in texts if start is not None else ():
                assert start is not None
                walker.checkout = checkout
                try:
                    read_commands(
                        walker,
                        job,
                        one,
                        unknown=unknown,
                        start=start,
                        env=step_env,
                        origin=step_origin,
                        notes=step_notes,
                        found=found,
                        docker_steps=docker_steps,
                        installs=installs,
                        lines=lines if one.count("\n") == text.count("\n") else None,
                    )
                finally:
                    walker.checkout = Checkout()
        if writes:
            _written(step, texts or (text,), origin=step_origin, env=env, outputs=outputs, notes=notes, sure=sure)


def _docker_step(
    walker: Walker,
    job: JobContext,
    step: Mapping[str, Any],
    text: str,
    *,
    env: Mapping[str, str],
    outputs: Mapping[str, Mapping[str, str | None]],
    docker_steps: list[DockerStep],
) -> None:
    """A step that may start or build containers, kept for the commands after it that run in one: not when its
    `if:` is false, and with the condition it runs under when that is not known (`containers.docker.read_job`)."""
    ctx, event, matrix = job.workflow, job.event, job.matrix
    condition = ""
    if step.get("if") is not None:
        runs = walker.values.step_condition(ctx, step["if"], event, matrix=matrix, env=env, notes=Notes())
        if runs is False:
            return
        if runs is None:
            condition = f"if: {' '.join(str(step['if']).split())[:80]} (known only at run time)"
    step_env = {**env, **walker.values.env(ctx, step.get("env"), event=event, matrix=matrix, env=env, notes=Notes())}
    seen, _ = expand(text, walker.values.lookup(ctx.inputs, event, matrix, step_env, Notes(), outputs))
    if isinstance(seen, str):
        where = str(step.get("working-directory", job.working))
        docker_steps.append(DockerStep(script=seen, working_dir=where, condition=condition, env=tuple(step_env.items())))


def _may_run_tests(walker: Walker, texts: Sequence[str], env: Mapping[str, str], origin: Origin) -> bool:
    """Whether a step's script holds a command a reader reads or hands work to a file (from the repository root): a
    step that runs none (an echo-only summary) reaches no test, whatever else about it is not known."""
    for text in texts:
        for command in commands(text, ".", walker.keywords, env):
            if command.unread:
                return True
            context = StepContext(working_dir=command.working_dir, env=command_environment(command, env), origin=origin)
            for reader in walker.readers:
                try:
                    if any(True for _ in reader.selections(command.words, context)):
                        return True
                except UnreadableCommand:
                    return True
            if walker.scripts is not None:
                result = walker.follow(command.words, context)
                if result.selections or result.unread_jobs(lambda reason: reason):
                    return True
    return False


def _start(
    walker: Walker,
    job: JobContext,
    step: Mapping[str, Any],
    *,
    checkout: Checkout,
    env: Mapping[str, str],
    notes: Notes,
    outputs: Mapping[str, Mapping[str, str | None]],
) -> str | None:
    """The folder a `run:` step starts in, from the repository's root (`working-directory`, else the defaults; the
    workspace is `${{ github.workspace }}`); None when an expression in it is known only at run time."""
    raw = step.get("working-directory", job.working)
    if not isinstance(raw, str | int | float):
        return checkout.folder(job.working) if "${{" not in job.working else None
    written = workspace_folder(str(raw))
    if "${{" in written:
        ctx = job.workflow
        value, _ = expand(written, walker.values.lookup(ctx.inputs, job.event, job.matrix, env, notes, outputs))
        if not isinstance(value, str | int | float) or "__UNRESOLVED_" in str(value):
            return None
        written = workspace_folder(str(value))
    return checkout.folder(written)


def _written(
    step: Mapping[str, Any],
    texts: Sequence[str],
    *,
    origin: Origin,
    env: dict[str, str],
    outputs: dict[str, dict[str, str | None]],
    notes: Notes,
    sure: bool = True,
) -> None:
    """What a step writes to `$GITHUB_ENV` and `$GITHUB_OUTPUT`, put where the later steps read it: a value known
    only at run time (or differently in the step's possible scripts, or written by a step whose `if:` is not known,
    `sure` false) is not known, never the value before it."""
    found = [step_writes(text) for text in texts]
    if not sure:
        found = [
            replace(f, env=tuple((n, None) for n, _ in f.env), outputs=tuple((n, None) for n, _ in f.outputs)) for f in found
        ]
        found = [
            replace(f, why=tuple((n, "written by a step whose if: is known only at run time") for n, _ in f.env)) for f in found
        ]
    where = f"{origin.file}:{origin.line}"
    for kind in ("env", "outputs"):
        names = dict.fromkeys(name for f in found for name, _ in getattr(f, kind))
        for name in names:
            values = {dict(getattr(f, kind)).get(name) for f in found}
            value = next(iter(values)) if len(values) == 1 else None
            if kind == "env":
                why = next((w for f in found for n, w in f.why if n == name), "written differently on different runs")
                env[name] = value if value is not None else "${{ " + f"run time: {why} at {where}" + " }}"
            else:
                step_id = step.get("id")
                if isinstance(step_id, str):
                    outputs.setdefault(step_id.lower(), {})[name.lower()] = value
    for f in found:
        for problem in f.unread:
            if "GITHUB_ENV" in problem:
                # names this reader cannot tell: every variable the job had may have been changed
                for name in list(env):
                    if "${{" not in env[name]:
                        env[name] = "${{ " + f"run time: $GITHUB_ENV written at {where} in a way not read" + " }}"
            notes.add(f"{where}: {problem}; what it sets is not known")


def _action_command(walker: Walker, job: JobContext, step: Mapping[str, Any], found: Found) -> None:
    """An action of another repository whose `with:` holds a test command (`command: pytest tests`): it may run
    tests, and the action is not read (`subset.STEP_KINDS`), so it is listed as unread."""
    said = walker.action_command(step)
    if said is None:
        return
    mark = job.workflow.workflow.run_at(step, "uses")
    origin = replace(job.origin, line=mark[0]) if mark is not None else job.origin
    found.unread.append(UnreadJob(origin=origin, reason=said, runners=job_runners(walker, job)))


def read_commands(
    walker: Walker,
    job: JobContext,
    script: str,
    *,
    unknown: tuple[Unknown, ...],
    start: str,
    env: Mapping[str, str],
    origin: Origin,
    notes: Notes,
    found: Found,
    docker_steps: Sequence[DockerStep] = (),
    installs: list[Placed] | None = None,
    lines: Sequence[int] | None = None,
) -> None:
    """Every command of one step's script (in folder `start`) through the readers and the files it follows;
    `docker_steps` are the job's container steps before it (what a `docker exec` command runs inside), `installs`
    its install steps so far (this step's are added in order), `lines` the file line of each line of the script (a
    command then cites its own line, else the step's)."""
    installs = [] if installs is None else installs
    earlier = tuple(installs)  # the steps before this one
    here = [(line, box, step) for _, line, step, box in install_lines(script, start, env, containers=True)]
    step_origin = origin
    for command in commands(script, start, walker.keywords, env, folders=walker.folders()):
        if lines is not None and not command.file and 0 < command.line <= len(lines):
            origin = replace(step_origin, line=lines[command.line - 1])
        else:
            origin = step_origin
        if command.unread:
            found.unread.append(UnreadJob(origin=origin, reason=shown(command.unread, unknown), runners=job_runners(walker, job)))
            continue
        if not command.words:
            continue
        context_env = command_environment(command, env)
        container: Container | None = None
        if CONTAINER in context_env:
            context_env, container = _container_env(walker, command, script, docker_steps)
        context = StepContext(working_dir=command.working_dir, env=context_env, origin=origin)
        used = [
            f"{unknown[int(m.group(1))].text} is known only at run time"
            for w in command.words
            if "__UNRESOLVED_" in w
            for m in PLACEHOLDER.finditer(w)
            if int(m.group(1)) < len(unknown)
        ]
        selected: list[_Followed] = []
        for reader in walker.readers:
            try:
                selected.extend(
                    (selection, origin, (), None, (), None) for selection in reader.selections(command.words, context)
                )
            except UnreadableCommand as exc:
                reach = _own_reach(walker, exc.reach)
                found.unread.append(unread_entry(origin, shown(exc.reason, unknown), reach, job_runners(walker, job)))
        if walker.scripts is not None:
            selected.extend(_scripts(walker, command.words, context, unknown, found, runners=job_runners(walker, job)))
        if not selected:
            continue
        own = (tuple(sorted(context_env.items())), (*command.unset, *(("*",) if command.cleared else ())))
        for chosen, place, conditions, elsewhere, own_installs, changed in selected:
            env_items, lacks = changed if changed is not None and container is None else own
            selection, where = chosen, place
            if not walker.checkout.plain:
                moved = walker.checkout.selection(chosen)
                if moved is None:
                    reason = "runs pytest from a folder outside the job's checkout of this repository (actions/checkout `path:`)"
                    reach = _reach(walker, chosen)
                    at = replace(place, file=walker.checkout.own(place.file) or origin.file)
                    if reach == ():
                        nothing = f"{reason}, on paths that are no file of it"
                        found.unread.append(UnreadJob(origin=at, reason=nothing, reach=()))
                    else:
                        found.unread.append(
                            unread_entry(at, reason, reach, job_runners(walker, job) if elsewhere is None else None)
                        )
                    continue
                selection, where = moved, replace(place, file=walker.checkout.own(place.file) or place.file)
            # A selection that runs on its own runner (a Modal function's GPU) keeps that runner.
            sets: LabelSets = job.label_sets if elsewhere is None else [elsewhere]
            after = (*dict.fromkeys(used), *command.conditions, *conditions)
            box = container.name if container is not None else ""
            steps = [step for placed, step in earlier if placed == box]
            steps += [step for line, placed, step in here if line < command.line and not command.file and placed == box]
            marker = dict(command.env).get(CONTAINER, "")
            image = (
                _image_steps(walker, marker, [(s.script, s.working_dir) for s in docker_steps]) if container is not None else ()
            )
            for labels, label_notes in sets:
                # setup-python's interpreter is fresh on a GitHub-hosted runner only (not on a Modal function's own)
                hosted = labels if elsewhere is None else ()
                environment = job_environment((*image, *steps, *own_installs), walker.scripts, container, hosted)
                before = (*notes.items, *label_notes)
                if not _entry(
                    walker,
                    job,
                    labels=labels,
                    selection=selection,
                    where=where,
                    env_items=env_items,
                    unset=lacks if container is None else (),
                    container=container if container is not None else job.container,
                    origin=origin,
                    found=found,
                    before=before,
                    after=after,
                    environment=environment,
                ):
                    return
    installs.extend((placed, step) for _, placed, step in here)


def _step_lines(
    walker: Walker, job: JobContext, step: Mapping[Any, Any], text: str, first_line: str
) -> tuple[Origin, tuple[int, ...] | None]:
    """Where a step is written (its first script line, in the workflow or in the local action it comes from) and
    the file line of each line of its script, when the loader marked where its `run:` value starts."""
    origin, wf = job.origin, job.workflow.workflow
    marker = step.get(ACTION)
    if isinstance(marker, ActionStep):  # a step of a local composite action: its own file and line
        caller = wf.marks.get((marker.caller, "uses"))
        called = caller[0] if caller is not None else walker.line_of(wf, marker.uses, after=origin.line)
        lines = script_lines(walker.actions.lines(marker.file), marker.line, marker.style, text) if marker.style != "?" else None
        where = Origin(file=marker.file, line=marker.line, job=origin.job, via=(*origin.via, f"{origin.file}:{called}"))
    else:
        mark = wf.run_at(step)
        lines = script_lines(wf.lines, mark[0], mark[1], text) if mark is not None else None
        line = mark[0] if mark is not None else walker.line_of(wf, first_line, after=origin.line)
        where = Origin(file=origin.file, line=line, job=origin.job, via=origin.via)
    if lines is not None:
        first = next((i for i, part in enumerate(text.split("\n")) if part.strip()), 0)
        where = replace(where, line=lines[first])
    return where, lines


def job_runners(walker: Walker, job: JobContext) -> tuple[str, ...] | None:
    """The runners a job leg runs on (every label set it may take): profile names, and for a known runner no profile
    describes whose labels say what it is (an XPU host, a ROCm one), its labels joined by ", "; None when a label
    set names a runner nothing describes (an unknown label, labels that disagree)."""
    found: list[str] = []
    for labels, _ in job.label_sets:
        resolution = walker.resolution(labels)
        if resolution.unknown or (resolution.others and resolution.hardware is None):
            return None
        if resolution.others:
            found.append(", ".join(labels))
        elif resolution.profiles:
            found.extend(resolution.profiles)
        else:
            return None
    return tuple(dict.fromkeys(found)) or None


def _entry(
    walker: Walker,
    job: JobContext,
    *,
    labels: tuple[str, ...],
    selection: Selection,
    where: Origin,
    env_items: tuple[tuple[str, str], ...],
    container: Container | None,
    origin: Origin,
    unset: tuple[str, ...] = (),
    found: Found,
    before: tuple[str, ...],
    after: tuple[str, ...],
    environment: JobEnvironment | None = None,
) -> bool:
    """One entry of `selection` on one label set (its assumptions: `before`, the labels', then `after`); False once
    the read's entry budget is spent."""
    resolution = walker.resolution(labels)
    profiles, others, hardware = resolution.profiles, resolution.others, resolution.hardware
    mixed: tuple[str, ...] = ()
    if resolution.unknown and (profiles or others):
        # GitHub sends a job only to a runner carrying every label: one no profile knows leaves it unknown.
        mixed = (
            f"runs-on also names {', '.join(resolution.unknown)}, which no runner profile or label pack "
            f"knows: the runner is not known (a job goes only to a runner carrying every label)",
        )
        profiles, others, hardware = (), (), None
    entry = ScheduleEntry(
        selection=selection,
        labels=labels,
        profiles=profiles,
        env=env_items,
        gates=job.gates,
        assumptions=tuple(dict.fromkeys((*before, *resolution.assumptions, *mixed, *after))),
        origin=where,
        other_runners=others,
        container=container,
        environment=environment,
        hardware=hardware if not profiles else None,
        unset=tuple(sorted(set(unset))),
    )
    walker.entries_left -= 1
    if walker.entries_left < 0:
        reason = f"not read: the read's budget of {MAX_ENTRIES} schedule entries is spent"
        found.unread.append(UnreadJob(origin=origin, reason=reason))
        return False
    found.add_entry(entry)
    if not profiles and not others:
        unknown = walker.labels.unknown(labels, origin)
        found.unknown.setdefault((unknown.label, str(origin)), (unknown, ()))
    return True


def _container_env(
    walker: Walker, command: Command, script: str, docker_steps: Sequence[DockerStep]
) -> tuple[dict[str, str], Container]:
    """What a command run in a container sees: the container's environment (read from the job's steps before it,
    and the commands of its own step before it) and what its own script sets inside."""
    from matrix.core.errors import ConfigError
    from matrix.core.treefiles import read_tree_text
    from matrix.schedule.containers.docker import container_of, read_job

    value = next(v for k, v in reversed(command.env) if k == CONTAINER)
    allowed = walker.container_paths()

    def load(path: str) -> str | None:
        try:
            return read_tree_text(walker.repo, walker.repo / path, ConfigError) if path in allowed else None
        except ConfigError:
            return None  # an unreadable Dockerfile leaves the container unread, never the schedule

    def reached(other: Command) -> bool:  # the command itself: nothing from it on has started yet
        return other.line >= command.line and other.words == command.words and CONTAINER in dict(other.env)

    current = bool(docker_steps) and docker_steps[-1].script == script
    env, container = container_of(value, read_job(docker_steps, until=reached if current else None), load)
    return inside(command, dict(env)), container


def _scripts(
    walker: Walker,
    words: Sequence[str],
    context: StepContext,
    unknown: tuple[Unknown, ...],
    found: Found,
    *,
    runners: tuple[str, ...] | None = None,
) -> list[_Followed]:
    """What the shell scripts, make targets and Modal functions a command runs select (each at its own
    file:line, called from the step, with the shell conditions it runs under and, for a Modal function, its
    own runner); what is missing, over the budget or named only at run time is listed as unread (on the job's
    `runners`, unless read in a Python file: a Modal function runs elsewhere)."""
    result = walker.follow(words, context)
    jobs = result.unread_jobs(lambda reason: shown(reason, unknown), lambda reach: _own_reach(walker, reach))
    if not walker.checkout.plain:  # files named from the repository's root; one outside its checkout is not its own
        jobs = [
            replace(job, origin=replace(job.origin, file=own))
            if (own := walker.checkout.own(job.origin.file)) is not None
            else replace(
                job,
                origin=context.origin,
                reason=f"{job.origin.file}: outside the job's checkout of this repository: {job.reason}",
            )
            for job in jobs
        ]
    # On the job's runners, unless read in a Python file: a Modal function runs elsewhere.
    found.unread.extend(replace(u, runners=None if u.origin.file.endswith(".py") else runners) for u in jobs)
    conditions = dict(result.conditions)
    own_runners = {selection: (labels, notes) for selection, labels, notes in result.runners}
    installs = dict(result.installs)
    # Each command's own environment, in the order the commands run: one selection run by two commands of a script
    # (`SUITE=a pytest t` then `SUITE=b pytest t`) keeps both, never the last for each.
    environments: dict[tuple[Selection, Origin], list[_Environment]] = {}
    for selection, where, env, lacks in result.environments:
        environments.setdefault((selection, where), []).append((env, lacks))
    return [
        (s, where, conditions.get(s, ()), own_runners.get(s), installs.get(s, ()), _next(environments.get((s, where))))
        for s, where in result.selections
    ]


_Environment = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]


def _next(queue: list[_Environment] | None) -> _Environment | None:
    """The environment of the next command a selection runs from (the last again where fewer were recorded)."""
    if not queue:
        return None
    return queue.pop(0) if len(queue) > 1 else queue[0]


def _image_steps(walker: Walker, marker: str, docker_steps: Sequence[tuple[str, str]]) -> tuple[InstallStep, ...]:
    """What the image of the container a `docker exec` runs in holds (`matrix.schedule.environment.jobs`)."""
    from matrix.core.errors import ConfigError
    from matrix.core.treefiles import read_tree_text

    allowed = walker.container_paths()

    def load(path: str) -> str | None:
        try:
            return read_tree_text(walker.repo, walker.repo / path, ConfigError) if path in allowed else None
        except ConfigError:
            return None  # an unreadable Dockerfile leaves the image unread, never the schedule

    return container_steps(marker, docker_steps, load)


def _reach(walker: Walker, selection: Selection) -> tuple[str, ...] | None:
    """The repository's files a selection run from outside its checkout could reach (None: not bounded): its paths
    inside the checkout, and for one outside it, the repository's folders and files that end as it does (a step may
    have moved them there: `mv repo/sub/* .` then `pytest tests`)."""
    if not isinstance(selection, PytestSelection):
        return None
    return _own_paths(walker, selection.paths)


def _own_paths(walker: Walker, paths: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for path in paths:
        own = walker.checkout.own(path)
        out.extend([own] if own is not None else walker.same_ending(path))
    return tuple(dict.fromkeys(out))


def _own_reach(walker: Walker, reach: Sequence[str] | None) -> tuple[str, ...] | None:
    """An unread command's bound as the repository's own paths: the readers name paths from the workspace's root,
    which is not the repository's where a checkout has a `path:` (`pytest repo/tests/$(...)` reaches `tests`)."""
    if reach is None:
        return None
    return tuple(reach) if walker.checkout.plain else _own_paths(walker, reach)


def shown(reason: str, unknown: tuple[Unknown, ...]) -> str:
    """A reason with the walker's stand-ins for run-time expressions shown as the expressions."""

    def put(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return "${{ " + unknown[index].text + " }}" if index < len(unknown) else match.group(0)

    return PLACEHOLDER.sub(put, reason)
