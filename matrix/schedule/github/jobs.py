"""The job stage of the GitHub Actions walk: a job's matrix expanded by GitHub's rules, each leg's env and runner
label sets, then its steps (`github_steps`); a call of another repository's workflow read through its `with:`
block (`with.script` on `with.runner`, pytorch/test-infra's `linux_job_v2.yml`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from matrix.schedule.github.context import Found, JobContext, LabelSets, Notes, WorkflowContext
from matrix.schedule.github.expressions import OneOf, Unknown, as_text, expand
from matrix.schedule.github.run_lines import script_lines
from matrix.schedule.github.steps import read_commands, walk_steps
from matrix.schedule.github.strategy import NO_MATRIX, Expansion, expand_matrix
from matrix.schedule.github.workflow_doc import is_mapping, label_lists, run_default, run_shell
from matrix.schedule.model import Container, Gate, Origin, UnreadJob

if TYPE_CHECKING:
    from matrix.schedule.github.walk import Walker

MAX_WALK_JOBS = 2048  # jobs one read walks: every matrix combination, across reusable-workflow calls
_VERSION_AXIS = re.compile(r"cuda|rocm|hip|torch|python|version", re.IGNORECASE)


def walk_job(
    walker: Walker,
    ctx: WorkflowContext,
    job: Mapping[str, Any],
    *,
    wf_env: Mapping[str, str],
    gates: tuple[Gate, ...],
    origin: Origin,
    event: str,
    notes: Notes,
    found: Found,
) -> None:
    """Every leg of a job with `steps:` (one per matrix combination)."""
    if walker.jobs_left <= 0:  # spent: not even the matrix is expanded
        spend(walker, 1, origin, found)
        return
    expansion = matrices(walker, ctx, job, notes)
    if not expansion_read(expansion, origin, found) or not spend(walker, len(expansion.combos), origin, found):
        return
    for matrix in expansion.combos:
        job_notes = Notes(items=list(notes.items))
        leg = [f"{k}={as_text(v)}" for k, v in matrix.items() if _VERSION_AXIS.search(k) and isinstance(v, str | int | float)]
        if leg:  # a CUDA / ROCm / torch / Python version leg stays its own entry, even where its commands are alike
            job_notes.add(f"matrix leg: {', '.join(leg)[:160]}")
        env = {**wf_env, **walker.values.env(ctx, job.get("env"), event=event, matrix=matrix, env=wf_env, notes=job_notes)}
        container, container_env = _job_container(
            walker, ctx, job.get("container"), event=event, matrix=matrix, env=env, notes=job_notes
        )
        leg_ctx = JobContext(
            workflow=ctx,
            origin=origin,
            event=event,
            gates=gates,
            matrix=matrix,
            label_sets=labels(walker, ctx, job.get("runs-on"), matrix, event),
            working=run_default(job) or run_default(ctx.workflow.doc) or ".",
            shell=run_shell(job) or run_shell(ctx.workflow.doc) or "",
            container=container,
        )
        env = {**env, **container_env}
        walk_steps(walker, leg_ctx, job.get("steps"), env=env, notes=job_notes, found=found)


def walk_external(
    walker: Walker,
    ctx: WorkflowContext,
    job: Mapping[str, Any],
    *,
    uses: str,
    event: str,
    gates: tuple[Gate, ...],
    origin: Origin,
    notes: Notes,
    found: Found,
) -> None:
    """A call of another repository's workflow (`owner/repo/.github/workflows/x.yml@ref`): its `with.script` is
    read as a `run:` step on `with.runner` (pytorch/test-infra's `linux_job_v2.yml` runs the script so, in the
    checkout of the calling repository); without a script the job is unread."""
    with_ = job.get("with")
    raw = with_.get("script") if is_mapping(with_) else None
    if not isinstance(raw, str):
        found.unread.append(UnreadJob(origin=origin, reason=f"calls {uses}, a workflow of another repository"))
        return
    assert is_mapping(with_)
    expansion = matrices(walker, ctx, job, notes)
    if not expansion_read(expansion, origin, found) or not spend(walker, len(expansion.combos), origin, found):
        return
    mark = ctx.workflow.run_at(with_, "script")
    lines = script_lines(ctx.workflow.lines, mark[0], mark[1], raw) if mark is not None else None
    first = next((i for i, part in enumerate(raw.split("\n")) if part.strip()), 0)
    line = lines[first] if lines is not None else walker.line_of(ctx.workflow, "script:", after=origin.line)
    step_origin = Origin(file=origin.file, line=line, job=origin.job, via=origin.via)
    said = f"with.script is read as a run: step of {uses}, on with.runner, at the repository root"
    lookup = walker.values.lookup
    for matrix in expansion.combos:
        job_notes = Notes(items=[*notes.items, said])
        leg = [
            f"{key}={as_text(value)}"
            for key, raw_value in with_.items()
            if key not in ("script", "runner") and isinstance(raw_value, str) and "matrix." in raw_value.lower()
            for value in (expand(raw_value, lookup(ctx.inputs, event, matrix, {}, Notes()))[0],)
            if not isinstance(value, Unknown | OneOf)
        ]
        if leg:  # each version leg (`gpu-arch-version: ${{ matrix.cuda }}`) stays its own entry
            job_notes.add(f"with: {', '.join(leg)[:160]}")
        image = with_.get("docker-image")
        if isinstance(image, str):
            shown = expand(image, lookup(ctx.inputs, event, matrix, {}, job_notes))[0]
            job_notes.add(f"it runs in the container {as_text(shown) if not isinstance(shown, Unknown) else image}")
        runner = with_.get("runner")
        label_sets: LabelSets
        if runner is None:
            label_sets = [((f"(the default runner of {uses})",), (*job_notes.items, "with.runner is not given"))]
        else:
            label_sets = labels(walker, ctx, runner, matrix, event)
        script, unknown = expand(raw, lookup(ctx.inputs, event, matrix, {}, job_notes))
        if isinstance(script, Unknown) and script.bound:
            found.unread.append(UnreadJob(origin=step_origin, reason=f"with.script: {script.bound}"))
            continue
        if isinstance(script, Unknown):
            found.unread.append(UnreadJob(origin=step_origin, reason=f"with.script {script.text[:80]} is known only at run time"))
            continue
        leg_ctx = JobContext(workflow=ctx, origin=origin, event=event, gates=gates, matrix=matrix, label_sets=label_sets)
        for text in script.values if isinstance(script, OneOf) else (script,):
            read_commands(
                walker,
                leg_ctx,
                str(text),
                unknown=unknown,
                start=".",
                env={},
                origin=step_origin,
                notes=job_notes,
                found=found,
                lines=lines if str(text).count("\n") == raw.count("\n") else None,
            )


def matrices(walker: Walker, ctx: WorkflowContext, job: Mapping[str, Any], notes: Notes) -> Expansion:
    """The job's `strategy.matrix` combinations (`NO_MATRIX` without one); the assumptions go to `notes`."""
    strategy = job.get("strategy")
    matrix = strategy.get("matrix") if is_mapping(strategy) else None
    if matrix is None:
        return NO_MATRIX
    expanded = expand_matrix(matrix, walker.values.lookup(ctx.inputs, None, {}, {}, notes))
    for text in expanded.notes:
        notes.add(text)
    return expanded


def expansion_read(expansion: Expansion, origin: Origin, found: Found) -> bool:
    """Whether the job's matrix gives jobs to walk; a matrix of no combination is a job that never runs, one
    that cannot be read is an unread job (never "no job")."""
    if expansion.unread:
        found.unread.append(UnreadJob(origin=origin, reason=expansion.unread))
    elif expansion.empty:
        found.not_run.append(UnreadJob(origin=origin, reason=expansion.empty))
    return bool(expansion.combos)


def spend(walker: Walker, jobs: int, origin: Origin, found: Found) -> bool:
    """Take `jobs` from the read's job budget; once it is spent every further job is unread, with why."""
    walker.jobs_left -= jobs
    if walker.jobs_left >= 0:
        return True
    found.unread.append(
        UnreadJob(
            origin=origin,
            reason=f"not read: the read's budget of {MAX_WALK_JOBS} jobs (matrix combinations across "
            "reusable-workflow calls) is spent",
        )
    )
    return False


def labels(walker: Walker, ctx: WorkflowContext, runs_on: Any, matrix: Mapping[str, Any], event: str) -> LabelSets:
    """Each possible label set of `runs-on`, with the assumptions behind it."""
    local = Notes()
    resolve = walker.values.lookup(ctx.inputs, event, matrix, {}, local)
    value: Any = runs_on
    if is_mapping(runs_on):
        value = runs_on.get("labels", runs_on.get("group"))
    if isinstance(value, str):
        value, _ = expand(value, resolve)
    if isinstance(value, list):
        value = label_lists(value, resolve)
    options = value.values if isinstance(value, OneOf) else (value,)
    out: LabelSets = []
    for option in options:
        if isinstance(option, Unknown) or option is None:
            text = " ".join(str(runs_on).split())
            why = option.bound if isinstance(option, Unknown) and option.bound else "is known only at run time"
            out.append(((text,), (*local.items, f"runs-on {text[:90]} {why}")))
        elif isinstance(option, list | tuple):
            named = tuple(x.text if isinstance(x, Unknown) else as_text(x) for x in option)
            late = [x.text for x in option if isinstance(x, Unknown)]
            said = tuple(f"runs-on label {t[:90]} is known only at run time" for t in late)
            out.append((named, (*local.items, *said)))
        else:
            out.append(((as_text(option),), tuple(local.items)))
    return out


def _job_container(
    walker: Walker,
    ctx: WorkflowContext,
    raw: object,
    *,
    event: str,
    matrix: Mapping[str, Any],
    env: Mapping[str, str],
    notes: Notes,
) -> tuple[Container | None, dict[str, str]]:
    """The job's own `container:` (an image, or `image:` and `env:`), where its `run:` steps run: the variables
    its `env:` gives them, and the container record (an image that is no Docker Official Image, or one known only
    at run time, sets variables that are not read)."""
    from matrix.schedule.containers.dockerfile import official

    if raw is None:
        return None, {}
    spec = raw if is_mapping(raw) else {"image": raw}
    given = spec.get("image")
    image, _ = (
        expand(str(given), walker.values.lookup(ctx.inputs, event, matrix, env, Notes())) if given is not None else ("", ())
    )
    shown = as_text(image) if isinstance(image, str) else str(given)
    own = walker.values.env(ctx, spec.get("env"), event=event, matrix=matrix, env=env, notes=notes)
    name = shown[:80]
    if isinstance(image, str) and official(image):
        note = f"the job container {shown[:80]} is a Docker Official Image: it sets none of the project's variables"
        return Container(name=name, notes=(note,)), dict(own)
    why = f"the job runs in the container {shown[:80]}, whose image's environment is not read"
    return Container(name=name, unread=why), dict(own)
