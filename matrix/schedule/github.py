"""Walk a repository's GitHub Actions workflows into a `Schedule`: every command line of every `run:` step goes to
the CommandReaders, with the job's runner labels, environment, gating and origin.

Followed: reusable-workflow calls (`uses: ./.github/workflows/x.yml`, `with:` substituted into the callee's
`${{ inputs.* }}` over the input defaults; the callee's own `env:`, never the caller's), the trigger events of the
calling workflow (a workflow called from a scheduled one is gated SCHEDULE), job `if:` conditions evaluated per
event, `strategy.matrix` with include/exclude, runner-config tables (`runs_on_map`), run-time outputs echoed as
literals to `$GITHUB_OUTPUT`, `$GITHUB_ENV` writes. What cannot be resolved is assumed, and the assumption is kept on
the entry.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from matrix.core.errors import ConfigError
from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import read_text
from matrix.schedule.expressions import (
    PLACEHOLDER,
    OneOf,
    Unknown,
    as_text,
    evaluate,
    evaluate_shared,
    expand,
    truthy,
)
from matrix.schedule.files import CI_NAME, ci_script_names, in_repo, workflow_files
from matrix.schedule.labels import LabelIndex, Resolution
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
    called_from,
    unread_entry,
)
from matrix.schedule.runner_configs import RunnerConfigTable, find_table
from matrix.schedule.shell import FOLLOWED, commands
from matrix.schedule.strategy import NO_MATRIX, Expansion, expand_matrix
from matrix.schedule.workflow_doc import (
    OUTPUT_ECHO,
    READS_JOB,
    STEP_OUTPUT,
    call_inputs,
    check_shape,
    condition_body,
    continues,
    dispatch_inputs,
    find_line,
    is_mapping,
    key_lines,
    label_lists,
    live_lines,
    needs_of,
    run_default,
    run_facts,
    triggers,
)
from matrix.schedule.yamldoc import load_yaml

if TYPE_CHECKING:
    from matrix.schedule.pytest_command import ScriptLoader, ScriptResult

MAX_CALL_DEPTH = 8
# One budget for a whole read: the jobs walked (every matrix combination, across reusable-workflow calls, whose
# product has no other bound) and the entries made. sglang's CI walks about 900 jobs into about 650 entries.
MAX_WALK_JOBS = 2048
MAX_ENTRIES = 20_000
EVENT_GATES = {
    "schedule": Gate.SCHEDULE,
    "pull_request": Gate.ALWAYS,
    "pull_request_target": Gate.ALWAYS,
    "push": Gate.ALWAYS,
    "merge_group": Gate.ALWAYS,
    "workflow_dispatch": Gate.MANUAL,
    "repository_dispatch": Gate.MANUAL,
}


@dataclass(frozen=True, kw_only=True)
class _Workflow:
    name: str  # repo-relative path
    doc: Mapping[str, Any]
    lines: tuple[str, ...]


class _Notes:
    """Assumptions made while resolving one job's values (kept in order, once each). A plain class: a walk makes
    a few thousand, and a dataclass's generated `__init__` with a default factory costs twice as much."""

    __slots__ = ("items",)

    def __init__(self, *, items: list[str] | None = None) -> None:
        self.items: list[str] = [] if items is None else items

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)


@dataclass(frozen=True, kw_only=True)
class _Context:
    workflow: _Workflow
    events: tuple[str, ...]
    inputs: Mapping[str, Any]
    via: tuple[str, ...]
    # (event, condition text) -> its truth: an `if:` reads only the inputs, the event and the echoed outputs
    # (never the matrix or env), so the same text in the same walk has the same value (a step's `if:` in every
    # matrix job).
    conditions: dict[tuple[str, str], bool | None] = field(default_factory=dict, compare=False, repr=False)
    # event -> the values of the parts of `if:` texts read so far (`evaluate_shared`): sglang's jobs repeat the
    # same clauses (`github.repository == ... || github.event_name == ...`, a job filter) with one name changed.
    parts: dict[str, dict[int, Any]] = field(default_factory=dict, compare=False, repr=False)


def read_github(
    root: Path,
    readers: Sequence[CommandReader],
    runners: Mapping[str, RunnerProfile],
    *,
    scripts: ScriptLoader | None = None,
) -> Schedule:
    """The schedule of every workflow under `root` (see the module docstring); bad input is one ConfigError.
    With `scripts` (repo-relative path -> text or None), the shell scripts a step runs are read too."""
    repo, files = workflow_files(root)
    workflows: dict[str, _Workflow] = {}
    refused: list[UnreadJob] = []
    for path in files:
        name = path.relative_to(repo).as_posix()
        if not in_repo(repo, path):  # named by its path in the tree; what lies outside is never read
            reason = "the workflow is a link to a file outside the repository; not read"
            refused.append(UnreadJob(origin=Origin(file=name, line=1, job="*"), reason=reason))
            continue
        text = read_text(path, ConfigError)
        doc = load_yaml(text, name)
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise ConfigError(f"{name}: a workflow must be a mapping with jobs")
        check_shape(doc, name)
        workflows[name] = _Workflow(name=name, doc=doc, lines=tuple(text.splitlines()))
    walker = _Walker(repo=repo, workflows=workflows, readers=tuple(readers), runners=runners, scripts=scripts)
    schedule = walker.run()
    return replace(schedule, unread=(*refused, *schedule.unread)) if refused else schedule


# (selection, where it was read, the shell conditions it runs under, (labels, notes) of its own runner or None)
_Followed = tuple[Selection, Origin, tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]] | None]


class _Walker:
    def __init__(
        self,
        *,
        repo: Path,
        workflows: Mapping[str, _Workflow],
        readers: tuple[CommandReader, ...],
        runners: Mapping[str, RunnerProfile],
        scripts: ScriptLoader | None = None,
    ) -> None:
        self.repo = repo
        # A script called from many matrix jobs is read from disk once.
        self.scripts = functools.lru_cache(maxsize=512)(scripts) if scripts is not None else None
        self.workflows = workflows
        self.readers = readers
        self.runners = runners
        self.table: RunnerConfigTable | None = find_table(repo)
        self.outputs = self._echoed_outputs()
        self.table_outputs = self._table_outputs() if self.table is not None else frozenset()
        self.computed = self._computed_outputs()
        self.labels = LabelIndex(runners)
        self._resolutions: dict[tuple[str, ...], Resolution] = {}
        self._call_defaults: dict[str, dict[str, Any]] = {}
        # Entries and unknown labels are kept with the call chain that reaches them from the walk being read
        # (`_Rooted`), and given their full origin once, at the end: a callee's results pass up through each caller.
        self.entries: list[_Rooted[ScheduleEntry]] = []
        self.unread: list[UnreadJob] = []
        self.not_run: list[UnreadJob] = []
        self.jobs_left = MAX_WALK_JOBS
        self.entries_left = MAX_ENTRIES
        self.unknown: dict[tuple[str, str], _Rooted[UnknownLabel]] = {}
        self._output_cache: dict[str, tuple[Any, tuple[str, ...]]] = {}
        self._walked: dict[
            str, tuple[list[_Rooted[ScheduleEntry]], list[UnreadJob], list[_Rooted[UnknownLabel]], list[UnreadJob]]
        ] = {}
        self._unknown_paths: dict[tuple[str, ...], Unknown] = {}
        self._interest: dict[str, bool] = {}
        self._lines: dict[tuple[str, str, int], int] = {}
        self._key_lines: dict[str, dict[str, int]] = {}
        self._stack: list[str] = []
        self._script_results: dict[tuple[tuple[str, ...], str, tuple[tuple[str, str], ...], Origin], ScriptResult] = {}
        self._notes_now = _Notes()
        # Every reader names the text its commands hold: lines without any are not split.
        found = [getattr(r, "keywords", None) for r in self.readers]
        self.keywords = None if any(k is None for k in found) else tuple(k for ks in found if ks for k in ks)
        if self.keywords is not None and scripts is not None:
            self.keywords = (*self.keywords, *FOLLOWED)  # a line that runs a script (make, modal) may lead to one

    def run(self) -> Schedule:
        for wf in self.workflows.values():
            events = tuple(e for e in triggers(wf.doc) if e != "workflow_call")
            if events:
                self._stack = [wf.name]
                self.walk(_Context(workflow=wf, events=events, inputs=dispatch_inputs(wf.doc), via=()), depth=0)
        sources = tuple(self.workflows) + ((self.table.source,) if self.table else ())
        names: set[str] = set()
        for wf in self.workflows.values():
            names.update(CI_NAME.findall("\n".join(wf.lines)))  # one scan per file: \b stops at a line break
        names.update(ci_script_names(self.repo))
        return Schedule(
            ci_names=tuple(sorted(names)),
            entries=tuple(dict.fromkeys(_rooted(entry, via) for entry, via in self.entries)),
            unread=tuple(dict.fromkeys(self.unread)),
            not_run=tuple(dict.fromkeys(self.not_run)),
            unknown_labels=tuple(_rooted(label, via) for label, via in self.unknown.values()),
            sources=sources,
        )

    # -- values known before run time -------------------------------------------------------------------------

    def _echoed_outputs(self) -> dict[str, list[tuple[str, str]]]:
        """Run-time output name -> [(literal value, file:line)] from `echo "NAME=value" >> $GITHUB_OUTPUT` lines."""
        out: dict[str, list[tuple[str, str]]] = {}
        for wf in self.workflows.values():
            for number, line in enumerate(wf.lines, 1):
                if "GITHUB_OUTPUT" not in line or line.lstrip().startswith("#"):
                    continue  # the pattern needs it (`in` is far cheaper than a regex); a comment writes nothing
                for match in OUTPUT_ECHO.finditer(line):
                    name, value = match.group(1), match.group(2)
                    if value and (value, f"{wf.name}:{number}") not in out.get(name, []):
                        out.setdefault(name, []).append((value, f"{wf.name}:{number}"))
        return out

    def _table_outputs(self) -> frozenset[str]:
        """The output names that hold the whole runner-config table: those a step that runs the table's script
        with `--map` (sglang's `runner_configs.py --map`; without it the script prints one config's fields) writes
        to `$GITHUB_OUTPUT`, and the job and workflow outputs passing
        them on under the same name (`steps.<id>.outputs.N` -> `jobs.<id>.outputs.N` -> `needs.<id>.outputs.N`)."""
        assert self.table is not None
        script = self.table.source.rsplit("/", 1)[-1].rsplit(".", 1)[0]  # runner_configs
        writers: set[str] = set()
        for wf in self.workflows.values():
            for job in (wf.doc.get("jobs") or {}).values():
                for step in job.get("steps") or []:
                    run = step.get("run")
                    live = live_lines(run) if isinstance(run, str) else ""
                    if f"{script}.py --map" in live and "GITHUB_OUTPUT" in live and step.get("id"):
                        writers.add(str(step["id"]))
        names: set[str] = set()
        for wf in self.workflows.values() if writers else ():
            for line in wf.lines:
                if "steps." in line:
                    names.update(m.group(2) for m in STEP_OUTPUT.finditer(line) if m.group(1) in writers)
        return frozenset(names)

    def _computed_outputs(self) -> dict[str, tuple[str, str]]:
        """Output name -> (value, the assumption it rests on) for outputs a `run:` step computes with jq
        (`matrix.schedule.jq_outputs`); a name two jobs compute differently is left out."""
        if not any("jq" in text and "GITHUB_OUTPUT" in text for text in ("\n".join(wf.lines) for wf in self.workflows.values())):
            return {}  # no workflow computes an output with jq: nothing to import or parse
        from matrix.schedule.jq_outputs import job_outputs

        load = self.scripts if self.scripts is not None else (lambda _path: None)
        found: dict[str, set[tuple[str, str]]] = {}
        for wf in self.workflows.values():
            jobs = wf.doc.get("jobs")
            for job_id, job in jobs.items() if isinstance(jobs, Mapping) else ():
                if not isinstance(job, Mapping):
                    continue
                for key, (value, assumptions) in job_outputs(job, load).items():
                    note = "; ".join(
                        (f"{key.rsplit('.', 1)[-1]} computed from the jq steps of {wf.name} job {job_id}", *assumptions)
                    )
                    found.setdefault(key.rsplit(".", 1)[-1], set()).add((value, note))
        return {name: next(iter(values)) for name, values in found.items() if len({v for v, _ in values}) == 1}

    def output(self, name: str, notes: _Notes) -> Any:
        if name not in self._output_cache:
            local = _Notes()
            self._output_cache[name] = (self._output(name, local), tuple(local.items))
        value, said = self._output_cache[name]
        for text in said:
            notes.add(text)
        return value

    def _output(self, name: str, notes: _Notes) -> Any:
        if self.table is not None and name in self.table_outputs:
            notes.add(f"{name} is the runs_on column of {self.table.source}")
            return {key: self._label_value(label, notes) for key, label in self.table.runs_on}
        computed = self.computed.get(name)
        if computed is not None:
            notes.add(computed[1])
            return computed[0]
        found = self.outputs.get(name)
        if not found:
            return Unknown(text=f"outputs.{name}")
        values = tuple(dict.fromkeys(v for v, _ in found))
        where = ", ".join(w for _, w in found)
        notes.add(f"{name} is {' or '.join(values)} (echoed to $GITHUB_OUTPUT at {where})")
        return values[0] if len(values) == 1 else OneOf(values=values, why=f"{name} chosen at run time")

    def _label_value(self, label: str, notes: _Notes) -> Any:
        if label.startswith("$"):
            return self.output(label[1:], notes)
        return label

    def lookup(self, ctx: _Context, event: str | None, matrix: Mapping[str, Any], env: Mapping[str, str], notes: _Notes) -> Any:
        def resolve(path: tuple[str, ...]) -> Any:
            self._notes_now = notes  # where a value passed on as a whole (`_Outputs`) records its assumptions
            head = path[0]
            if head == "matrix":
                return _walk_path(matrix, path[1:], "matrix")
            if head == "inputs":
                return _walk_path(ctx.inputs, path[1:], "inputs")
            if head == "env":
                return _walk_path(env, path[1:], "env")
            if head == "github" and path[1:] == ("event_name",) and event is not None:
                return event
            if head in ("needs", "steps", "jobs") and len(path) >= 3 and path[2] == "outputs":
                if len(path) == 3:
                    return _Outputs(lambda name: self.output(name, self._notes_now))
                return self.output(path[3], notes) if len(path) == 4 else Unknown(text=".".join(path))
            if head == "needs" and len(path) == 3 and path[2] == "result":
                return "success"
            unknown = self._unknown_paths.get(path)
            if unknown is None:
                unknown = self._unknown_paths[path] = Unknown(text=".".join(path))
            return unknown

        return resolve

    # -- the walk ---------------------------------------------------------------------------------------------

    def walk(self, ctx: _Context, depth: int) -> None:
        """Walk one workflow; a workflow called again with the same inputs and events is not walked again, its
        results are re-used under the new call chain."""
        key = f"{ctx.workflow.name}|{ctx.events}|{sorted(ctx.inputs.items(), key=lambda kv: kv[0])!r}"
        if key not in self._walked:
            saved = (self.entries, self.unread, self.unknown, self.not_run)
            self.entries, self.unread, self.unknown, self.not_run = [], [], {}, []
            try:
                self._walk(_Context(workflow=ctx.workflow, events=ctx.events, inputs=ctx.inputs, via=()), depth)
                self._walked[key] = (self.entries, self.unread, list(self.unknown.values()), self.not_run)
            finally:
                self.entries, self.unread, self.unknown, self.not_run = saved
        entries, unread, unknown, not_run = self._walked[key]
        via = ctx.via
        self.entries.extend(((e, (*chain, *via)) for e, chain in entries) if via else entries)
        self.unread.extend(replace(u, origin=_under(u.origin, via)) for u in unread)
        self.not_run.extend(replace(u, origin=_under(u.origin, via)) for u in not_run)
        for label, chain in unknown:
            moved = (*chain, *via)
            self.unknown.setdefault((label.label, str(label.origin) + called_from(moved)), (label, moved))

    def _walk(self, ctx: _Context, depth: int) -> None:
        doc = ctx.workflow.doc
        jobs = doc.get("jobs") or {}
        wf_envs: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {}  # per event: the same for every job
        skipped = self._skipped(ctx, jobs)
        for job_id, job in jobs.items():
            uses = job.get("uses")
            if not isinstance(uses, str) and not any(self._interesting(step.get("run")) for step in job.get("steps") or []):
                continue
            origin = Origin(file=ctx.workflow.name, line=self._line_of(ctx.workflow, f"{job_id}:"), job=str(job_id), via=ctx.via)
            never = skipped(str(job_id))
            if never:
                self.not_run.append(UnreadJob(origin=origin, reason=never))
                continue
            notes = _Notes()
            events = self._events(ctx, job.get("if"), notes)
            if not events:
                continue
            gates = self._gates(events, job.get("if"))
            if isinstance(uses, str) and not uses.startswith("./") and ".github/workflows/" in uses:
                self._external(ctx, job, uses=uses, event=events[0], gates=gates, origin=origin, notes=notes)
                continue
            if isinstance(uses, str):
                self._call(ctx, job, uses=uses, events=events, origin=origin, depth=depth, notes=notes)
                continue
            if events[0] not in wf_envs:
                said = _Notes()
                wf_envs[events[0]] = (
                    self._env(ctx, doc.get("env"), event=events[0], matrix={}, env={}, notes=said),
                    tuple(said.items),
                )
            wf_env, said_items = wf_envs[events[0]]
            for text in said_items:
                notes.add(text)
            if self.jobs_left <= 0:  # spent: not even the matrix is expanded
                self._spend(1, origin)
                continue
            expansion = self._matrices(ctx, job, notes)
            if not self._expansion_read(expansion, origin) or not self._spend(len(expansion.combos), origin):
                continue
            for matrix in expansion.combos:
                self._job(ctx, job, matrix=matrix, wf_env=wf_env, gates=gates, origin=origin, event=events[0], notes=notes)

    def _expansion_read(self, expansion: Expansion, origin: Origin) -> bool:
        """Whether the job's matrix gives jobs to walk; a matrix of no combination is a job that never runs, one
        that cannot be read is an unread job (never "no job")."""
        if expansion.unread:
            self.unread.append(UnreadJob(origin=origin, reason=expansion.unread))
        elif expansion.empty:
            self.not_run.append(UnreadJob(origin=origin, reason=expansion.empty))
        return bool(expansion.combos)

    def _spend(self, jobs: int, origin: Origin) -> bool:
        """Take `jobs` from the read's job budget; once it is spent every further job is unread, with why."""
        self.jobs_left -= jobs
        if self.jobs_left >= 0:
            return True
        self.unread.append(
            UnreadJob(
                origin=origin,
                reason=f"not read: the read's budget of {MAX_WALK_JOBS} jobs (matrix combinations across "
                "reusable-workflow calls) is spent",
            )
        )
        return False

    def _skipped(self, ctx: _Context, jobs: Mapping[str, Any]) -> Callable[[str], str]:
        """Why GitHub never starts a job ("" when it may): an `if:` false on every event, or a `needs:` on such a
        job or on no job at all, unless the job's own `if:` asks to run whatever its needs did (`always()`,
        `failure()`, `cancelled()`): "If a job fails or is skipped, all jobs that need it are skipped unless the jobs
        use a conditional expression that causes the job to continue" (GitHub docs, `jobs.<job_id>.needs`). Read
        on demand, for the jobs walked and the jobs they need only."""
        known: dict[str, str] = {}

        def why(job_id: str) -> str:
            if job_id in known:
                return known[job_id]
            known[job_id] = ""  # a needs cycle (GitHub refuses it) ends here
            job = jobs.get(job_id)
            reason = ""
            condition = job.get("if") if is_mapping(job) else None
            if condition is not None and not self._events(ctx, condition, _Notes()):
                short = " ".join(str(condition).split())[:80]
                reason = f"if: {short} is false on every event that starts {ctx.workflow.name}"
                if "inputs." in short:
                    reason += " (with the inputs' default values)"
            elif is_mapping(job) and not continues(condition):
                for need in needs_of(job.get("needs")):
                    if need not in jobs:
                        reason = f"needs {need}, which is no job of {ctx.workflow.name} (GitHub rejects the workflow)"
                    elif why(need):
                        reason = f"needs {need}, which never runs ({known[need]})"
                    if reason:
                        break
            known[job_id] = reason
            return reason

        return why

    def _events(self, ctx: _Context, condition: Any, notes: _Notes) -> tuple[str, ...]:
        if condition is None:
            return ctx.events
        kept = []
        for event in ctx.events:
            value = self._condition(ctx, condition, event, notes)
            if value is not False:
                kept.append(event)
        return tuple(kept)

    def _condition(self, ctx: _Context, condition: Any, event: str, notes: _Notes) -> bool | None:
        if isinstance(condition, bool):
            return condition
        body = condition_body(str(condition))
        key = (event, body)
        if key in ctx.conditions:
            value = ctx.conditions[key]
        else:
            resolve = self.lookup(ctx, event, {}, {}, _Notes())  # its notes are not kept: it answers alike each time
            value = ctx.conditions[key] = truthy(evaluate_shared(body, resolve, ctx.parts.setdefault(event, {})))
        if value is None:
            short = " ".join(body.split())
            notes.add(f"if: {short[:90]}{'...' if len(short) > 90 else ''} assumed true")
        return value

    @staticmethod
    def _gates(events: tuple[str, ...], condition: Any) -> tuple[Gate, ...]:
        labelled = isinstance(condition, str) and "labels" in condition
        gates = []
        for event in events:
            gate = EVENT_GATES.get(event, Gate.UNKNOWN)
            if labelled and event.startswith("pull_request"):
                gate = Gate.LABEL
            gates.append(gate)
        return tuple(dict.fromkeys(gates))

    def _call(
        self,
        ctx: _Context,
        job: Mapping[str, Any],
        *,
        uses: str,
        events: tuple[str, ...],
        origin: Origin,
        depth: int,
        notes: _Notes,
    ) -> None:
        if not uses.startswith("./"):
            return  # an action's `uses:` at job level is not valid; another repository's workflow is `_external`
        target = uses[2:].split("@", 1)[0]
        callee = self.workflows.get(target)
        if callee is None:
            self.unread.append(UnreadJob(origin=origin, reason=f"calls {uses}, which is not among the workflow files read"))
            return
        chain = (f"{ctx.workflow.name}:{origin.line} job {origin.job}",)
        if depth >= MAX_CALL_DEPTH or callee.name in self._stack:
            self.unread.append(UnreadJob(origin=origin, reason=f"calls {uses} again (a cycle, or deeper than {MAX_CALL_DEPTH})"))
            return
        defaults = self._call_defaults.get(callee.name)
        if defaults is None:
            defaults = self._call_defaults[callee.name] = call_inputs(callee.doc)
        expansion = self._matrices(ctx, job, notes)
        if not self._expansion_read(expansion, origin) or not self._spend(len(expansion.combos), origin):
            return
        for matrix in expansion.combos:
            if self.jobs_left <= 0:
                self._spend(1, origin)
                return
            inputs = dict(defaults)
            with_ = job.get("with")
            if is_mapping(with_):
                resolve = self.lookup(ctx, events[0] if len(events) == 1 else None, matrix, {}, notes)
                for key, raw in with_.items():
                    value, _ = expand(raw, resolve) if isinstance(raw, str) else (raw, ())
                    inputs[str(key)] = value
            self._stack.append(callee.name)
            try:
                self.walk(_Context(workflow=callee, events=events, inputs=inputs, via=chain), depth + 1)
            finally:
                self._stack.pop()

    def _external(
        self,
        ctx: _Context,
        job: Mapping[str, Any],
        *,
        uses: str,
        event: str,
        gates: tuple[Gate, ...],
        origin: Origin,
        notes: _Notes,
    ) -> None:
        """A call of another repository's workflow (`owner/repo/.github/workflows/x.yml@ref`): its `with.script` is
        read as a `run:` step on `with.runner` (pytorch/test-infra's `linux_job_v2.yml` runs the script so, in the
        checkout of the calling repository); without a script the job is unread."""
        with_ = job.get("with")
        raw = with_.get("script") if is_mapping(with_) else None
        if not isinstance(raw, str):
            self.unread.append(UnreadJob(origin=origin, reason=f"calls {uses}, a workflow of another repository"))
            return
        assert is_mapping(with_)
        expansion = self._matrices(ctx, job, notes)
        if not self._expansion_read(expansion, origin) or not self._spend(len(expansion.combos), origin):
            return
        line = self._line_of(ctx.workflow, "script:", after=origin.line)
        step_origin = Origin(file=origin.file, line=line, job=origin.job, via=origin.via)
        said = f"with.script is read as a run: step of {uses}, on with.runner, at the repository root"
        for matrix in expansion.combos:
            job_notes = _Notes(items=[*notes.items, said])
            leg = [
                f"{key}={as_text(value)}"
                for key, raw_value in with_.items()
                if key not in ("script", "runner") and isinstance(raw_value, str) and "matrix." in raw_value
                for value in (expand(raw_value, self.lookup(ctx, event, matrix, {}, _Notes()))[0],)
                if not isinstance(value, Unknown | OneOf)
            ]
            if leg:  # each version leg (`gpu-arch-version: ${{ matrix.cuda }}`) stays its own entry
                job_notes.add(f"with: {', '.join(leg)[:160]}")
            image = with_.get("docker-image")
            if isinstance(image, str):
                shown = expand(image, self.lookup(ctx, event, matrix, {}, job_notes))[0]
                job_notes.add(f"it runs in the container {as_text(shown) if not isinstance(shown, Unknown) else image}")
            runner = with_.get("runner")
            label_sets: list[tuple[tuple[str, ...], tuple[str, ...]]]
            if runner is None:
                label_sets = [((f"(the default runner of {uses})",), (*job_notes.items, "with.runner is not given"))]
            else:
                label_sets = self._labels(ctx, runner, matrix, event, job_notes)
            script, unknown = expand(raw, self.lookup(ctx, event, matrix, {}, job_notes))
            if isinstance(script, Unknown) and script.bound:
                self.unread.append(UnreadJob(origin=step_origin, reason=f"with.script: {script.bound}"))
                continue
            if isinstance(script, Unknown):
                self.unread.append(
                    UnreadJob(origin=step_origin, reason=f"with.script {script.text[:80]} is known only at run time")
                )
                continue
            for text in script.values if isinstance(script, OneOf) else (script,):
                self._commands(
                    str(text),
                    unknown=unknown,
                    step={},
                    working=".",
                    env={},
                    label_sets=label_sets,
                    gates=gates,
                    origin=step_origin,
                    notes=job_notes,
                )

    def _matrices(self, ctx: _Context, job: Mapping[str, Any], notes: _Notes) -> Expansion:
        strategy = job.get("strategy")
        matrix = strategy.get("matrix") if is_mapping(strategy) else None
        if matrix is None:
            return NO_MATRIX
        found = expand_matrix(matrix, self.lookup(ctx, None, {}, {}, notes))
        for text in found.notes:
            notes.add(text)
        return found

    def _env(
        self, ctx: _Context, raw: Any, *, event: str, matrix: Mapping[str, Any], env: Mapping[str, str], notes: _Notes
    ) -> dict[str, str]:
        """Literal values as text; a value only known at run time keeps its expression text (`${{ ... }}`)."""
        if type(raw) is not dict and not isinstance(raw, Mapping):
            return {}
        resolve = self.lookup(ctx, event, matrix, env, notes)
        out: dict[str, str] = {}
        for key, value in raw.items():
            if isinstance(value, str) and "${{" in value:
                resolved, unknown = expand(value, resolve)
                out[str(key)] = value if unknown or isinstance(resolved, OneOf) else as_text(resolved)
            elif isinstance(value, bool | int | float | str):
                out[str(key)] = as_text(value)
        return out

    def _job(
        self,
        ctx: _Context,
        job: Mapping[str, Any],
        *,
        matrix: Mapping[str, Any],
        wf_env: Mapping[str, str],
        gates: tuple[Gate, ...],
        origin: Origin,
        event: str,
        notes: _Notes,
    ) -> None:
        job_notes = _Notes(items=list(notes.items))
        leg = [f"{k}={as_text(v)}" for k, v in matrix.items() if _VERSION_AXIS.search(k) and isinstance(v, str | int | float)]
        if leg:  # a CUDA / ROCm / torch / Python version leg stays its own entry, even where its commands are alike
            job_notes.add(f"matrix leg: {', '.join(leg)[:160]}")
        env = {**wf_env, **self._env(ctx, job.get("env"), event=event, matrix=matrix, env=wf_env, notes=job_notes)}
        label_sets = self._labels(ctx, job.get("runs-on"), matrix, event, job_notes)
        working = run_default(job) or run_default(ctx.workflow.doc) or "."
        for step in job.get("steps") or []:
            run = step.get("run")
            if run is None:
                continue
            text = str(run)
            first_line, echoes = run_facts(text)
            if not self._interesting(run):
                env.update(echoes)
                continue
            step_notes = job_notes
            if step.get("if") is not None:
                said = _Notes()
                if self._step_condition(ctx, step["if"], event, matrix=matrix, env=env, notes=said) is False:
                    continue
                if said.items:
                    step_notes = _Notes(items=[*job_notes.items, *(x for x in said.items if x not in job_notes.items)])
            step_env = {**env, **self._env(ctx, step.get("env"), event=event, matrix=matrix, env=env, notes=job_notes)}
            script, unknown = expand(text, self.lookup(ctx, event, matrix, step_env, job_notes))
            line = self._line_of(ctx.workflow, first_line, after=origin.line)
            step_origin = Origin(file=origin.file, line=line, job=origin.job, via=origin.via)
            if isinstance(script, Unknown) and script.bound:
                self.unread.append(UnreadJob(origin=step_origin, reason=f"run: {script.bound}"))
                continue
            scripts = script.values if isinstance(script, OneOf) else (script,)
            for text in scripts:
                self._commands(
                    str(text),
                    unknown=unknown,
                    step=step,
                    working=working,
                    env=step_env,
                    label_sets=label_sets,
                    gates=gates,
                    origin=step_origin,
                    notes=step_notes,
                )
            env.update(echoes)

    def _step_condition(
        self, ctx: _Context, condition: Any, event: str, *, matrix: Mapping[str, Any], env: Mapping[str, str], notes: _Notes
    ) -> bool | None:
        """A step's `if:`, which may read the job's `env` and `matrix` (GitHub's contexts for `steps.if`): one that
        reads neither has the same value in every job and is read once."""
        if isinstance(condition, bool) or not READS_JOB.search(str(condition)):
            return self._condition(ctx, condition, event, notes)
        body = condition_body(str(condition))
        value = truthy(evaluate(body, self.lookup(ctx, event, matrix, env, _Notes())))
        if value is None:
            short = " ".join(body.split())
            notes.add(f"if: {short[:90]}{'...' if len(short) > 90 else ''} assumed true")
        return value

    def _commands(
        self,
        script: str,
        *,
        unknown: tuple[Unknown, ...],
        step: Mapping[str, Any],
        working: str,
        env: Mapping[str, str],
        label_sets: list[tuple[tuple[str, ...], tuple[str, ...]]],
        gates: tuple[Gate, ...],
        origin: Origin,
        notes: _Notes,
    ) -> None:
        where = step.get("working-directory", working)
        start = str(where) if isinstance(where, str | int | float) else working
        for command in commands(script, start, self.keywords, env):
            if command.unread:
                self.unread.append(UnreadJob(origin=origin, reason=_shown(command.unread, unknown)))
                continue
            context_env = {**env, **dict(command.env)}
            context = StepContext(working_dir=command.working_dir, env=context_env, origin=origin)
            used = [
                f"{unknown[int(m.group(1))].text} is known only at run time"
                for w in command.words
                if "__UNRESOLVED_" in w
                for m in PLACEHOLDER.finditer(w)
                if int(m.group(1)) < len(unknown)
            ]
            found: list[_Followed] = []
            for reader in self.readers:
                try:
                    found.extend((selection, origin, (), None) for selection in reader.selections(command.words, context))
                except UnreadableCommand as exc:
                    self.unread.append(unread_entry(origin, _shown(exc.reason, unknown), exc.reach))
            if self.scripts is not None:
                found.extend(self._scripts(command.words, context, unknown))
            if not found:
                continue
            env_items = tuple(sorted(context_env.items()))
            for selection, where, conditions, elsewhere in found:
                # A selection that runs on its own runner (a Modal function's GPU) keeps that runner.
                sets = label_sets if elsewhere is None else [elsewhere]
                for labels, label_notes in sets:
                    resolution = self._resolution(labels)
                    profiles, others = resolution.profiles, resolution.others
                    mixed: tuple[str, ...] = ()
                    if resolution.unknown and (profiles or others):
                        # GitHub sends a job only to a runner carrying every label: one no profile knows leaves it unknown.
                        mixed = (
                            f"runs-on also names {', '.join(resolution.unknown)}, which no runner profile or label pack "
                            f"knows: the runner is not known (a job goes only to a runner carrying every label)",
                        )
                        profiles, others = (), ()
                    assumptions = [*notes.items, *label_notes, *resolution.assumptions, *mixed, *dict.fromkeys(used)]
                    assumptions += [*command.conditions, *conditions]
                    entry = ScheduleEntry(
                        selection=selection,
                        labels=labels,
                        profiles=profiles,
                        env=env_items,
                        gates=gates,
                        assumptions=tuple(dict.fromkeys(assumptions)),
                        origin=where,
                        other_runners=others,
                    )
                    self.entries_left -= 1
                    if self.entries_left < 0:
                        reason = f"not read: the read's budget of {MAX_ENTRIES} schedule entries is spent"
                        self.unread.append(UnreadJob(origin=origin, reason=reason))
                        return
                    self.entries.append((entry, ()))
                    if not profiles and not others:
                        self._unknown_label(labels, origin)

    def _scripts(self, words: Sequence[str], context: StepContext, unknown: tuple[Unknown, ...]) -> list[_Followed]:
        """What the shell scripts, make targets and Modal functions a command runs select (each at its own
        file:line, called from the step, with the shell conditions it runs under and, for a Modal function, its
        own runner); what is missing, over the budget or named only at run time is listed as unread."""
        assert self.scripts is not None
        from matrix.schedule.follow import follow  # only when scripts are followed
        from matrix.schedule.pytest_command import ScriptBudget

        key = (tuple(words), context.working_dir, tuple(sorted(context.env.items())), context.origin)
        if key not in self._script_results:  # the same step in every matrix job reads the same scripts
            self._script_results[key] = follow(words, context, self.scripts, self.readers, budget=ScriptBudget())
        result = self._script_results[key]
        self.unread.extend(result.unread_jobs(lambda reason: _shown(reason, unknown)))
        conditions = dict(result.conditions)
        runners = {selection: (labels, notes) for selection, labels, notes in result.runners}
        return [(s, where, conditions.get(s, ()), runners.get(s)) for s, where in result.selections]

    def _labels(
        self, ctx: _Context, runs_on: Any, matrix: Mapping[str, Any], event: str, notes: _Notes
    ) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """Each possible label set of `runs-on`, with the assumptions behind it."""
        local = _Notes()
        resolve = self.lookup(ctx, event, matrix, {}, local)
        value: Any = runs_on
        if is_mapping(runs_on):
            value = runs_on.get("labels", runs_on.get("group"))
        if isinstance(value, str):
            value, _ = expand(value, resolve)
        if isinstance(value, list):
            value = label_lists(value, resolve)
        options = value.values if isinstance(value, OneOf) else (value,)
        out: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for option in options:
            if isinstance(option, Unknown) or option is None:
                text = " ".join(str(runs_on).split())
                why = option.bound if isinstance(option, Unknown) and option.bound else "is known only at run time"
                out.append(((text,), (*local.items, f"runs-on {text[:90]} {why}")))
            elif isinstance(option, list | tuple):
                labels = tuple(x.text if isinstance(x, Unknown) else as_text(x) for x in option)
                late = [x.text for x in option if isinstance(x, Unknown)]
                said = tuple(f"runs-on label {t[:90]} is known only at run time" for t in late)
                out.append((labels, (*local.items, *said)))
            else:
                out.append(((as_text(option),), tuple(local.items)))
        return out

    def _resolution(self, labels: tuple[str, ...]) -> Resolution:
        """`LabelIndex.resolve`, once per label set (a pure function of the labels and the profiles)."""
        found = self._resolutions.get(labels)
        if found is None:
            found = self._resolutions[labels] = self.labels.resolve(labels)
        return found

    def _unknown_label(self, labels: tuple[str, ...], origin: Origin) -> None:
        found = self.labels.unknown(labels, origin)
        self.unknown.setdefault((found.label, str(origin)), (found, ()))

    def _interesting(self, run: Any) -> bool:
        """Whether a `run:` text may hold a command a reader reads: one of their keywords, or an expression that
        could put one in (`${{ inputs.command }}`). Readers without keywords see every step."""
        if run is None:
            return False
        text = str(run)
        known = self._interest.get(text)
        if known is None:
            known = self._interest[text] = (
                self.keywords is None
                or any(k in text for k in self.keywords)
                or ("${{" in text and ("inputs." in text or "matrix." in text))
            )
        return known

    def _line_of(self, wf: _Workflow, needle: str, after: int = 0) -> int:
        key = (wf.name, needle, after)
        if key not in self._lines:
            needle = needle.strip()
            if not after and needle.endswith(":") and needle.index(":") == len(needle) - 1:
                # A job key (`name:` at a line start): one index per file, not a scan from the top per job.
                keys = self._key_lines.get(wf.name)
                if keys is None:
                    keys = self._key_lines[wf.name] = key_lines(wf.lines)
                self._lines[key] = keys.get(needle, 1)
            else:
                self._lines[key] = find_line(wf.lines, needle, after)
        return self._lines[key]


def _under(origin: Origin, via: tuple[str, ...]) -> Origin:
    return replace(origin, via=(*origin.via, *via)) if via else origin


_Record = TypeVar("_Record", ScheduleEntry, UnknownLabel)
_Rooted = tuple[_Record, tuple[str, ...]]  # a record, and the call chain to add to its origin's


def _rooted(record: _Record, via: tuple[str, ...]) -> _Record:
    return replace(record, origin=_under(record.origin, via)) if via else record


class _Outputs(Mapping[str, Any]):
    """`needs.X.outputs` as a whole (passed on as `toJson(needs.X.outputs)`): each name is looked up when read,
    and a name no workflow echoes is Unknown, never missing."""

    def __init__(self, read: Any) -> None:
        self._read = read

    def __getitem__(self, key: str) -> Any:
        return self._read(str(key))

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<run-time outputs>"


def _walk_path(value: Any, path: tuple[str, ...], head: str) -> Any:
    for key in path:
        if type(value) is not dict:  # a dict (the usual case) needs no check; isinstance of Mapping goes through abc
            if isinstance(value, Unknown | OneOf):
                return value if isinstance(value, Unknown) else Unknown(text=f"{head}.{'.'.join(path)}")
            if not isinstance(value, Mapping):
                return Unknown(text=f"{head}.{'.'.join(path)}")
        if key not in value:
            return None if head != "matrix" else Unknown(text=f"{head}.{'.'.join(path)}")
        value = value[key]
    return value


_VERSION_AXIS = re.compile(r"cuda|rocm|hip|torch|python|version", re.IGNORECASE)


def _shown(reason: str, unknown: tuple[Unknown, ...]) -> str:
    def put(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return "${{ " + unknown[index].text + " }}" if index < len(unknown) else match.group(0)

    return PLACEHOLDER.sub(put, reason)
