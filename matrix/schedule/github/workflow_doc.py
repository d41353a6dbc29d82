"""What a GitHub Actions workflow document says by itself, read without walking it; pure.

The shape checks a walk relies on, the triggers and input defaults of a workflow, a job's `needs` and whether its
`if:` continues after a skipped need, `defaults.run.working-directory`, the literal `$GITHUB_ENV` and
`$GITHUB_OUTPUT` writes of a `run:` text (comment lines write nothing), list-form `runs-on` with its expressions put
in, and where a text stands in the file.
"""

from __future__ import annotations

import functools
import itertools
import math
import posixpath
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from matrix.core.errors import ConfigError
from matrix.schedule.github.checkout import workspace_folder
from matrix.schedule.github.expressions import MAX_TEXTS, OneOf, Unknown, expand
from matrix.schedule.github.strategy import MAX_MATRIX_JOBS, MAX_MATRIX_LIST

OUTPUT_ECHO = re.compile(r"""echo\s+["']?([A-Za-z_][\w-]*)=([^"'\s$`]*)["']?\s*>>\s*["']?\$\{?GITHUB_OUTPUT\b""")
ENV_ECHO = re.compile(r"""echo\s+["']?([A-Za-z_]\w*)=([^"'\n]*?)["']?\s*>>\s*["']?\$\{?GITHUB_ENV\b""")


def check_shape(doc: Mapping[str, Any], name: str) -> None:
    """Type errors a walker would trip over, as one line each (`steps: 5`, `include: 1.5`)."""
    jobs = doc.get("jobs")
    if jobs is None:
        return
    if not isinstance(jobs, Mapping):
        raise ConfigError(f"{name}: jobs must be a mapping")
    for job_id, job in jobs.items():
        where = f"{name}: jobs.{job_id}"
        if not isinstance(job, Mapping):
            raise ConfigError(f"{where} must be a mapping")
        steps = job.get("steps")
        if steps is not None and not isinstance(steps, list):
            raise ConfigError(f"{where}.steps must be a list")
        for i, step in enumerate(steps or []):
            if not isinstance(step, Mapping):
                raise ConfigError(f"{where}.steps[{i}] must be a mapping")
            if "run" in step and not isinstance(step["run"], str | int | float):
                raise ConfigError(f"{where}.steps[{i}].run must be a string")
        strategy = job.get("strategy")
        if strategy is not None and not isinstance(strategy, Mapping | str):
            raise ConfigError(f"{where}.strategy must be a mapping")
        matrix = strategy.get("matrix") if is_mapping(strategy) else None
        if matrix is not None and not isinstance(matrix, Mapping | str):
            raise ConfigError(f"{where}.strategy.matrix must be a mapping or an expression")
        if is_mapping(matrix):
            for key in ("include", "exclude"):
                value = matrix.get(key)
                if value is None or (isinstance(value, str) and "${{" in value):
                    continue
                if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
                    raise ConfigError(f"{where}.strategy.matrix.{key} must be a list of mappings, got {value!r:.40}")
                if len(value) > MAX_MATRIX_LIST:
                    raise ConfigError(
                        f"{where}.strategy.matrix.{key} has {len(value)} entries; "
                        f"GitHub runs at most {MAX_MATRIX_JOBS} jobs a matrix"
                    )
            for axis, values in matrix.items():
                if axis in ("include", "exclude") or isinstance(values, list | str):
                    continue
                raise ConfigError(f"{where}.strategy.matrix.{axis} must be a list, got {values!r:.40}")
        for key in ("env", "with"):
            if job.get(key) is not None and not isinstance(job[key], Mapping | str):
                raise ConfigError(f"{where}.{key} must be a mapping")


def is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """`isinstance(value, Mapping)`, answered at once for a dict (what YAML gives) instead of through the abc machinery."""
    return type(value) is dict or isinstance(value, Mapping)


def on_of(doc: Mapping[Any, Any]) -> Any:
    return doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on:` key as True


def triggers(doc: Mapping[Any, Any]) -> tuple[str, ...]:
    raw = on_of(doc)
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list):
        return tuple(str(x) for x in raw)
    if isinstance(raw, Mapping):
        return tuple(str(k) for k in raw)
    return ()


def call_inputs(doc: Mapping[Any, Any]) -> dict[str, Any]:
    raw = on_of(doc)
    call = raw.get("workflow_call") if isinstance(raw, Mapping) else None
    inputs = call.get("inputs") if isinstance(call, Mapping) else None
    out: dict[str, Any] = {}
    for key, spec in (inputs or {}).items() if isinstance(inputs, Mapping) else ():
        out[str(key)] = spec.get("default") if isinstance(spec, Mapping) else None
    return out


def dispatch_inputs(doc: Mapping[Any, Any]) -> dict[str, Any]:
    raw = on_of(doc)
    out: dict[str, Any] = {}
    for trigger in ("workflow_dispatch", "workflow_call"):
        spec = raw.get(trigger) if isinstance(raw, Mapping) else None
        inputs = spec.get("inputs") if isinstance(spec, Mapping) else None
        if isinstance(inputs, Mapping):
            for key, item in inputs.items():
                out.setdefault(str(key), item.get("default") if isinstance(item, Mapping) else None)
    return out


@functools.lru_cache(maxsize=4096)
def condition_body(condition: str) -> str:
    """An `if:` text without its optional `${{ }}` wrapper."""
    text = condition.strip()
    whole = _WRAPPED.fullmatch(text)
    return whole.group(1) if whole else text


_WRAPPED = re.compile(r"\$\{\{(.*)\}\}", re.DOTALL)


@functools.lru_cache(maxsize=4096)
def run_facts(run: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What a step's `run:` text always gives, whatever the job: the text of its first line (how its line is
    found) and its literal `$GITHUB_ENV` writes (name, value; a value with `$` is known only at run time)."""
    stripped = run.strip()
    first = stripped.splitlines()[0] if stripped else "run:"
    live = live_lines(run) if "GITHUB_ENV" in run else run
    echoes = tuple((m.group(1), m.group(2) if "$" not in m.group(2) else "${{ run time }}") for m in ENV_ECHO.finditer(live))
    return first, echoes


STEP_OUTPUT = re.compile(r"\bsteps\.([\w-]+)\.outputs\.([\w-]+)", re.IGNORECASE)
READS_JOB = re.compile(r"\b(matrix|env)\b", re.IGNORECASE)


def label_lists(items: list[Any], resolve: Any) -> Any:
    """A list-form `runs-on` with each item's expression put in: a list of labels, or a OneOf of such lists when an
    item has several possible values (bounded as `expand` bounds a text)."""
    choices: list[tuple[Any, ...]] = []
    for item in items:
        value = expand(item, resolve)[0] if isinstance(item, str) else item
        if isinstance(value, OneOf):
            choices.append(value.values)
        elif isinstance(value, Unknown) and not value.bound and isinstance(item, str):
            choices.append((Unknown(text=item),))
        else:
            choices.append((value,))
    if math.prod(len(c) for c in choices) > MAX_TEXTS:
        return Unknown(text=str(items)[:80], bound=f"has more than {MAX_TEXTS} possible label sets")
    options = [list(c) for c in itertools.product(*choices)]
    return options[0] if len(options) == 1 else OneOf(values=tuple(tuple(o) for o in options), why="runs-on items")


def run_default(doc: Mapping[str, Any]) -> str | None:
    """`defaults.run.working-directory` of a workflow or a job as written (`${{ github.workspace }}` put in as the
    workspace; another expression is resolved per step, in the job)."""
    defaults = doc.get("defaults")
    run = defaults.get("run") if is_mapping(defaults) else None
    folder = run.get("working-directory") if is_mapping(run) else None
    return workspace_folder(str(folder)) if isinstance(folder, str | int | float) else None


def run_shell(doc: Mapping[str, Any]) -> str | None:
    """`defaults.run.shell` of a workflow or a job as written, None when not given."""
    defaults = doc.get("defaults")
    run = defaults.get("run") if is_mapping(defaults) else None
    shell = run.get("shell") if is_mapping(run) else None
    return str(shell) if isinstance(shell, str | int | float) else None


def reads_shell(shell: str) -> bool:
    """Whether a step's `shell:` is one the shell reader reads: bash or sh with options only (`bash -l {0}`,
    `sh -e {0}`, `bash --noprofile --norc -eo pipefail {0}`); python, pwsh, cmd or a wrapper script is not."""
    words = shell.split()
    if not words or posixpath.basename(words[0]) not in ("bash", "sh"):
        return False
    rest = [w for w in words[1:] if w != "{0}"]
    return all(w.startswith(("-", "+")) or w == "pipefail" for w in rest)


def live_lines(text: str) -> str:
    """A `run:` text without its comment lines (a commented-out `echo ... >> $GITHUB_ENV` writes nothing)."""
    if "#" not in text:
        return text
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def key_lines(lines: tuple[str, ...]) -> dict[str, int]:
    """`name:` -> the first line whose text starts with it: what `find_line(lines, "name:", 0)` finds (its
    fallback, line 1, for a key that is not there)."""
    found: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        head, colon, _ = line.strip().partition(":")
        if colon:
            found.setdefault(head + ":", number)
    return found


def find_line(lines: tuple[str, ...], needle: str, after: int) -> int:
    for number in range(after, len(lines)):
        line = lines[number]
        if needle in line and (after or line.strip().startswith(needle)):
            return number + 1
    return max(after, 1)


_STATUS_CALLS = re.compile(r"\b(always|failure|cancelled)\s*\(", re.IGNORECASE)


def continues(condition: Any) -> bool:
    """Whether a job's `if:` may run it after a needed job was skipped: it calls a status function other than
    `success()`, the one GitHub adds when the condition has none."""
    return isinstance(condition, str) and _STATUS_CALLS.search(condition) is not None


def needs_of(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list):
        return tuple(str(x) for x in raw if isinstance(x, str | int))
    return ()
