"""Make variables and what expansion carries: flavours, origins, scopes, the shared bounds of one read, and the
opaque spans a value known only at run time travels as; pure.

A value the reader cannot know (`$(shell ...)`, `$(wildcard ...)`, a name nothing defines where the environment
may still set it) travels through expansion as an opaque span, `OPEN + shell text + CLOSE`: written into a recipe
it becomes that shell text (`$(git ls-files)`, `${NAME}`), which the shell reader knows as a run-time value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

OPEN, CLOSE = "\ue000", "\ue001"  # around an opaque span (private-use code points: never in a Makefile we read)
MAX_STEPS = 100_000  # variable references and function calls, over a whole read (every world, include, sub-make)
MAX_CHARS = 4_000_000  # characters produced by expansion, over a whole read
MAX_DEPTH = 64  # nested expansions (a variable naming one naming one ...)
STEP_CHARS = 64  # what one step counts against a shared character allowance (a step costs about 64 characters of time)


class Flavor(StrEnum):
    """How a variable is expanded: `=` at each use, `:=` once when assigned (`$(flavor NAME)`)."""

    RECURSIVE = "recursive"
    SIMPLE = "simple"


class Source(StrEnum):
    """Where a variable's value came from, as `$(origin NAME)` prints it (GNU make manual, "The origin Function")."""

    DEFAULT = "default"
    ENVIRONMENT = "environment"
    FILE = "file"
    COMMAND_LINE = "command line"
    OVERRIDE = "override"
    AUTOMATIC = "automatic"


_RANK = {Source.DEFAULT: 0, Source.ENVIRONMENT: 1, Source.FILE: 2, Source.COMMAND_LINE: 3, Source.OVERRIDE: 4}


def outranks(old: Source, new: Source) -> bool:
    """Whether a value from `old` keeps a later assignment from `new` out (command line over file, override over
    both); an automatic variable is never assigned."""
    return _RANK.get(old, 5) > _RANK.get(new, 5)


@dataclass(frozen=True, kw_only=True)
class Variable:
    """One make variable: its value as stored (unexpanded when recursive), flavour, origin and export mark (None:
    make's default, which exports what came from the environment or the command line); `append` marks a
    target-specific `+=` whose value is added to the enclosing scope's at use."""

    value: str
    flavor: Flavor
    source: Source
    exported: bool | None = None
    append: bool = False


class MakeUnread(Exception):
    """The read meets a construct outside the subset, or passes a bound: the run is unread with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MakeStops(Exception):
    """GNU make itself stops here with an error (`$(error ...)`, a variable that references itself)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Undecided(Exception):
    """A conditional on a value known only at run time: the reader must read both ways. `key` names the decision
    (the same test on the same value is one decision), `said` how each answer reads (true, false)."""

    def __init__(self, key: str, said: tuple[str, str]) -> None:
        super().__init__(said[0])
        self.key = key
        self.said = said


@dataclass(kw_only=True)
class Bounds:
    """What one read may still spend, shared by every world, include and sub-make of it: references (steps) and
    characters produced, each under its own bound and both, weighed together (`spent`), under the `allowance`
    the caller has left (a step's budget shared by all the `make` calls of a CI step). Mutable by design."""

    steps: int = MAX_STEPS
    chars: int = MAX_CHARS
    allowance: int = MAX_CHARS + STEP_CHARS * MAX_STEPS
    spent_steps: int = 0
    spent_chars: int = 0

    def charge(self, *, steps: int = 0, chars: int = 0) -> None:
        self.spent_steps += steps
        self.spent_chars += chars
        if self.spent_steps > self.steps or self.spent_chars > self.chars or self.spent > self.allowance:
            raise MakeUnread(
                f"expanding the Makefile's variables passes the bound of {self.steps} references and {self.chars} characters"
                + (f" (the make reads before it left {self.allowance})" if self.allowance < MAX_CHARS else "")
            )

    @property
    def spent(self) -> int:
        return self.spent_chars + STEP_CHARS * self.spent_steps


def opaque(shell_text: str) -> str:
    """An opaque span that a recipe shows as `shell_text`."""
    return OPEN + plain(shell_text) + CLOSE


def plain(text: str) -> str:
    """`text` as a recipe shows it: each opaque span its shell text."""
    return text.replace(OPEN, "").replace(CLOSE, "") if OPEN in text else text


def is_known(text: str) -> bool:
    return OPEN not in text


def env_name(name: str) -> bool:
    """Whether make passes `name` to a recipe's environment (letters, digits and `_`, not starting with a digit)."""
    return bool(name) and not name[0].isdigit() and all(c.isalnum() or c == "_" for c in name) and name.isascii()


@dataclass(kw_only=True)
class Scope:
    """The variables one expansion sees: automatic variables, then target-specific layers (the target's own,
    then those it inherits from the target that needed it), then the global set."""

    globals: Mapping[str, Variable]
    layers: tuple[Mapping[str, Variable], ...] = ()
    automatic: Mapping[str, str] = field(default_factory=dict)

    def find(self, name: str) -> tuple[Variable, int] | None:
        """The variable `name` and the index of its layer (len(layers) for the global set)."""
        for index, layer in enumerate(self.layers):
            if name in layer:
                return layer[name], index
        found = self.globals.get(name)
        return None if found is None else (found, len(self.layers))

    def below(self, index: int) -> Scope:
        return Scope(globals=self.globals, layers=self.layers[index + 1 :], automatic=self.automatic)
