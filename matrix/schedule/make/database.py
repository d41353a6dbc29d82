"""What reading Makefiles gives: the variables, explicit targets with their rule lines and target-specific
variables, pattern rules and the special targets' effects; and the checkout as make sees it (`MakeFiles`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from matrix.schedule.make.variables import Flavor, Source, Variable

# GNU make 4.3's default suffix list (`make -p -f /dev/null`, variable SUFFIXES; src/default.c default_suffixes).
DEFAULT_SUFFIXES = [
    ".out",
    ".a",
    ".ln",
    ".o",
    ".c",
    ".cc",
    ".C",
    ".cpp",
    ".p",
    ".f",
    ".F",
    ".m",
    ".r",
    ".y",
    ".l",
    ".ym",
    ".yl",
    ".s",
    ".S",
    ".mod",
    ".sym",
    ".def",
    ".h",
    ".info",
    ".dvi",
    ".tex",
    ".texinfo",
    ".texi",
    ".txinfo",
    ".w",
    ".ch",
    ".web",
    ".sh",
    ".elc",
    ".el",
]


class MakeFiles(Protocol):
    """The checkout as make sees it: a file's text (None when absent, `MakeUnread` when it cannot be read),
    whether a path exists and the names in a folder (None when that cannot be known)."""

    def text(self, path: str) -> str | None: ...

    def exists(self, path: str) -> bool | None: ...

    def names(self, folder: str) -> frozenset[str] | None: ...


@dataclass(frozen=True, kw_only=True)
class RecipeLine:
    """One recipe line as written (continuations kept as backslash-newline, their leading tab taken off)."""

    file: str
    line: int
    text: str


@dataclass(kw_only=True)
class RuleRecord:
    """One rule line of an explicit target: its prerequisites and its recipe (None: the line gave none)."""

    file: str
    line: int
    prerequisites: list[str]
    order_only: list[str]
    recipe: list[RecipeLine] | None


@dataclass(kw_only=True)
class TargetEntry:
    rules: list[RuleRecord] = field(default_factory=list)
    variables: dict[str, Variable] = field(default_factory=dict)


@dataclass(kw_only=True)
class PatternRule:
    targets: tuple[str, ...]
    prerequisites: tuple[str, ...]
    order_only: tuple[str, ...]
    recipe: list[RecipeLine] | None
    file: str
    line: int


@dataclass(kw_only=True)
class Database:
    """Everything a read of the Makefiles gives: variables, explicit targets, pattern rules, the specials."""

    variables: dict[str, Variable]
    targets: dict[str, TargetEntry] = field(default_factory=dict)
    patterns: list[PatternRule] = field(default_factory=list)
    phony: set[str] = field(default_factory=set)
    makefiles: list[str] = field(default_factory=list)  # repository-relative, in the order read
    missing_includes: list[str] = field(default_factory=list)  # `-include` files not there (make may try to make them)
    oneshell: bool = False
    export_all: bool = False
    suffixes: tuple[str, ...] = tuple(DEFAULT_SUFFIXES)
    mentioned: set[str] = field(default_factory=set)  # prerequisites named by explicit rules ("ought to exist")
    environment: frozenset[str] = frozenset()  # the names of make's environment


def environment_variables(environment: Mapping[str, str]) -> dict[str, Variable]:
    """The variables make makes of its environment: recursive, exported, from the environment (SHELL and
    MAKEFLAGS are make's own)."""
    return {
        name: Variable(value=value, flavor=Flavor.RECURSIVE, source=Source.ENVIRONMENT, exported=True)
        for name, value in environment.items()
        if name not in ("SHELL", "MAKEFLAGS", "MFLAGS", "MAKELEVEL") and name and "=" not in name
    }
