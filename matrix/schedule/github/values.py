"""Values a workflow's expressions read that are known before the run (the edge of the walk's knowledge; pure):
literal outputs echoed to `$GITHUB_OUTPUT`, outputs a `run:` step computes with jq, the runner-config table an
output passes on whole, and the `inputs`/`matrix`/`env`/`github.event_name` contexts of one job."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from matrix.schedule.github.context import Notes, Workflow, WorkflowContext
from matrix.schedule.github.expressions import OneOf, Unknown, as_text, evaluate, evaluate_shared, expand, truthy
from matrix.schedule.github.workflow_doc import OUTPUT_ECHO, READS_JOB, STEP_OUTPUT, condition_body, live_lines
from matrix.schedule.runner_configs import RunnerConfigTable, find_table

ScriptText = Callable[[str], "str | None"]
Resolver = Callable[[tuple[str, ...]], Any]


class KnownValues:
    """The outputs and contexts of one repository's workflows, read once; answers are remembered (pure functions
    of the workflows), never changed."""

    def __init__(self, *, repo: Path, workflows: Mapping[str, Workflow], scripts: ScriptText | None) -> None:
        self.workflows = workflows
        self.scripts = scripts
        self.table: RunnerConfigTable | None = find_table(repo)
        self.outputs = self._echoed_outputs()
        self.table_outputs = self._table_outputs() if self.table is not None else frozenset()
        self.computed = self._computed_outputs()
        self._output_cache: dict[str, tuple[Any, tuple[str, ...]]] = {}
        self._unknown_paths: dict[tuple[str, ...], Unknown] = {}
        self._notes_now = Notes()

    def _echoed_outputs(self) -> dict[str, list[tuple[str, str]]]:
        """Run-time output name -> [(literal value, file:line)] from `echo "NAME=value" >> $GITHUB_OUTPUT` lines."""
        out: dict[str, list[tuple[str, str]]] = {}
        for wf in self.workflows.values():
            for number, line in enumerate(wf.lines, 1):
                if "GITHUB_OUTPUT" not in line or line.lstrip().startswith("#"):
                    continue  # the pattern needs it (`in` is far cheaper than a regex); a comment writes nothing
                for match in OUTPUT_ECHO.finditer(line):
                    name, value = match.group(1).lower(), match.group(2)
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
                    names.update(m.group(2).lower() for m in STEP_OUTPUT.finditer(line) if m.group(1) in writers)
        return frozenset(names)

    def _computed_outputs(self) -> dict[str, tuple[str, str]]:
        """Output name -> (value, the assumption it rests on) for outputs a `run:` step computes with jq
        (`matrix.schedule.github.jq_outputs`); a name two jobs compute differently is left out."""
        if not any("jq" in text and "GITHUB_OUTPUT" in text for text in ("\n".join(wf.lines) for wf in self.workflows.values())):
            return {}  # no workflow computes an output with jq: nothing to import or parse
        from matrix.schedule.github.jq_outputs import job_outputs

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
                    found.setdefault(key.rsplit(".", 1)[-1].lower(), set()).add((value, note))
        return {name: next(iter(values)) for name, values in found.items() if len({v for v, _ in values}) == 1}

    def output(self, name: str, notes: Notes) -> Any:
        name = name.lower()  # output names are case-insensitive, as every context's property names
        if name not in self._output_cache:
            local = Notes()
            self._output_cache[name] = (self._output(name, local), tuple(local.items))
        value, said = self._output_cache[name]
        for text in said:
            notes.add(text)
        return value

    def _output(self, name: str, notes: Notes) -> Any:
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

    def _label_value(self, label: str, notes: Notes) -> Any:
        if label.startswith("$"):
            return self.output(label[1:], notes)
        return label

    def lookup(  # noqa: PLR0917 - the five contexts of a job leg, passed in many places
        self,
        inputs: Mapping[str, Any],
        event: str | None,
        matrix: Mapping[str, Any],
        env: Mapping[str, str],
        notes: Notes,
        steps: Mapping[str, Mapping[str, str | None]] | None = None,
    ) -> Resolver:
        """The resolver of one job's expressions; `steps` holds the outputs the job's earlier steps write (step id
        and output name in lower case; None: written, known only at run time)."""

        def resolve(path: tuple[str, ...]) -> Any:
            self._notes_now = notes  # where a value passed on as a whole (`_Outputs`) records its assumptions
            # Context and property names are case-insensitive (see `matrix.schedule.github.subset.CONTEXTS`),
            # except the names of `env`, which are case-sensitive on Linux and macOS runners.
            head = path[0].lower()
            if head == "matrix":
                return walk_path(matrix, path[1:], "matrix")
            if head == "inputs":
                return walk_path(inputs, path[1:], "inputs")
            if head == "env":
                found = walk_path(env, path[1:], "env")
                # A value with run-time parts keeps its expression text (see `env`): it is not known before the run.
                return Unknown(text=".".join(path)) if isinstance(found, str) and "${{" in found else found
            second = path[1].lower() if len(path) > 1 else ""
            if head == "github" and len(path) == 2 and second == "event_name" and event is not None:
                return event
            if head == "steps" and steps and len(path) == 4 and path[2].lower() == "outputs":
                written = steps.get(path[1].lower())
                if written is not None and path[3].lower() in written:
                    value = written[path[3].lower()]
                    return Unknown(text=".".join(path)) if value is None else value
            if head in ("needs", "steps", "jobs") and len(path) >= 3 and path[2].lower() == "outputs":
                if len(path) == 3:
                    return Outputs(lambda name: self.output(name, self._notes_now))
                return self.output(path[3], notes) if len(path) == 4 else Unknown(text=".".join(path))
            if head == "needs" and len(path) == 3 and path[2].lower() == "result":
                return "success"
            unknown = self._unknown_paths.get(path)
            if unknown is None:
                unknown = self._unknown_paths[path] = Unknown(text=".".join(path))
            return unknown

        return resolve

    def env(
        self, ctx: WorkflowContext, raw: Any, *, event: str, matrix: Mapping[str, Any], env: Mapping[str, str], notes: Notes
    ) -> dict[str, str]:
        """An `env:` block's literal values as text; a value only known at run time keeps its expression text."""
        if type(raw) is not dict and not isinstance(raw, Mapping):
            return {}
        resolve = self.lookup(ctx.inputs, event, matrix, env, notes)
        out: dict[str, str] = {}
        for key, value in raw.items():
            if isinstance(value, str) and "${{" in value:
                resolved, unknown = expand(value, resolve)
                out[str(key)] = value if unknown or isinstance(resolved, OneOf) else as_text(resolved)
            elif isinstance(value, bool | int | float | str):
                out[str(key)] = as_text(value)
        return out

    def condition(self, ctx: WorkflowContext, condition: Any, event: str, notes: Notes) -> bool | None:
        """A job's (or a step's) `if:` on `event`; None when it cannot be known, and then it is assumed true."""
        if isinstance(condition, bool):
            return condition
        body = condition_body(str(condition))
        key = (event, body)
        if key in ctx.conditions:
            value = ctx.conditions[key]
        else:
            resolve = self.lookup(ctx.inputs, event, {}, {}, Notes())  # its notes are not kept: it answers alike each time
            value = ctx.conditions[key] = truthy(evaluate_shared(body, resolve, ctx.parts.setdefault(event, {})))
        if value is None:
            _assumed(body, notes)
        return value

    def step_condition(
        self, ctx: WorkflowContext, condition: Any, event: str, *, matrix: Mapping[str, Any], env: Mapping[str, str], notes: Notes
    ) -> bool | None:
        """A step's `if:`, which may read the job's `env` and `matrix` (GitHub's contexts for `steps.if`): one that
        reads neither has the same value in every job and is read once."""
        if isinstance(condition, bool) or not READS_JOB.search(str(condition)):
            return self.condition(ctx, condition, event, notes)
        body = condition_body(str(condition))
        value = truthy(evaluate(body, self.lookup(ctx.inputs, event, matrix, env, Notes())))
        if value is None:
            _assumed(body, notes)
        return value


def _assumed(body: str, notes: Notes) -> None:
    short = " ".join(body.split())
    notes.add(f"if: {short[:90]}{'...' if len(short) > 90 else ''} assumed true")


class Outputs(Mapping[str, Any]):
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


def walk_path(value: Any, path: tuple[str, ...], head: str) -> Any:
    """The value at `path` in a context (`matrix`, `inputs`, `env`): property names are matched ignoring case, as
    GitHub matches them, except in `env`, whose names are case-sensitive on Linux and macOS runners."""
    for written in path:
        if type(value) is not dict:  # a dict (the usual case) needs no check; isinstance of Mapping goes through abc
            if isinstance(value, Unknown | OneOf):
                return value if isinstance(value, Unknown) else Unknown(text=f"{head}.{'.'.join(path)}")
            if not isinstance(value, Mapping):
                return Unknown(text=f"{head}.{'.'.join(path)}")
        key = written
        if key not in value and head != "env":
            key = next((k for k in value if isinstance(k, str) and k.lower() == written.lower()), written)
        if key not in value:
            return None if head != "matrix" else Unknown(text=f"{head}.{'.'.join(path)}")
        value = value[key]
    return value
