"""What a `make` call runs, as the Makefile reader gives it: the commands in order with where they are written,
their folder, environment and conditions, and the places the read stops short."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class RecipeCommand:
    """One command make hands to a shell: where it is written, its text (prefixes off, `$$` made `$`), the folder
    it runs in, what make changes in the environment it was given (None: removed), its target, the conditions
    of the worlds it runs in, the make level, and whether make runs it under `-n` too (a `$(MAKE)` line).
    An `inlined` command is a sub-make whose own commands follow it: the shell reader must not read it again."""

    file: str
    line: int
    text: str
    folder: str
    env: tuple[tuple[str, str | None], ...] = ()
    target: str = ""
    conditions: tuple[str, ...] = ()
    level: int = 0
    recursive: bool = False
    inlined: bool = False


@dataclass(frozen=True, kw_only=True)
class MakeProblem:
    """A place the read stops short: a construct outside the subset, a bound, or make's own error (`stops`).
    `file` is empty when it concerns the call itself (a goal that is no rule, a Makefile that is not there)."""

    file: str
    line: int
    reason: str
    stops: bool = False
    conditions: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class MakeRun:
    """Everything one `make` call runs, in order, and what could not be read."""

    commands: tuple[RecipeCommand, ...] = ()
    problems: tuple[MakeProblem, ...] = ()
    makefiles: tuple[str, ...] = ()
    spent: int = 0

    @property
    def stopped(self) -> str | None:
        return next((p.reason for p in self.problems if p.stops), None)
