"""Implicit rules as GNU make 4.3's `implicit.c` pattern_search applies them: the pattern rules of the Makefile and
GNU make's built-in ones (`defaults.BUILTIN_RULES`), tried by shortest stem then as written; the first whose
prerequisites exist or ought to (a target, a prerequisite of an explicit rule) applies, else one whose
prerequisites other implicit rules make (a chain). A non-terminal match-anything rule makes no intermediate file
and no name of a known suffix. Only a rule of the Makefile is run; one that only a built-in rule or a chain
makes is unread. Pure apart from the `MakeFiles` it asks.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from matrix.schedule.make.database import Database, MakeFiles, PatternRule
from matrix.schedule.make.defaults import BUILTIN_RULES
from matrix.schedule.make.variables import MakeUnread

MAX_CHAIN = 6  # implicit rules chained to make a prerequisite


@dataclass(frozen=True, kw_only=True)
class _Candidate:
    """A pattern rule (of the Makefile, or built in: `rule` None) that may make a name, with its stem and the
    prerequisites it needs for that name."""

    pattern: str
    stem: str
    needed: tuple[str, ...]
    terminal: bool
    rule: PatternRule | None


_Rule = tuple[int, str, tuple[str, ...], bool, PatternRule | None]  # order, target pattern, prerequisites, terminal, rule


@dataclass(frozen=True, kw_only=True)
class _RuleIndex:
    """Pattern rules by the suffix their target pattern asks for (`%.o`), so a name is matched against the few
    that can match it; the rest (a prefix, a folder) are tried one by one."""

    by_suffix: Mapping[str, tuple[_Rule, ...]]
    others: tuple[_Rule, ...]

    @classmethod
    def of(cls, patterns: list[PatternRule], *, builtin: bool) -> _RuleIndex:
        rules: list[_Rule] = [(i, p.targets[0], p.prerequisites, False, p) for i, p in enumerate(patterns)]
        if builtin:
            rules += [
                (len(patterns) + i, t, prerequisites, terminal, None)
                for i, (t, prerequisites, terminal) in enumerate(BUILTIN_RULES)
            ]
        by_suffix: dict[str, list[_Rule]] = {}
        others: list[_Rule] = []
        for rule in rules:
            pattern = rule[1]
            suffix = pattern[1:]
            if pattern.startswith("%") and "%" not in suffix and "/" not in suffix and (not suffix or not suffix[0].isalnum()):
                by_suffix.setdefault(pattern[1:], []).append(rule)
            else:
                others.append(rule)
        return cls(by_suffix={k: tuple(v) for k, v in by_suffix.items()}, others=tuple(others))

    def matching(self, base: str, *, builtin: bool) -> list[_Rule]:
        """The rules whose target pattern may match `base`; GNU make's own only with `builtin`."""
        found = list(self.others) + list(self.by_suffix.get("", ()))
        for at, char in enumerate(base):
            if at and not char.isalnum():  # a suffix starts at a punctuation mark (`.py`, `-gpu`, `,v`)
                found += self.by_suffix.get(base[at:], ())
        return found if builtin else [r for r in found if r[4] is not None]


@dataclass(kw_only=True)
class ImplicitRules:
    """The implicit-rule search of one make, over its database, in its folder. Mutable: it keeps the answers of
    the chains it looked at."""

    database: Database
    files: MakeFiles
    folder: str
    builtin: bool
    exists: Callable[[str], bool | None]
    chains: dict[tuple[str, int], bool] = field(default_factory=dict)
    rules: _RuleIndex | None = None

    def pattern(self, target: str) -> tuple[PatternRule, str] | None:
        """The pattern rule of the Makefile that makes `target` (implicit.c pattern_search: the candidates by
        shortest stem, then as written; first one whose prerequisites exist or ought to exist, else one reached
        through a chain of rules). A target only a built-in rule or a chain makes is unread."""
        found = self._implicit(target, 0)
        if found is None:
            return None
        candidate, direct = found
        if candidate.rule is None:
            raise MakeUnread(
                f"{target} would be made by GNU make's built-in rule {candidate.pattern}: {' '.join(candidate.needed)}"
            )
        if not direct:
            needs = " ".join(candidate.needed)
            raise MakeUnread(f"{target} would be made through a chain of implicit rules ({candidate.pattern} needs {needs})")
        if candidate.rule.recipe is None:
            raise MakeUnread(
                f"a pattern rule without a recipe ({candidate.rule.file}:{candidate.rule.line}) is outside the modelled subset"
            )
        return candidate.rule, candidate.stem

    def _implicit(self, name: str, depth: int) -> tuple[_Candidate, bool] | None:
        candidates = self._candidates(name, depth)
        for candidate in candidates:  # pass one: prerequisites that exist or ought to
            states = [self._ought(p) for p in candidate.needed]
            if all(s is True for s in states):
                return candidate, True
            if any(s is None for s in states):
                raise MakeUnread(f"whether the rule {candidate.pattern} applies to {name} is not known")
        for candidate in candidates:  # pass two: prerequisites made by implicit rules in turn
            if candidate.terminal:
                continue
            if depth >= MAX_CHAIN:
                raise MakeUnread(f"implicit rules chained deeper than {MAX_CHAIN} for {name}")
            if all(self._ought(p) or self._chained(p, depth + 1) for p in candidate.needed):
                return candidate, False
        return None

    def _chained(self, name: str, depth: int) -> bool:
        # Below the top every depth reads alike (no match-anything rule), so one answer per name serves them all.
        key = (name, min(depth, 1))
        if key not in self.chains:
            self.chains[key] = self._implicit(name, depth) is not None
        return self.chains[key]

    def _candidates(self, name: str, depth: int) -> list[_Candidate]:
        database = self.database
        if self.rules is None:
            self.rules = _RuleIndex.of(database.patterns, builtin=self.builtin)
        out: list[tuple[int, int, _Candidate]] = []
        folder, _, base = name.rpartition("/")
        for order, pattern, prerequisites, terminal, rule in self.rules.matching(base, builtin=self._may_build(folder, base)):
            # A non-terminal match-anything rule never makes an intermediate file, nor a name of a known suffix (the
            # "dummy" rules `%.c:`, one per .SUFFIXES entry, stand in its way).
            if pattern == "%" and not terminal and (depth > 0 or any(name.endswith(s) for s in database.suffixes)):
                continue
            stem = stem_of(pattern, base if "/" not in pattern else name)
            if stem is None:
                continue
            prefix = f"{folder}/" if folder and "/" not in pattern else ""
            needed = tuple(prefix + p.replace("%", stem, 1) for p in prerequisites)
            out.append(
                (len(stem), order, _Candidate(pattern=pattern, stem=prefix + stem, needed=needed, terminal=terminal, rule=rule))
            )
        return [c for _, _, c in sorted(out, key=lambda item: (item[0], item[1]))]

    def _may_build(self, folder: str, base: str) -> bool:
        """Whether a built-in rule could make `base` in `folder`: each needs a file named from it there
        (`base.c`, `base,v`, `s.base`, `RCS/`, `SCCS/`); without one, none applies, nor any chain of them."""
        names = self.files.names(_join(self.folder, folder or "."))
        if names is None:
            return True
        return any(n.startswith((f"{base}.", f"{base},")) or n in (f"s.{base}", "RCS", "SCCS") for n in names)

    def _ought(self, name: str) -> bool | None:
        """Whether `name` exists or ought to (a target or a prerequisite of an explicit rule)."""
        database = self.database
        if name in database.targets or name in database.mentioned or name in database.phony:
            return True
        return self.exists(name)


def stem_of(pattern: str, name: str) -> str | None:
    prefix, _, suffix = pattern.partition("%")
    if "/" not in pattern and "/" in name:
        return None
    if len(name) >= len(prefix) + len(suffix) and name.startswith(prefix) and name.endswith(suffix):
        stem = name[len(prefix) : len(name) - len(suffix)]
        return stem if stem else None
    return None


def _join(folder: str, path: str) -> str:
    return path if path.startswith("/") else posixpath.normpath(posixpath.join(folder, path))
