"""The commands a `make` call runs, read through the command readers: each recipe command is read by the shell
reader on its own Makefile line, in the folder and environment make gives it, under the conditions of the worlds
it runs in; what the Makefile reader could not read is listed, never dropped.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matrix.schedule.commands.pytest_command import (
    MAX_SCRIPT_DEPTH,
    MAX_SCRIPTS,
    MAX_SCRIPTS_BYTES,
    ScriptBudget,
    ScriptLoader,
    ScriptResult,
    read_text,
)
from matrix.schedule.environment.model import InstallStep
from matrix.schedule.make.outcome import MakeProblem, RecipeCommand
from matrix.schedule.make.targets import MakeCall
from matrix.schedule.make.variables import MAX_CHARS, MAX_STEPS, STEP_CHARS, MakeUnread
from matrix.schedule.make.worlds import read_make
from matrix.schedule.model import CommandReader, Origin, Selection, StepContext


@dataclass(kw_only=True)
class CheckoutFiles:
    """The checkout through the step's loader: each Makefile read counts against the step's budget of followed
    files; a file the loader refuses for another reason than its absence is unread, with that reason."""

    load: ScriptLoader
    budget: ScriptBudget
    read: dict[str, str | None] = field(default_factory=dict)  # a file read again (another world, an include) counts once
    listed: dict[str, frozenset[str] | None] = field(default_factory=dict)

    def text(self, path: str) -> str | None:
        if path not in self.read:
            self.read[path] = self._text(path)
        return self.read[path]

    def _text(self, path: str) -> str | None:
        if self.budget.scripts <= 0:
            raise MakeUnread(f"{path}: over the budget of files one step may follow ({MAX_SCRIPTS}, {MAX_SCRIPTS_BYTES} bytes)")
        text = self.load(path)
        if text is None:
            refused = _refused(self.load).get(path)
            if refused is not None and refused != "is not in the tree":
                raise MakeUnread(f"{path} {refused}")
            return None
        if self.budget.size < len(text):
            raise MakeUnread(f"{path}: over the budget of files one step may follow ({MAX_SCRIPTS}, {MAX_SCRIPTS_BYTES} bytes)")
        self.budget.scripts -= 1
        self.budget.size -= len(text)
        return text

    def exists(self, path: str) -> bool | None:
        folder, _, name = path.rpartition("/")
        names = self.names(folder or ".")
        return None if names is None else name in names

    def names(self, folder: str) -> frozenset[str] | None:
        """The names in a folder of the checkout (listed once: implicit-rule searches ask for many of them)."""
        root = getattr(getattr(self.load, "__wrapped__", self.load), "root", None)
        if folder.startswith("/") or ".." in folder.split("/") or not isinstance(root, Path):
            return None
        if folder not in self.listed:
            where = root / folder
            try:
                inside = where.resolve().is_relative_to(root.resolve())
                self.listed[folder] = frozenset(os.listdir(where)) if inside else None
            except OSError:
                self.listed[folder] = frozenset()
        return self.listed[folder]


# What the make reads of one schedule read may still spend, by the loader that read shares (the checkout's
# `TreeLoader`): a workflow that runs a hostile Makefile from many steps or commands, each with a follow budget of
# its own, is bounded as a whole (about three reads at the per-read bound, a few seconds).
MAX_SHARED = 3 * (MAX_CHARS + STEP_CHARS * MAX_STEPS)
_SHARED: weakref.WeakKeyDictionary[object, list[int]] = weakref.WeakKeyDictionary()


def _shared(load: ScriptLoader) -> list[int]:
    """The allowance every make read through `load` shares ([units left]); a fresh one where the loader cannot be
    told apart (one not weakly referable)."""
    owner: object = getattr(load, "__wrapped__", load)
    while isinstance(owner, functools.partial):
        owner = owner.args[0] if owner.args else owner.func
    try:
        return _SHARED.setdefault(owner, [MAX_SHARED])
    except TypeError:
        return [MAX_SHARED]


def _refused(load: ScriptLoader) -> Mapping[str, str]:
    refused = getattr(getattr(load, "__wrapped__", load), "refused", None)
    return refused if isinstance(refused, Mapping) else {}


def read_make_call(
    call: MakeCall,
    context: StepContext,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    *,
    budget: ScriptBudget,
    depth: int,
    calling: tuple[str, ...],
) -> ScriptResult:
    """Everything `call` runs, read through `readers` (see the module docstring)."""
    here = context.origin
    if depth >= MAX_SCRIPT_DEPTH:
        return ScriptResult(unread=((here, f"make in {call.folder}: files followed deeper than {MAX_SCRIPT_DEPTH}"),))
    left = _shared(load)
    run = read_make(
        call, CheckoutFiles(load=load, budget=budget), context.env, open_world=True, allowance=min(budget.size, left[0])
    )
    budget.size -= min(run.spent, budget.size)
    left[0] -= min(run.spent, left[0])
    selections: list[tuple[Selection, Origin]] = []
    unread: list[tuple[Origin, str]] = [(_origin(p, here), _reason(p)) for p in run.problems]
    conditions: list[tuple[Selection, tuple[str, ...]]] = []
    runners: list[tuple[Selection, tuple[str, ...], tuple[str, ...]]] = []
    bounds: list[tuple[tuple[Origin, str], tuple[str, ...]]] = []
    installs: list[tuple[Selection, tuple[InstallStep, ...]]] = []
    environments: list[tuple[Selection, Origin, tuple[tuple[str, str], ...], tuple[str, ...]]] = []
    for command in run.commands:
        if command.inlined:
            continue
        result = _read_command(command, context, load, readers, budget=budget, depth=depth, calling=calling)
        selections.extend(result.selections)
        unread.extend((o, _conditional(r, command.conditions)) for o, r in result.unread)
        runners.extend(result.runners)
        installs.extend(result.installs)
        environments.extend(result.environments)  # what make and the recipe line give the command, not the step's
        bounds.extend((((o, _conditional(r, command.conditions)), b) for (o, r), b in result.bounds))
        own = dict(result.conditions)
        conditions.extend(
            (s, (*command.conditions, *own.get(s, ()))) for s, _ in result.selections if command.conditions or s in own
        )
    return ScriptResult(
        selections=tuple(selections),
        unread=tuple(unread),
        conditions=tuple(conditions),
        runners=tuple(runners),
        bounds=tuple(bounds),
        installs=tuple(installs),
        environments=tuple(environments),
    )


def _read_command(
    command: RecipeCommand,
    context: StepContext,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    *,
    budget: ScriptBudget,
    depth: int,
    calling: tuple[str, ...],
) -> ScriptResult:
    """One recipe command through the shell reader, placed on its own Makefile line (which names it)."""
    env = {k: v for k, v in {**context.env, **dict(command.env)}.items() if v is not None}
    inner = StepContext(working_dir=command.folder, env=env, origin=context.origin)
    text = "\n" * (command.line - 1) + command.text + "\n"
    return read_text(text, command.file, load, readers, inner, depth=depth + 1, budget=budget, calling=(*calling, command.file))


def _origin(problem: MakeProblem, here: Origin) -> Origin:
    if not problem.file:
        return here
    return Origin(file=problem.file, line=problem.line, job=here.job, via=(*here.via, f"{here.file}:{here.line}"))


def _reason(problem: MakeProblem) -> str:
    return _conditional(problem.reason, problem.conditions)


def _conditional(reason: str, conditions: tuple[str, ...]) -> str:
    return reason if not conditions else f"{reason} ({'; '.join(conditions)})"
