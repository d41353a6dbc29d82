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
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.errors import ConfigError
from matrix.core.profile import RunnerProfile
from matrix.core.treefiles import read_tree_text
from matrix.schedule.files import CI_NAME, ci_script_names, in_repo, workflow_files
from matrix.schedule.github.checkout import Checkout
from matrix.schedule.github.context import Found, Notes, Workflow, WorkflowContext, rooted
from matrix.schedule.github.expressions import expand
from matrix.schedule.github.jobs import MAX_WALK_JOBS, expansion_read, matrices, spend, walk_external, walk_job
from matrix.schedule.github.local_actions import LocalActions
from matrix.schedule.github.steps import MAX_ENTRIES
from matrix.schedule.github.subset import EVENTS, LABEL_TYPES, PULL_REQUEST_CHANGES
from matrix.schedule.github.values import KnownValues
from matrix.schedule.github.workflow_doc import (
    call_inputs,
    check_shape,
    continues,
    dispatch_inputs,
    find_line,
    is_mapping,
    key_lines,
    needs_of,
    on_of,
    triggers,
)
from matrix.schedule.labels import LabelIndex, Resolution
from matrix.schedule.model import CommandReader, Gate, Origin, Schedule, StepContext, UnreadJob, merged_unread
from matrix.schedule.services.external_ci import action_handoffs, handoffs
from matrix.schedule.shell.commands import FOLLOWED, folders_of
from matrix.schedule.shell.globs import Folders
from matrix.schedule.yamldoc import Marks, load_yaml

if TYPE_CHECKING:
    from matrix.schedule.commands.pytest_command import ScriptLoader, ScriptResult

__all__ = ["MAX_CALL_DEPTH", "MAX_ENTRIES", "MAX_WALK_JOBS", "Walker", "read_github"]

MAX_CALL_DEPTH = 8
_MAX_ENDINGS = 16  # the repository's paths a path outside the checkout may stand for (`Walker.same_ending`)
# `with:` keys whose value an action runs as a command (`command:`, `run:`, `script:`, `args:`, `test-command:` ...).
_COMMAND_KEY = re.compile(r"(?:^|[-_])(?:run|runs|command|commands|cmd|script|scripts|args|entrypoint)(?:$|[-_])", re.IGNORECASE)


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
    workflows: dict[str, Workflow] = {}
    refused: list[UnreadJob] = []
    for path in files:
        name = path.relative_to(repo).as_posix()
        if not in_repo(repo, path):  # named by its path in the tree; what lies outside is never read
            reason = "the workflow is a link to a file outside the repository; not read"
            refused.append(UnreadJob(origin=Origin(file=name, line=1, job="*"), reason=reason))
            continue
        text = read_tree_text(repo, path, ConfigError)
        marks: Marks = {}
        doc = load_yaml(text, name, marks)
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise ConfigError(f"{name}: a workflow must be a mapping with jobs")
        check_shape(doc, name)
        workflows[name] = Workflow(name=name, doc=doc, lines=tuple(text.splitlines()), marks=marks)
    walker = Walker(repo=repo, workflows=workflows, readers=tuple(readers), runners=runners, scripts=scripts)
    schedule = walker.run()
    refused.extend(handoffs(workflows.values()))  # CI another service runs, started from these workflows
    refused.extend(action_handoffs(walker.actions.documents()))  # or from the local actions they use
    return replace(schedule, unread=(*refused, *schedule.unread)) if refused else schedule


class Walker:
    """What one read shares across its stages: the workflows, readers and profiles, the values known before the
    run (`KnownValues`), the job and entry budgets, and memos of pure answers (label resolutions, line numbers,
    scripts followed, workflows already walked). The workflow stage is here; the job and step stages are
    `github_jobs` and `github_steps`, each handed a frozen context and the `Found` it writes to."""

    def __init__(
        self,
        *,
        repo: Path,
        workflows: Mapping[str, Workflow],
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
        self.values = KnownValues(repo=repo, workflows=workflows, scripts=self.scripts)
        self.labels = LabelIndex(runners)
        self.jobs_left = MAX_WALK_JOBS
        self.entries_left = MAX_ENTRIES
        self._resolutions: dict[tuple[str, ...], Resolution] = {}
        self._call_defaults: dict[str, dict[str, Any]] = {}
        self._walked: dict[str, Found] = {}
        self._interest: dict[str, bool] = {}
        self._lines: dict[tuple[str, str, int], int] = {}
        self._key_lines: dict[str, dict[str, int]] = {}
        self._script_results: dict[tuple[tuple[str, ...], str, tuple[tuple[str, str], ...], Origin, Checkout], ScriptResult] = {}
        self._container_paths: frozenset[str] | None = None
        self.actions = LocalActions(repo)
        # Where the job leg being read has the repository (set by the step stage around each step's commands).
        self.checkout = Checkout()
        self._endings: dict[str, tuple[str, ...]] = {}
        self.reader_keywords = tuple(k for r in self.readers for k in getattr(r, "keywords", None) or ())
        # Every reader names the text its commands hold: lines without any are not split.
        found = [getattr(r, "keywords", None) for r in self.readers]
        self.keywords = None if any(k is None for k in found) else tuple(k for ks in found if ks for k in ks)
        if self.keywords is not None and scripts is not None:
            self.keywords = (*self.keywords, *FOLLOWED)  # a line that runs a script (make, modal) may lead to one

    def folders(self) -> Folders | None:
        """The checkout's folders, for pathname patterns in commands (`pytest tests/test_*.py`): only when scripts
        are followed (a cached schedule's key names no folder listing)."""
        return folders_of(self.scripts) if self.scripts is not None else None

    def container_paths(self) -> frozenset[str]:
        """The container files (Dockerfiles) of the repository a `docker exec` command may be read through."""
        if self._container_paths is None:
            from matrix.schedule.files import container_files

            self._container_paths = frozenset(p.relative_to(self.repo).as_posix() for p in container_files(self.repo))
        return self._container_paths

    def run(self) -> Schedule:
        found = Found()
        for wf in self.workflows.values():
            gates = starting_gates(wf, self.workflows)
            events = tuple(gates)
            if events:
                ctx = WorkflowContext(
                    workflow=wf, events=events, inputs=dispatch_inputs(wf.doc), via=(), calling=(wf.name,), gates=gates
                )
                self.walk(ctx, found)
        for wf in self.workflows.values():
            if wf.name in self._call_defaults or not self._runs_tests(wf) or starting_gates(wf, self.workflows):
                continue
            said = ", ".join(triggers(wf.doc)) or "no `on:` trigger"
            if called_only(wf.doc):
                reason = (
                    "only another workflow starts it (on: workflow_call), and no workflow of this repository that runs calls it"
                )
            else:
                reason = f"no event starts this workflow for this repository ({said}): none of its jobs run"
            found.not_run.append(UnreadJob(origin=Origin(file=wf.name, line=1, job="*"), reason=reason))
        table = self.values.table
        sources = tuple(self.workflows) + tuple(self.actions.read) + ((table.source,) if table else ())
        names: set[str] = set()
        for wf in self.workflows.values():
            names.update(CI_NAME.findall("\n".join(wf.lines)))  # one scan per file: \b stops at a line break
        names.update(ci_script_names(self.repo))
        return Schedule(
            ci_names=tuple(sorted(names)),
            entries=tuple(dict.fromkeys(rooted(entry, via) for entry, via in found.entries)),
            unread=merged_unread(found.unread),
            not_run=tuple(dict.fromkeys(found.not_run)),
            unknown_labels=tuple(rooted(label, via) for label, via in found.unknown.values()),
            sources=sources,
        )

    # -- the workflow stage -----------------------------------------------------------------------------------

    def walk(self, ctx: WorkflowContext, found: Found) -> None:
        """Walk one workflow into `found`; a workflow called again with the same inputs and events is not walked
        again, its findings are re-used under the new call chain."""
        key = f"{ctx.workflow.name}|{ctx.events}|{sorted(ctx.inputs.items(), key=lambda kv: kv[0])!r}"
        own = self._walked.get(key)
        if own is None:
            own = Found()
            self._walk(replace(ctx, via=()), own)
            self._walked[key] = own
        found.add_under(own, ctx.via)

    def _walk(self, ctx: WorkflowContext, found: Found) -> None:
        doc = ctx.workflow.doc
        jobs = doc.get("jobs") or {}
        wf_envs: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {}  # per event: the same for every job
        skipped = self._skipped(ctx, jobs)
        for job_id, written in jobs.items():
            uses = written.get("uses")
            # A local composite action's steps are the job's own (`local_actions`); one not read is said so.
            steps, problems = self.actions.expand(written.get("steps"))
            job = written if steps is written.get("steps") else {**written, "steps": steps}
            if (
                not isinstance(uses, str)
                and not problems
                and not any(self.interesting(step.get("run")) or self.action_command(step) for step in steps or [])
            ):
                continue
            origin = Origin(file=ctx.workflow.name, line=self.job_line(ctx.workflow, str(job_id)), job=str(job_id), via=ctx.via)
            never = skipped(str(job_id))
            if never:
                found.not_run.append(UnreadJob(origin=origin, reason=never))
                continue
            notes = Notes()
            events = self._events(ctx, job.get("if"), notes)
            if not events:
                continue
            gates = _gates(events, job.get("if"), ctx.gates)
            found.unread.extend(UnreadJob(origin=origin, reason=problem) for problem in problems)
            if isinstance(uses, str) and not uses.startswith("./") and ".github/workflows/" in uses:
                walk_external(self, ctx, job, uses=uses, event=events[0], gates=gates, origin=origin, notes=notes, found=found)
                continue
            if isinstance(uses, str):
                self._call(ctx, job, uses=uses, events=events, origin=origin, notes=notes, found=found)
                continue
            if events[0] not in wf_envs:
                said = Notes()
                wf_envs[events[0]] = (
                    self.values.env(ctx, doc.get("env"), event=events[0], matrix={}, env={}, notes=said),
                    tuple(said.items),
                )
            wf_env, said_items = wf_envs[events[0]]
            for text in said_items:
                notes.add(text)
            walk_job(self, ctx, job, wf_env=wf_env, gates=gates, origin=origin, event=events[0], notes=notes, found=found)

    def _skipped(self, ctx: WorkflowContext, jobs: Mapping[str, Any]) -> Callable[[str], str]:
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
            if condition is not None and not self._events(ctx, condition, Notes()):
                short = " ".join((str(condition).lower() if isinstance(condition, bool) else str(condition)).split())[:80]
                reason = f"if: {short} is false on every event that starts {ctx.workflow.name}"
                if "inputs." in short.lower():
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

    def _events(self, ctx: WorkflowContext, condition: Any, notes: Notes) -> tuple[str, ...]:
        """The events of the workflow on which a job's `if:` may be true."""
        if condition is None:
            return ctx.events
        return tuple(event for event in ctx.events if self.values.condition(ctx, condition, event, notes) is not False)

    def _call(
        self,
        ctx: WorkflowContext,
        job: Mapping[str, Any],
        *,
        uses: str,
        events: tuple[str, ...],
        origin: Origin,
        notes: Notes,
        found: Found,
    ) -> None:
        """A call of a workflow of this repository (`uses: ./.github/workflows/x.yml`), walked once per matrix leg
        with `with:` over the callee's input defaults."""
        if not uses.startswith("./"):
            return  # an action's `uses:` at job level is not valid; another repository's workflow is `walk_external`
        target = uses[2:].split("@", 1)[0]
        callee = self.workflows.get(target)
        if callee is None:
            found.unread.append(UnreadJob(origin=origin, reason=f"calls {uses}, which is not among the workflow files read"))
            return
        chain = (f"{ctx.workflow.name}:{origin.line} job {origin.job}",)
        if ctx.depth >= MAX_CALL_DEPTH or callee.name in ctx.calling:
            found.unread.append(UnreadJob(origin=origin, reason=f"calls {uses} again (a cycle, or deeper than {MAX_CALL_DEPTH})"))
            return
        defaults = self._call_defaults.get(callee.name)
        if defaults is None:
            defaults = self._call_defaults[callee.name] = call_inputs(callee.doc)
        expansion = matrices(self, ctx, job, notes)
        if not expansion_read(expansion, origin, found) or not spend(self, len(expansion.combos), origin, found):
            return
        for matrix in expansion.combos:
            if self.jobs_left <= 0:
                spend(self, 1, origin, found)
                return
            inputs = dict(defaults)
            with_ = job.get("with")
            if is_mapping(with_):
                resolve = self.values.lookup(ctx.inputs, events[0] if len(events) == 1 else None, matrix, {}, notes)
                for key, raw in with_.items():
                    value, _ = expand(raw, resolve) if isinstance(raw, str) else (raw, ())
                    # the callee's declared name, matched ignoring case as GitHub matches `inputs.<name>`
                    name = next((k for k in defaults if k.lower() == str(key).lower()), str(key))
                    inputs[name] = value
            called = WorkflowContext(
                workflow=callee,
                events=events,
                inputs=inputs,
                via=chain,
                depth=ctx.depth + 1,
                calling=(*ctx.calling, callee.name),
                gates=ctx.gates,
            )
            self.walk(called, found)

    # -- memos the stages share --------------------------------------------------------------------------------

    def follow(self, words: Sequence[str], context: StepContext) -> ScriptResult:
        """What the files a command hands work to select (`matrix.schedule.follow`), read once per command, folder,
        env and origin: the same step in every matrix job reads the same scripts."""
        assert self.scripts is not None
        from matrix.schedule.commands.pytest_command import ScriptBudget
        from matrix.schedule.follow import follow  # only when scripts are followed

        key = (tuple(words), context.working_dir, tuple(sorted(context.env.items())), context.origin, self.checkout)
        if key not in self._script_results:
            load = self.scripts if self.checkout.plain else functools.partial(_in_checkout, self.scripts, self.checkout)
            self._script_results[key] = follow(words, context, load, self.readers, budget=ScriptBudget())
        return self._script_results[key]

    def same_ending(self, path: str) -> tuple[str, ...]:
        """The repository's folders and files whose path ends as `path` does, without its leading `..` parts
        (at most `_MAX_ENDINGS`, found once per path)."""
        tail = "/".join(p for p in path.split("/") if p not in ("..", ".", ""))
        if not tail:
            return ()
        found = self._endings.get(tail)
        if found is None:
            matches: list[str] = []
            try:
                for hit in self.repo.glob(f"**/{tail}"):
                    if ".git" not in hit.parts and in_repo(self.repo, hit):
                        matches.append(hit.relative_to(self.repo).as_posix())
                    if len(matches) >= _MAX_ENDINGS:
                        break
            except (OSError, ValueError):
                matches = []
            found = self._endings[tail] = tuple(sorted(matches))
        return found

    def action_command(self, step: Mapping[str, Any]) -> str | None:
        """Why a step using another repository's action may run tests: a `with:` value holding a command a reader
        reads (`command: pytest tests`); None for any other step."""
        uses = step.get("uses")
        given = step.get("with")
        if not isinstance(uses, str) or uses.startswith("./") or not is_mapping(given) or not self.reader_keywords:
            return None
        for key, value in given.items():
            if not _COMMAND_KEY.search(str(key)):
                continue  # a text (`body:`, `title:`) that mentions pytest runs nothing
            if isinstance(value, str) and any(k in value for k in self.reader_keywords):
                shown = " ".join(value.split())[:80]
                return f"uses {uses}, an action this reader does not read, with {key}: {shown}: what it runs is not read"
        return None

    def resolution(self, labels: tuple[str, ...]) -> Resolution:
        """`LabelIndex.resolve`, once per label set (a pure function of the labels and the profiles)."""
        found = self._resolutions.get(labels)
        if found is None:
            found = self._resolutions[labels] = self.labels.resolve(labels)
        return found

    def interesting(self, run: Any) -> bool:
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
                or ("${{" in text and ("inputs." in text.lower() or "matrix." in text.lower()))
            )
        return known

    def job_line(self, wf: Workflow, job_id: str) -> int:
        """The line of a job's key: where the loader found it, else the first line that starts with `ID:`."""
        found = wf.marks.get(("jobs", job_id))
        return found[0] if found is not None else self.line_of(wf, f"{job_id}:")

    def line_of(self, wf: Workflow, needle: str, after: int = 0) -> int:
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

    def _runs_tests(self, wf: Workflow) -> bool:
        """Whether a workflow's steps hold a command a reader may read (an untriggered one is then listed)."""
        jobs = wf.doc.get("jobs")
        return isinstance(jobs, Mapping) and any(
            self.interesting(step.get("run")) or str(step.get("uses", "")).startswith("./")
            for job in jobs.values()
            if is_mapping(job)
            for step in job.get("steps") or []
            if is_mapping(step)
        )


def _in_checkout(load: Callable[[str], str | None], checkout: Checkout, path: str) -> str | None:
    """A script the readers name from the repository's root, read from the repository only when it lies in the
    job's checkout of it."""
    own = checkout.own(path)
    return None if own is None else load(own)


def _gates(events: tuple[str, ...], condition: Any, known: Mapping[str, Gate]) -> tuple[Gate, ...]:
    labelled = isinstance(condition, str) and "labels" in condition.lower()
    gates = []
    for event in events:
        gate = known.get(event) or (EVENTS[event].gate if event in EVENTS else Gate.UNKNOWN)
        if labelled and event.startswith("pull_request"):
            gate = Gate.LABEL
        gates.append(gate)
    return tuple(dict.fromkeys(gates))


def called_only(doc: Mapping[str, Any]) -> bool:
    """Whether a workflow starts only when another calls it (`on: workflow_call`)."""
    return triggers(doc) == ("workflow_call",)


def starting_gates(wf: Workflow, workflows: Mapping[str, Workflow], depth: int = 0) -> dict[str, Gate]:
    """The events that start `wf` for this repository, each with the gate it gives (`subset.EVENTS`): a
    `pull_request` whose `types:` hold only label changes is a label gate; a `workflow_run` starts it only after a
    workflow of this repository named in its `workflows:` (that workflow's gates; none named: never); a
    `workflow_call` is its callers' business."""
    raw = on_of(wf.doc)
    out: dict[str, Gate] = {}
    for event in triggers(wf.doc):
        if event == "workflow_call":
            continue
        spec = raw.get(event) if is_mapping(raw) else None
        rule = EVENTS.get(event)
        gate = rule.gate if rule is not None else Gate.UNKNOWN
        if event in ("pull_request", "pull_request_target") and is_mapping(spec) and isinstance(spec.get("types"), list):
            kinds = {str(t) for t in spec["types"]}
            gate = Gate.ALWAYS if kinds & PULL_REQUEST_CHANGES else Gate.LABEL if kinds & LABEL_TYPES else Gate.UNKNOWN
        if event == "workflow_run":
            named = spec.get("workflows") if is_mapping(spec) else None
            after = [w for w in workflows.values() if w.name != wf.name and _titled(w, named)]
            if not after:
                continue  # no workflow of this repository it follows: it never starts
            if depth < 4:
                followed = {g for w in after for g in starting_gates(w, workflows, depth + 1).values()}
                gate = next(iter(followed)) if len(followed) == 1 else Gate.UNKNOWN
                if not followed:
                    continue
        out[event] = gate
    return out


def _titled(wf: Workflow, names: Any) -> bool:
    """Whether `wf` is one of the workflows a `workflow_run` trigger names (by its `name:`, else its path)."""
    wanted = [str(n) for n in names] if isinstance(names, list) else [str(names)] if isinstance(names, str) else []
    title = wf.doc.get("name")
    return any(n in (title, wf.name) for n in wanted)
