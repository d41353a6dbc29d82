"""Local actions a workflow step uses (`uses: ./.github/actions/gpu-test`): a composite action's steps are read as
the job's own steps at that point; any other local action, or one that cannot be read, is a job not read.

GitHub's docs ("Creating a composite action", "Metadata syntax for GitHub Actions"): the action is the folder's
`action.yml` (or `action.yaml`); `runs.using: composite` runs `runs.steps` in the caller's job, where
`${{ inputs.<id> }}` is the step's `with.<id>` or else `inputs.<id>.default` (an empty string when neither is
given), and `${{ github.action_path }}` the action's folder. The caller step's `env:` reaches the action's steps,
and its `if:` decides whether any of them runs. A `with:` value that is itself an expression
(`${{ env.FILTER }}`) is put in as written, so the walker evaluates it in the job, as GitHub does; inside a larger
expression or an `if:` (`inputs.gpu == 'true'`), each reference becomes an operand (that expression, or the text as
a string literal).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.textfiles import read_limited
from matrix.core.treefiles import read_tree_text
from matrix.schedule.files import in_repo
from matrix.schedule.github.checkout import Checkout
from matrix.schedule.yamldoc import Marks, load_yaml

__all__ = ["ACTION", "ActionStep", "LocalActions", "local_action_files"]

ACTION_FILES = ("action.yml", "action.yaml")
MAX_DEPTH = 9  # composite actions inside composite actions (actions/runner `Constants.CompositeActionsMaxDepth`)
MAX_STEPS = 1024  # steps one job may grow to
MAX_WALK_STEPS = 20_000  # steps read from local actions across one read of the workflows
MAX_ACTION_BYTES = 1024 * 1024
_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
_INPUT_REF = re.compile(r"(?<![\w.-])inputs\.([A-Za-z_][A-Za-z0-9_-]*)", re.IGNORECASE)
_ACTION_PATH_REF = re.compile(r"(?<![\w.-])github\.action_path\b", re.IGNORECASE)
_USES_LOCAL = re.compile(r"uses:\s*['\"]?\./([^\s'\"@#]*)")  # `./` alone: the action at the repository root
_WRAPPED = re.compile(r"^\s*\$\{\{(.*)\}\}\s*$", re.S)


# The key under which a step read from an action carries where it came from: not a string, so no YAML key can be it.
class _Key:
    def __repr__(self) -> str:
        return "ACTION"


ACTION = _Key()


@dataclass(frozen=True, kw_only=True)
class ActionStep:
    """Where a step read from a local action is written: the action file, the line its `run:` value starts on there
    and that value's YAML style (`matrix.schedule.yamldoc.Marks`; "?" when not marked), the `uses:` that called the
    action (as the caller's workflow writes it) and the id of the workflow's step holding that `uses:`."""

    file: str
    line: int
    uses: str
    style: str = "?"
    caller: int = 0


class LocalActions:
    """The local actions of one repository, each file read once."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.read: dict[str, None] = {}  # the action files read, in order
        self._docs: dict[str, tuple[str, Mapping[str, Any], tuple[str, ...]] | str] = {}
        self._marks: dict[str, Marks] = {}  # action file -> where its values are written
        self._lines: dict[str, tuple[str, ...]] = {}
        self.steps_left = MAX_WALK_STEPS  # the read's budget of steps taken from local actions

    def documents(self) -> list[tuple[str, Mapping[str, Any], Marks]]:
        """The composite actions read: (file, document, where its values are written)."""
        read = [found for found in self._docs.values() if not isinstance(found, str)]
        return [(name, doc, self._marks.get(name, {})) for name, doc, _ in read]

    def lines(self, file: str) -> tuple[str, ...]:
        """The lines of an action file read (empty for one not read)."""
        return self._lines.get(file, ())

    def expand(self, steps: Any) -> tuple[Any, list[str]]:
        """`steps` with each local composite action's steps in place of its `uses:` step, and why any local
        action was not read (one line each); the list itself when no step uses a local action."""
        if not isinstance(steps, list) or not any(_local(s) for s in steps):
            return steps, []
        problems: list[str] = []
        out = self._expand(steps, 0, problems)
        return out, problems

    def _expand(
        self, steps: Sequence[Any], depth: int, problems: list[str], caller: int = 0, using: tuple[str, ...] = ()
    ) -> list[Any]:
        """`steps` with local actions read in; `using` are the actions being read around them (a cycle stops)."""
        out: list[Any] = []
        checkout = Checkout()  # a local action's path is from the workspace: where the job checked the repository out
        for step in steps:
            checkout = checkout.after(step) if isinstance(step, Mapping) else checkout
            uses = _local(step)
            if uses is None:
                out.append(step)
                continue
            top = caller or id(step)  # the workflow's own step that (through others) uses this action
            if not checkout.plain:
                folder = checkout.own(checkout.folder(uses.split("@", 1)[0]))
                if folder is None or folder.startswith(".."):
                    problems.append(f"uses {uses}: outside the job's checkout of this repository; not read")
                    continue
                uses = "./" + folder
            if depth >= MAX_DEPTH:
                _said(problems, f"uses {uses}: local actions nested deeper than {MAX_DEPTH} (GitHub's limit); not read")
                continue
            found = self._action(uses)
            if isinstance(found, str):
                _said(problems, f"uses {uses}: {found}")
                continue
            name, doc, lines = found
            if name in using:
                chain = " -> ".join((*using[using.index(name) :], name))
                _said(problems, f"uses {uses}, which uses itself ({chain}): GitHub stops at depth {MAX_DEPTH}; not read")
                continue
            raw_steps = doc["runs"].get("steps") or []
            if self.steps_left < len(raw_steps):
                _said(problems, f"uses {uses}: more than {MAX_WALK_STEPS} steps read from local actions in this read; not read")
                continue
            self.steps_left -= len(raw_steps)
            marks = self._marks.get(name, {})
            inner: list[Any] = []
            cursor = 0  # the action's steps are found in order, each on or after the line of the one before
            for raw in raw_steps:
                if isinstance(raw, Mapping):
                    mark = marks.get((id(raw), "run")) or marks.get((id(raw), "uses"))
                    cursor = mark[0] if mark is not None else _line_of(raw, lines, cursor)
                    where = ActionStep(file=name, line=cursor, uses=uses, style=mark[1] if mark else "?", caller=top)
                    inner.append(_step(raw, step, doc, where))
            out.extend(self._expand(inner, depth + 1, problems, top, (*using, name)))
            if len(out) > MAX_STEPS:
                problems.append(f"uses {uses}: more than {MAX_STEPS} steps once local actions are read; the rest not read")
                return out[:MAX_STEPS]
        return out

    def _action(self, uses: str) -> tuple[str, Mapping[str, Any], tuple[str, ...]] | str:
        """(action file, its document, its lines), or why it is not read."""
        known = self._docs.get(uses)
        if known is None:
            known = self._docs[uses] = self._load(uses)
        return known

    def _load(self, uses: str) -> tuple[str, Mapping[str, Any], tuple[str, ...]] | str:
        folder = posixpath.normpath(uses.split("@", 1)[0].removeprefix("./"))
        if folder.startswith("..") or posixpath.isabs(folder):
            return "the action lies outside the repository; not read"
        for file in ACTION_FILES:
            name = posixpath.join(folder, file) if folder != "." else file
            path = self.repo / name
            if not path.is_file():
                continue
            if not in_repo(self.repo, path):
                return f"{name} is a link to a file outside the repository; not read"
            marks: Marks = {}
            try:
                text = read_tree_text(self.repo, path, ConfigError, name, limit=MAX_ACTION_BYTES)
                doc = load_yaml(text, name, marks)
            except ConfigError as exc:
                return f"{exc}; not read"
            self.read[name] = None
            self._marks[name] = marks
            self._lines[name] = tuple(text.splitlines())
            runs = doc.get("runs") if isinstance(doc, Mapping) else None
            using = runs.get("using") if isinstance(runs, Mapping) else None
            if using != "composite":
                return f"{name} runs {using or 'nothing'} (not a composite action), which is not read"
            steps = runs.get("steps") if isinstance(runs, Mapping) else None
            if steps is not None and (not isinstance(steps, list) or not all(isinstance(x, Mapping) for x in steps)):
                return f"{name}: runs.steps must be a list of steps, got {steps!r:.40}; not read"
            return name, doc, tuple(text.splitlines())
        return f"no action.yml or action.yaml in {folder}; not read"


def _said(problems: list[str], problem: str) -> None:
    """A problem once: an action used many times over is said once, and the list stays bounded."""
    if problem not in problems and len(problems) < 64:
        problems.append(problem)


def _local(step: Any) -> str | None:
    uses = step.get("uses") if isinstance(step, Mapping) else None
    return uses if isinstance(uses, str) and uses.startswith("./") else None


def _line_of(step: Mapping[str, Any], lines: tuple[str, ...], after: int) -> int:
    """The line (1-based) of the action file that holds the step's `run:` (its first line) or `uses:`, at or after
    line `after`; `after` (or 1) when the text is not found as written."""
    run, uses = step.get("run"), step.get("uses")
    text = str(run).strip().splitlines()[0] if isinstance(run, str) and run.strip() else uses if isinstance(uses, str) else ""
    if text:
        for number in range(max(after, 1), len(lines) + 1):
            if text in lines[number - 1]:
                return number
    return max(after, 1)


class _Inputs:
    """The action's `inputs` and `github.action_path` as one call of it gives them, put into its steps' text."""

    def __init__(self, caller: Mapping[str, Any], doc: Mapping[str, Any], folder: str) -> None:
        self.given = _mapping(caller.get("with"))
        self.declared = _mapping(doc.get("inputs"))
        self.folder = folder

    def value(self, key: str) -> str:
        """The input's text: the caller's `with:` value, else its default, else "" (GitHub's empty string); input
        names are matched ignoring case, as GitHub matches a context's property names."""
        given = _get(self.given, key)
        if given is not None:
            return _text(given)
        spec = _get(self.declared, key)
        default = spec.get("default") if isinstance(spec, Mapping) else None
        return _text(default) if default is not None else ""

    def operand(self, key: str) -> str:
        """The input as an operand of an expression: the caller's own expression, or a quoted string literal."""
        text = self.value(key)
        wrapped = _WRAPPED.match(text)
        return f"({wrapped.group(1).strip()})" if wrapped else "'" + text.replace("'", "''") + "'"

    def text(self, text: str) -> str:
        """`${{ inputs.ID }}` and `${{ github.action_path }}` replaced by their text; inside a larger expression
        each reference becomes an operand, so the walker evaluates the expression in the caller's job."""

        def one(match: re.Match[str]) -> str:
            inner = match.group(1).strip()
            alone = _INPUT_REF.fullmatch(inner)
            if alone is not None:
                return self.value(alone.group(1))
            if inner.lower() == "github.action_path":
                return self.folder
            return "${{ " + self.condition(inner) + " }}"

        return _EXPRESSION.sub(one, text)

    def condition(self, text: str) -> str:
        """An expression (an `if:` without its wrapper) with each reference an operand."""
        text = _ACTION_PATH_REF.sub("'" + self.folder.replace("'", "''") + "'", text)
        return _INPUT_REF.sub(lambda m: self.operand(m.group(1)), text)


def _step(inner: Mapping[str, Any], caller: Mapping[str, Any], doc: Mapping[str, Any], where: ActionStep) -> dict[Any, Any]:
    """One of the action's steps as the caller's job runs it."""
    inputs = _Inputs(caller, doc, posixpath.dirname(where.file) or ".")
    step: dict[Any, Any] = {k: inputs.text(v) if isinstance(v, str) else v for k, v in inner.items()}
    if isinstance(inner.get("if"), str):
        step["if"] = inputs.condition(_bare(inner["if"]))
    if isinstance(inner.get("env"), Mapping) or isinstance(caller.get("env"), Mapping):
        own = {k: inputs.text(v) if isinstance(v, str) else v for k, v in _mapping(inner.get("env")).items()}
        step["env"] = {**_mapping(caller.get("env")), **own}
    if caller.get("if") is not None:
        step["if"] = f"({_bare(caller['if'])}) && ({step['if']})" if step.get("if") is not None else caller["if"]
    step[ACTION] = where
    return step


def _get(table: Mapping[Any, Any], key: str) -> Any:
    """`table[key]`, the key matched ignoring case; None when absent."""
    if key in table:
        return table[key]
    return next((v for k, v in table.items() if isinstance(k, str) and k.lower() == key.lower()), None)


def _mapping(value: Any) -> Mapping[Any, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bare(condition: Any) -> str:
    """An `if:` without its optional `${{ }}` wrapper."""
    text = str(condition)
    wrapped = _WRAPPED.match(text)
    return wrapped.group(1).strip() if wrapped else text.strip()


def local_action_files(repo: Path, workflow_texts: Sequence[str]) -> list[Path]:
    """The action files the workflows may use locally (a `uses: ./path` of theirs), for the schedule cache's key;
    an action another action uses is found in the action file's own text."""
    seen: dict[Path, None] = {}
    pending = list(workflow_texts)
    while pending and len(seen) < 256:
        for folder in _USES_LOCAL.findall(pending.pop()):
            for file in ACTION_FILES:
                path = repo / posixpath.normpath(folder) / file
                if path not in seen and path.is_file() and in_repo(repo, path):
                    seen[path] = None
                    try:
                        pending.append(read_limited(path, MAX_ACTION_BYTES).decode("utf-8", "replace"))
                    except OSError:
                        continue
    return list(seen)
