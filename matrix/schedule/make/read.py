"""Reading Makefiles the way GNU make 4.3 does (`read.c` eval): logical lines, comments, conditionals, variable
assignments by flavour, includes, rules, target-specific variables and recipes, into a `Database`; pure apart
from the `MakeFiles` it is handed.

A construct outside the declared subset (`subset.py`) raises `MakeUnread` naming it and where it stands; GNU
make's own errors raise `MakeStops`; a conditional on a run-time value raises `Undecided` (the caller reads both
ways). The whole read happens again per world, so every decision is consistent within one.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from matrix.schedule.make.assign import assign, export_names, undefine
from matrix.schedule.make.database import Database, MakeFiles, PatternRule, RecipeLine, RuleRecord, TargetEntry
from matrix.schedule.make.expand import Expander
from matrix.schedule.make.lines import (
    CONDITIONALS,
    OPERATORS,
    comparands,
    condensed,
    continued,
    parse_assignment,
    strip_comment,
    top_level,
)
from matrix.schedule.make.variables import Bounds, Flavor, MakeStops, MakeUnread, Source, Variable, is_known, plain

MAX_INCLUDE_DEPTH = 16
MAX_FILES = 64  # Makefiles one read opens (includes and sub-makes together)
MAX_LINES = 50_000  # lines one read goes through, over every file and world
# Special targets that change nothing about which commands run, commands assumed to succeed (GNU make manual,
# "Special Built-in Target Names").
_INERT_SPECIALS = frozenset(
    {".SILENT", ".IGNORE", ".NOTPARALLEL", ".DELETE_ON_ERROR", ".PRECIOUS", ".LOW_RESOLUTION_TIME", ".SECONDARY", ".INTERMEDIATE"}
)
_UNREAD_SPECIALS = frozenset({".SECONDEXPANSION", ".POSIX", ".DEFAULT"})


@dataclass(kw_only=True)
class _Frame:
    active: bool  # the current branch is read
    taken: bool  # some branch of this conditional was read
    outer: bool  # the enclosing text is read
    seen_else: bool = False


@dataclass(kw_only=True)
class Reader:
    """Reads Makefiles into `database`, in the folder make runs in (`folder`, repository-relative)."""

    files: MakeFiles
    folder: str
    database: Database
    expander: Expander
    bounds: Bounds
    opened: list[int]  # [files opened so far], shared by a whole read
    lines_read: list[int]

    def read(self, name: str, *, depth: int = 0) -> bool:
        """Read the Makefile `name` (as make names it, from its folder); False when it is not there."""
        path = _join(self.folder, name)
        if path.startswith(("/", "../")) or path == "..":
            raise MakeUnread(f"make reads {name}, outside the checkout")
        if depth > MAX_INCLUDE_DEPTH:
            raise MakeUnread(f"{path}: includes nested deeper than {MAX_INCLUDE_DEPTH}")
        self.opened[0] += 1
        if self.opened[0] > MAX_FILES:
            raise MakeUnread(f"{path}: more than {MAX_FILES} Makefiles read by one make")
        text = self.files.text(path)
        if text is None:
            return False
        self.database.makefiles.append(path)
        makefile_list = self.database.variables.get("MAKEFILE_LIST")
        listed = f"{makefile_list.value} {name}" if makefile_list and makefile_list.value else name
        self.database.variables["MAKEFILE_LIST"] = Variable(value=listed, flavor=Flavor.SIMPLE, source=Source.FILE)
        _FileReader(reader=self, path=path, lines=[s[:-1] if s.endswith("\r") else s for s in text.split("\n")]).run(depth)
        return True


@dataclass(kw_only=True)
class _FileReader:
    reader: Reader
    path: str
    lines: list[str]
    at: int = 0
    frames: list[_Frame] = field(default_factory=list)
    rule: _Open | None = None  # the rule recipe lines go to (None: not after a rule)
    no_targets: bool = False  # after a rule line whose targets expanded to nothing: its recipe is ignored

    @property
    def db(self) -> Database:
        return self.reader.database

    def where(self, line: int) -> str:
        return f"{self.path}:{line}"

    def active(self) -> bool:
        return all(f.active for f in self.frames)

    def run(self, depth: int) -> None:
        while self.at < len(self.lines):
            self.reader.lines_read[0] += 1
            if self.reader.lines_read[0] > MAX_LINES:
                raise MakeUnread(f"{self.path}: more than {MAX_LINES} Makefile lines read")
            number = self.at + 1
            raw = self.lines[self.at]
            if raw.startswith("\t") and (self.rule is not None or self.no_targets):
                text = self._recipe_line()
                if self.active() and self.rule is not None:
                    self.rule.add(RecipeLine(file=self.path, line=number, text=text))
                continue
            condensed, written = self._logical()
            logical = strip_comment(condensed)
            stripped = logical.strip()
            if not stripped:
                continue
            first = stripped.split(None, 1)[0]
            if first in CONDITIONALS:
                self._conditional(first, stripped[len(first) :].strip(" \t"), number)
                continue
            if not self.active():
                if first == "define" or stripped.startswith(("define ", "override define", "export define")):
                    self._skip_define(number)
                continue
            self.rule = None
            self.no_targets = False
            self._statement(logical.lstrip(" \t"), number, depth, written)
        if self.frames:
            raise MakeStops(f"{self.path}: missing 'endif'")

    # --- lines --------------------------------------------------------------------------------------------------

    def _logical(self) -> tuple[str, str]:
        """The logical line from here, with backslash-newline and the blanks around it made one space, and as
        written (continuations kept, a continuation line's leading tab off: the form a `;` recipe keeps)."""
        raw = [self.lines[self.at]]
        self.at += 1
        while continued(raw[-1]) and self.at < len(self.lines):
            following = self.lines[self.at]
            raw.append(following[1:] if following.startswith("\t") else following)
            self.at += 1
        return condensed("\n".join(raw)), "\n".join(raw)

    def _recipe_line(self) -> str:
        """A recipe line from here: its tab taken off, continuation lines kept with their backslash-newline."""
        pieces = [self.lines[self.at][1:]]
        self.at += 1
        while continued(pieces[-1]) and self.at < len(self.lines):
            following = self.lines[self.at]
            pieces.append(following[1:] if following.startswith("\t") else following)
            self.at += 1
        return "\n".join(pieces)

    # --- conditionals -----------------------------------------------------------------------------------------

    def _conditional(self, kind: str, rest: str, number: int) -> None:
        if kind == "endif":
            if not self.frames:
                raise MakeStops(f"{self.where(number)}: extraneous 'endif'")
            self.frames.pop()
            return
        if kind == "else":
            if not self.frames or self.frames[-1].seen_else:
                raise MakeStops(f"{self.where(number)}: extraneous 'else'")
            frame = self.frames[-1]
            if not rest:
                frame.seen_else = True
                frame.active = frame.outer and not frame.taken
                frame.taken = True
                return
            inner = rest.split(None, 1)
            if inner[0] not in ("ifdef", "ifndef", "ifeq", "ifneq"):
                raise MakeStops(f"{self.where(number)}: extraneous text after 'else' directive")
            if frame.taken or not frame.outer:
                frame.active = False
                return
            frame.active = self._test(inner[0], inner[1] if len(inner) > 1 else "", number)
            frame.taken = frame.active
            return
        outer = self.active()
        value = self._test(kind, rest, number) if outer else False
        self.frames.append(_Frame(active=outer and value, taken=outer and value, outer=outer))

    def _test(self, kind: str, rest: str, number: int) -> bool:
        expander = self._expander(number)
        if kind in ("ifdef", "ifndef"):
            name = expander.expand(rest).strip()
            if not is_known(name):
                said = (f"`{plain(name)}` names a set variable", f"`{plain(name)}` names no set variable")
                defined = expander.decide(
                    f"defined {name}", (f"{said[0]} ({self.where(number)})", f"{said[1]} ({self.where(number)})")
                )
            elif len(name.split()) != 1:
                raise MakeStops(f"{self.where(number)}: invalid syntax in conditional")
            else:
                found = expander.scope.find(name)
                if found is None and expander.open_world:
                    said = (f"the environment sets {name}", f"the environment does not set {name}")
                    defined = expander.decide(
                        f"defined {name}", (f"{said[0]} ({self.where(number)})", f"{said[1]} ({self.where(number)})")
                    )
                else:
                    defined = found is not None and found[0].value != ""
            return defined == (kind == "ifdef")
        first, second = comparands(rest, self.where(number))
        left, right = expander.expand(first), expander.expand(second)
        if is_known(left) and is_known(right):
            same = left == right
        else:
            pair = f"`{plain(left)}` and `{plain(right)}`"
            same = expander.decide(
                f"equal {left}\x00{right}", (f"{pair} are equal ({self.where(number)})", f"{pair} differ ({self.where(number)})")
            )
        return same == (kind == "ifeq")

    def _skip_define(self, number: int) -> None:
        depth = 1
        while self.at < len(self.lines) and depth:
            word = (self.lines[self.at].split() or [""])[0]
            depth += 1 if word == "define" else -1 if word == "endef" else 0
            self.at += 1

    # --- statements -------------------------------------------------------------------------------------------

    def _expander(self, number: int) -> Expander:
        expander = self.reader.expander
        expander.where = self.where(number)
        return expander

    def _statement(self, line: str, number: int, depth: int, written: str) -> None:
        modifiers, rest, assignment = parse_assignment(line, target=False)
        if "private" in modifiers:
            raise MakeUnread(f"{self.where(number)}: the 'private' modifier is outside the modelled subset")
        if "define" in modifiers:
            self._define(rest, modifiers, number)
            return
        if "undefine" in modifiers:
            undefine(self.db, self._expander(number), rest, modifiers)
            return
        if assignment is not None:
            if "unexport" in modifiers:
                raise MakeUnread(f"{self.where(number)}: 'unexport' with an assignment is outside the modelled subset")
            name, operator, value = assignment
            assign(
                self.db,
                self._expander(number),
                self.where(number),
                name=self._name(name, number),
                operator=operator,
                value=value,
                modifiers=modifiers,
            )
            return
        if modifiers:
            export_names(self.db, self._expander(number), self.where(number), modifiers, rest)
            return
        first = line.split(None, 1)[0]
        if first in ("include", "-include", "sinclude"):
            self._include(first, line[len(first) :], number, depth)
        elif first in ("vpath", "load", "-load"):
            raise MakeUnread(f"{self.where(number)}: the '{first}' directive is outside the modelled subset")
        elif first == "endef":
            raise MakeStops(f"{self.where(number)}: extraneous 'endef'")
        else:
            self._rule(line, number, written)

    def _name(self, raw: str, number: int) -> str:
        name = self._expander(number).expand(raw).strip()
        if not is_known(name) or not name:
            raise MakeUnread(f"{self.where(number)}: a variable name known only at run time ({plain(raw)[:60]})")
        return name

    def _define(self, rest: str, modifiers: tuple[str, ...], number: int) -> None:
        """`define NAME [op]` ... `endef`: a value of several lines."""
        head = rest.strip()
        operator = "="
        for candidate in OPERATORS:
            if head.endswith(candidate):
                head, operator = head[: -len(candidate)].strip(), candidate
                break
        body: list[str] = []
        depth = 1
        while self.at < len(self.lines):
            line = self.lines[self.at]
            self.at += 1
            word = (strip_comment(line).split() or [""])[0]
            if word == "define" or (word in ("override", "export") and "define" in line.split()[:2]):
                depth += 1
            elif word == "endef":
                depth -= 1
                if depth == 0:
                    break
            body.append(line)
        else:
            raise MakeStops(f"{self.where(number)}: missing 'endef', unterminated 'define'")
        name = self._name(head, number)
        assign(
            self.db,
            self._expander(number),
            self.where(number),
            name=name,
            operator=operator,
            value="\n".join(body),
            modifiers=modifiers,
        )

    def _include(self, kind: str, rest: str, number: int, depth: int) -> None:
        names = self._expander(number).expand(rest).split()
        if not is_known(" ".join(names)):
            raise MakeUnread(f"{self.where(number)}: {kind} of a file known only at run time")
        for name in names:
            if any(c in name for c in "*?["):
                raise MakeUnread(f"{self.where(number)}: {kind} {name}: a wildcard include is outside the modelled subset")
            found = self.reader.read(name, depth=depth + 1)
            if found:
                continue
            if kind == "include":
                raise MakeUnread(
                    f"{self.where(number)}: include {name}: not in the checkout (make stops unless a rule or an earlier "
                    "step makes it)"
                )
            self.db.missing_includes.append(name)

    # --- rules ------------------------------------------------------------------------------------------------

    def _rule(self, line: str, number: int, written: str) -> None:
        recipe_text: str | None = None
        semicolon = top_level(written, ";#")
        if semicolon >= 0 and written[semicolon] == ";":  # `target: prerequisites ; recipe`: the recipe as written
            line, recipe_text = strip_comment(condensed(written[:semicolon])).lstrip(" \t"), written[semicolon + 1 :]
        colon = top_level(line, ":")
        expander = self._expander(number)
        if colon < 0:
            if not expander.expand(line).strip():
                return  # a line whose variables expand to nothing
            raise MakeStops(f"{self.where(number)}: *** missing separator")
        targets_text = expander.expand(line[:colon])
        if not is_known(targets_text):
            raise MakeUnread(f"{self.where(number)}: rule targets known only at run time ({plain(line[:colon])[:60]})")
        if ":" in targets_text or targets_text.rstrip().endswith("&"):
            raise MakeUnread(
                f"{self.where(number)}: a rule form outside the modelled subset (grouped targets or a colon in a name)"
            )
        targets = targets_text.split()
        rest = line[colon + 1 :]
        if rest.startswith(":"):
            raise MakeUnread(f"{self.where(number)}: double-colon rules are outside the modelled subset")
        if not targets:
            self.no_targets = True
            return
        modifiers, _, assignment = parse_assignment(rest.lstrip(" \t"), target=True)
        if assignment is not None:
            if recipe_text is not None:
                assignment = (assignment[0], assignment[1], assignment[2] + ";" + recipe_text)
            self._target_variable(targets, modifiers, assignment, number)
            return
        prerequisites_text = expander.expand(rest)
        if not is_known(prerequisites_text):
            raise MakeUnread(f"{self.where(number)}: prerequisites known only at run time ({plain(rest)[:60]})")
        if ":" in prerequisites_text:
            raise MakeUnread(f"{self.where(number)}: static pattern rules are outside the modelled subset")
        normal, _, order_only = prerequisites_text.partition("|")
        opened = _Open(owners=self._record(targets, normal.split(), order_only.split(), number))
        if recipe_text is not None:
            opened.add(RecipeLine(file=self.path, line=number, text=recipe_text.lstrip(" \t")))
        self.rule = opened
        self.no_targets = False

    def _record(
        self, targets: list[str], normal: list[str], order_only: list[str], number: int
    ) -> list[RuleRecord | PatternRule]:
        patterns = [t for t in targets if "%" in t]
        if patterns and len(patterns) != len(targets):
            raise MakeStops(f"{self.where(number)}: *** mixed implicit and normal rules")
        if patterns:
            if len(patterns) > 1:
                raise MakeUnread(f"{self.where(number)}: pattern rules with several targets are outside the modelled subset")
            rule = PatternRule(
                targets=tuple(patterns),
                prerequisites=tuple(normal),
                order_only=tuple(order_only),
                recipe=None,
                file=self.path,
                line=number,
            )
            self.db.patterns.append(rule)
            return [rule]
        records: list[RuleRecord | PatternRule] = []
        for target in targets:
            if self._special(target, normal, number):
                continue
            entry = self.db.targets.setdefault(target, TargetEntry())
            record = RuleRecord(file=self.path, line=number, prerequisites=list(normal), order_only=list(order_only), recipe=None)
            entry.rules.append(record)
            self.db.mentioned.update(normal)
            self.db.mentioned.update(order_only)
            default = self.db.variables.get(".DEFAULT_GOAL")
            if (default is None or default.value == "") and (not target.startswith(".") or "/" in target):
                self.db.variables[".DEFAULT_GOAL"] = Variable(value=target, flavor=Flavor.SIMPLE, source=Source.FILE)
            records.append(record)
        return records

    def _special(self, target: str, normal: list[str], number: int) -> bool:
        """A special target's effect; True when `target` is one (it is then no rule of its own)."""
        if target == ".PHONY":
            self.db.phony.update(normal)
            return True
        if target == ".ONESHELL":
            self.db.oneshell = True
            return True
        if target == ".EXPORT_ALL_VARIABLES":
            self.db.export_all = True
            return True
        if target == ".SUFFIXES":
            if normal:
                raise MakeUnread(f"{self.where(number)}: suffix rules (.SUFFIXES with suffixes) are outside the modelled subset")
            self.db.suffixes = ()
            return True
        if target in _UNREAD_SPECIALS:
            raise MakeUnread(f"{self.where(number)}: the special target {target} is outside the modelled subset")
        if target in _INERT_SPECIALS:
            return True
        if target.startswith(".") and "/" not in target:
            dots = [s for s in self.db.suffixes if target.startswith(s) and target[len(s) :] in (*self.db.suffixes, "")]
            if dots and target not in self.db.suffixes:
                raise MakeUnread(f"{self.where(number)}: suffix rule {target} is outside the modelled subset")
        return False

    def _target_variable(
        self, targets: list[str], modifiers: tuple[str, ...], assignment: tuple[str, str, str], number: int
    ) -> None:
        if "private" in modifiers or "unexport" in modifiers:
            raise MakeUnread(
                f"{self.where(number)}: a 'private' or 'unexport' target-specific variable is outside the modelled subset"
            )
        name, operator, value = assignment
        if operator == "!=":
            raise MakeUnread(f"{self.where(number)}: a target-specific '!=' is outside the modelled subset")
        for target in targets:
            if "%" in target:
                raise MakeUnread(f"{self.where(number)}: pattern-specific variables are outside the modelled subset")
            if target.startswith(".") and target in (".PHONY", ".ONESHELL", ".EXPORT_ALL_VARIABLES"):
                raise MakeUnread(f"{self.where(number)}: a variable on {target} is outside the modelled subset")
            entry = self.db.targets.setdefault(target, TargetEntry())
            assign(
                self.db,
                self._expander(number),
                self.where(number),
                name=self._name(name, number),
                operator=operator,
                value=value,
                modifiers=modifiers,
                into=entry.variables,
            )


@dataclass(kw_only=True)
class _Open:
    """The rule line recipe lines go to: its records (one per target) share one recipe list, made by the first
    recipe line read (a rule whose recipe lines all sit in branches not taken has no recipe)."""

    owners: list[RuleRecord | PatternRule]
    recipe: list[RecipeLine] | None = None

    def add(self, line: RecipeLine) -> None:
        if self.recipe is None:
            self.recipe = []
            for owner in self.owners:
                owner.recipe = self.recipe
        self.recipe.append(line)


def _join(folder: str, name: str) -> str:
    if name.startswith("/"):
        return name
    return posixpath.normpath(posixpath.join(folder, name))
