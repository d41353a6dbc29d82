"""`read_make`: a `make` call read once per world. A conditional on a value known only at run time splits the
read in two (at most `MAX_DECISIONS` times); the worlds' commands are merged, and a command found in only some
carries their conditions ("runs only if ..., not known before the run"). Every world shares one `Bounds`.
"""

from __future__ import annotations

from collections.abc import Mapping

from matrix.schedule.make.database import MakeFiles
from matrix.schedule.make.outcome import MakeProblem, MakeRun, RecipeCommand
from matrix.schedule.make.run import World
from matrix.schedule.make.targets import MakeCall
from matrix.schedule.make.variables import MAX_CHARS, MAX_STEPS, STEP_CHARS, Bounds, Undecided

MAX_DECISIONS = 5  # run-time conditionals one read splits on (2**5 worlds)


def read_make(
    call: MakeCall,
    files: MakeFiles,
    environment: Mapping[str, str],
    *,
    open_world: bool = True,
    allowance: int = MAX_CHARS + STEP_CHARS * MAX_STEPS,
) -> MakeRun:
    """What `call` runs with `environment` (the variables make starts with). With `open_world` a name nothing
    defines may be set by the runner's environment (its value is known only at run time); without, it is unset."""
    bounds = Bounds(allowance=max(allowance, 0))
    lines = [0]  # Makefile lines read, over every world
    pending: list[dict[str, bool]] = [{}]
    questions: dict[str, tuple[str, str]] = {}
    worlds: list[tuple[dict[str, bool], World]] = []
    while pending:
        decisions = pending.pop(0)
        world = World(files=files, bounds=bounds, decisions=decisions, open_world=open_world, lines=lines)
        try:
            world.start(call, environment)
        except Undecided as exc:
            if len(decisions) >= MAX_DECISIONS:
                reason = f"more than {MAX_DECISIONS} conditionals on values known only at run time ({exc.said[0]})"
                world.problems.append(MakeProblem(file="", line=0, reason=reason))
                worlds.append((decisions, world))
                continue
            questions[exc.key] = exc.said
            pending.extend([{**decisions, exc.key: True}, {**decisions, exc.key: False}])
            continue
        worlds.append((decisions, world))
    return _merge(worlds, questions, bounds)


def _merge(worlds: list[tuple[dict[str, bool], World]], questions: Mapping[str, tuple[str, str]], bounds: Bounds) -> MakeRun:
    """One run of the worlds: a command (or problem) in every world as it is, one in some with their conditions."""
    if len(worlds) == 1:
        world = worlds[0][1]
        return MakeRun(
            commands=tuple(world.commands), problems=tuple(world.problems), makefiles=tuple(world.makefiles), spent=bounds.spent
        )
    merged: list[RecipeCommand] = []
    present: dict[RecipeCommand, list[int]] = {}
    problems: dict[MakeProblem, list[int]] = {}
    makefiles: list[str] = []
    for index, (_, world) in enumerate(worlds):
        at = 0
        for command in world.commands:
            if command in present:
                at = merged.index(command) + 1
                present[command].append(index)
                continue
            merged.insert(at, command)
            present[command] = [index]
            at += 1
        for problem in world.problems:
            problems.setdefault(problem, []).append(index)
        makefiles.extend(m for m in world.makefiles if m not in makefiles)
    conditions = [_conditions(d, questions) for d, _ in worlds]

    def condition(indexes: list[int]) -> tuple[str, ...]:
        if len(indexes) == len(worlds):
            return ()
        common = set.intersection(*(set(conditions[i]) for i in indexes))
        matching = [i for i, c in enumerate(conditions) if common <= set(c)]
        if matching == indexes:
            return tuple(c for c in conditions[indexes[0]] if c in common)
        return (" or ".join("(" + "; ".join(conditions[i]) + ")" for i in indexes),)

    return MakeRun(
        commands=tuple(RecipeCommand(**{**c.__dict__, "conditions": condition(present[c])}) for c in merged),
        problems=tuple(MakeProblem(**{**p.__dict__, "conditions": condition(i)}) for p, i in problems.items()),
        makefiles=tuple(makefiles),
        spent=bounds.spent,
    )


def _conditions(decisions: Mapping[str, bool], questions: Mapping[str, tuple[str, str]]) -> tuple[str, ...]:
    return tuple(
        f"runs only if {questions[key][0 if value else 1]}, not known before the run" for key, value in decisions.items()
    )
