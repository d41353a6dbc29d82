"""What one `make` call runs: its goals built depth first (prerequisites before the target, each target once, the
last recipe given for a target), each recipe expanded in its target's scope, sub-makes of a recipe followed; pure
apart from the `MakeFiles` it is handed.

`read_make` reads the call once per world: a conditional on a value known only at run time splits the read in
two (at most `MAX_DECISIONS` times), and a command found in only some worlds carries their conditions. GNU make
rules followed (GNU make manual, "How make Processes a Makefile", "Rules", "Implicit Rules", "Recursive Use of
make", "Variables from the Environment"; 4.3's `remake.c`, `implicit.c`, `job.c` new_job/start_job_command):
a target is remade when phony, absent, or older than a prerequisite that was remade; a target with no recipe of
its own takes one from the pattern rule with the shortest stem whose prerequisites exist or ought to; each
recipe line runs in a shell of its own unless `.ONESHELL`; recipe text is expanded when the target runs.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from matrix.schedule.make.defaults import BUILTIN_RULES, DEFAULT_VARIABLES
from matrix.schedule.make.expand import (
    MAX_CHARS,
    Bounds,
    Expander,
    Flavor,
    MakeStops,
    MakeUnread,
    Scope,
    Source,
    Undecided,
    Variable,
    env_name,
    is_known,
    opaque,
    plain,
)
from matrix.schedule.make.read import Database, MakeFiles, PatternRule, Reader, RecipeLine, RuleRecord, environment_variables
from matrix.schedule.make.targets import MakeCall, is_make, make_call, makeflags

MAX_DECISIONS = 5  # run-time conditionals one read splits on (2**5 worlds)
MAX_MAKE_DEPTH = 4  # sub-makes inside sub-makes
MAX_TARGETS = 2_000  # targets visited, over a whole read
MAX_COMMANDS = 2_000  # recipe commands, over a whole read
MAX_PREREQUISITE_DEPTH = 200  # a prerequisite of a prerequisite of ...
MAX_CHAIN = 6  # implicit rules chained to make a prerequisite
_DEFAULT_NAMES = ("GNUmakefile", "makefile", "Makefile")
_RUN_TIME_MARKS = ("${{", "__UNRESOLVED_", "\x00", "$(", "`")


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


def read_make(
    call: MakeCall, files: MakeFiles, environment: Mapping[str, str], *, open_world: bool = True, allowance: int = MAX_CHARS
) -> MakeRun:
    """What `call` runs with `environment` (the variables make starts with). With `open_world` a name nothing
    defines may be set by the runner's environment (its value is known only at run time); without, it is unset."""
    bounds = Bounds(chars=min(MAX_CHARS, max(allowance, 0)))
    lines = [0]  # Makefile lines read, over every world
    pending: list[dict[str, bool]] = [{}]
    questions: dict[str, tuple[str, str]] = {}
    worlds: list[tuple[dict[str, bool], _World]] = []
    while pending:
        decisions = pending.pop(0)
        world = _World(files=files, bounds=bounds, decisions=decisions, open_world=open_world, lines=lines)
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


@dataclass(kw_only=True)
class _World:
    """One reading of the call under fixed decisions. Mutable: it collects commands and problems."""

    files: MakeFiles
    bounds: Bounds
    decisions: Mapping[str, bool]
    open_world: bool
    commands: list[RecipeCommand] = field(default_factory=list)
    problems: list[MakeProblem] = field(default_factory=list)
    makefiles: list[str] = field(default_factory=list)
    opened: list[int] = field(default_factory=lambda: [0])  # Makefiles opened
    lines: list[int] = field(default_factory=lambda: [0])  # Makefile lines read (shared by the worlds of a read)
    visited: int = 0  # targets visited
    existing: dict[str, bool | None] = field(default_factory=dict)  # what `files.exists` said, by path

    def start(self, call: MakeCall, environment: Mapping[str, str]) -> None:
        top = dict(environment)
        try:
            _Make(world=self, call=call, environment=top, top=top, level=0, stack=()).run()
        except MakeUnread as exc:
            self.problems.append(MakeProblem(file="", line=0, reason=exc.reason))
        except MakeStops as exc:
            self.problems.append(MakeProblem(file="", line=0, reason=f"make stops: {exc.message}", stops=True))


@dataclass(kw_only=True)
class _Make:
    """One make process (the top one or a sub-make) within a world."""

    world: _World
    call: MakeCall
    environment: dict[str, str]
    top: Mapping[str, str]
    level: int
    stack: tuple[tuple[object, ...], ...]
    database: Database | None = None
    done: dict[str, bool] = field(default_factory=dict)
    chains: dict[tuple[str, int], bool] = field(default_factory=dict)
    rules: _RuleIndex | None = None  # the Makefile's pattern rules, then the built-in ones

    def run(self) -> None:
        if self.call.unread:
            raise MakeUnread(f"make {self.call.unread}: an option outside the modelled subset")
        database = self._read()
        self.database = database
        self._remaking(database)
        goals = list(self.call.goals)
        if not goals:
            expander = self._expander(Scope(globals=database.variables))
            default = expander.value(".DEFAULT_GOAL").split()
            if not is_known(" ".join(default)):
                raise MakeUnread(".DEFAULT_GOAL is known only at run time")
            if len(default) > 1:
                raise MakeStops(".DEFAULT_GOAL contains more than one target")
            if not default:
                raise MakeStops("No targets.")
            goals = default
        for goal in goals:
            if goal not in database.targets and goal not in database.phony and self._pattern(goal) is None:
                exists = self._exists(goal)
                if exists is not True:
                    self.world.problems.append(
                        MakeProblem(file="", line=0, reason=f"make target {goal} is not a rule of {database.makefiles[0]}")
                    )
                    return
            self._visit(goal, (), ())

    # --- reading ----------------------------------------------------------------------------------------------

    def _read(self) -> Database:
        variables: dict[str, Variable] = {}
        if not self.call.no_builtin_variables:
            variables.update(
                {k: Variable(value=v, flavor=Flavor.RECURSIVE, source=Source.DEFAULT) for k, v in DEFAULT_VARIABLES.items()}
            )
        variables.update(environment_variables({k: _environment_value(k, v) for k, v in self.environment.items()}))
        simple = Flavor.SIMPLE
        variables.update(
            {
                "MAKE_COMMAND": Variable(value=self.call.program, flavor=simple, source=Source.DEFAULT),
                "MAKE": Variable(value="$(MAKE_COMMAND)", flavor=Flavor.RECURSIVE, source=Source.DEFAULT),
                "MAKELEVEL": Variable(value=str(self.level), flavor=simple, source=Source.ENVIRONMENT),
                "MAKECMDGOALS": Variable(value=" ".join(self.call.goals), flavor=simple, source=Source.DEFAULT),
                "CURDIR": Variable(value=opaque("$(pwd)"), flavor=simple, source=Source.FILE),
                "SHELL": Variable(value="/bin/sh", flavor=Flavor.RECURSIVE, source=Source.FILE),
                ".SHELLFLAGS": Variable(value="-c", flavor=simple, source=Source.DEFAULT),
                "MAKEFILE_LIST": Variable(value="", flavor=simple, source=Source.FILE),
                ".DEFAULT_GOAL": Variable(value="", flavor=simple, source=Source.FILE),
                "MAKE_VERSION": Variable(value=opaque("$(make --version)"), flavor=simple, source=Source.DEFAULT),
                "MAKEFLAGS": Variable(value=opaque("${MAKEFLAGS}"), flavor=simple, source=Source.FILE),
            }
        )
        database = Database(variables=variables, environment=frozenset(self.environment))
        expander = self._expander(Scope(globals=variables))
        for name, operator, written in self.call.variables:
            value = written.lstrip(" \t")  # as in a Makefile, blanks after the operator are not the value's
            flavor = Flavor.RECURSIVE if operator == "=" else Flavor.SIMPLE
            stored = value if flavor is Flavor.RECURSIVE else expander.expand(value)
            # Exported for being from the command line (while it stays so: an `override` ends that), and for good
            # when make's environment has the name too (checked against make).
            marked = True if name in self.environment else None
            variables[name] = Variable(value=stored, flavor=flavor, source=Source.COMMAND_LINE, exported=marked)
        reader = Reader(
            files=self.world.files,
            folder=self.call.folder,
            database=database,
            expander=expander,
            bounds=self.world.bounds,
            opened=self.world.opened,
            lines_read=self.world.lines,
        )
        names = self.call.makefiles or _DEFAULT_NAMES
        found_any = False
        for name in names:
            found = reader.read(name)
            if found and not self.call.makefiles:
                found_any = True
                break
            if not found and self.call.makefiles:
                raise MakeUnread(f"make -f {name}: {_join(self.call.folder, name)} is not in the checkout")
            found_any = found_any or found
        if not found_any:
            raise MakeUnread(f"no Makefile in {self.call.folder}")
        self.world.makefiles.extend(m for m in database.makefiles if m not in self.world.makefiles)
        return database

    def _remaking(self, database: Database) -> None:
        """GNU make remakes each Makefile it read (and a missing `-include`) when a rule can: it then reads them
        again, which this reader does not follow. Match-anything rules are not used for Makefiles."""
        folder = self.call.folder
        names = [posixpath.relpath(m, folder) if folder != "." else m for m in database.makefiles]
        for name in [*names, *database.missing_includes]:
            if name in database.phony:
                continue
            entry = database.targets.get(name)
            missing = name in database.missing_includes
            # One with a rule is remade (and read again) when missing, or when it has prerequisites (one may be
            # newer); a Makefile there whose rule has none is up to date.
            if entry is not None and (missing or any(r.prerequisites or r.order_only for r in entry.rules)):
                raise MakeUnread(f"a rule can remake the Makefile {name}: make would read it again")
            for pattern in database.patterns:
                if pattern.targets[0] == "%":
                    continue
                stem = _stem(pattern.targets[0], name)
                if stem is None:
                    continue
                if name in database.missing_includes or pattern.prerequisites:
                    raise MakeUnread(f"the pattern rule {pattern.targets[0]} ({pattern.file}:{pattern.line}) can remake {name}")

    # --- building ---------------------------------------------------------------------------------------------

    def _visit(self, target: str, layers: tuple[dict[str, Variable], ...], chain: tuple[str, ...]) -> bool:
        """Build `target` (its prerequisites first); whether it was remade (ran a recipe, or is phony)."""
        if target in self.done:
            return self.done[target]
        self.world.visited += 1
        if self.world.visited > MAX_TARGETS:
            raise MakeUnread(f"more than {MAX_TARGETS} targets visited")
        if len(chain) >= MAX_PREREQUISITE_DEPTH:
            raise MakeUnread(f"prerequisites nested deeper than {MAX_PREREQUISITE_DEPTH} ({target})")
        database = self.database
        assert database is not None
        entry = database.targets.get(target)
        phony = target in database.phony
        rules = entry.rules if entry is not None else []
        with_recipe = [r for r in rules if r.recipe is not None]
        recipe_rule = _last(with_recipe) if with_recipe else None
        # One list (read.c record_files, checked against make): a rule line with a recipe puts its prerequisites in
        # front of those given so far, one without adds them at the end; order-only ones after the others.
        deps: list[tuple[str, bool]] = []
        for rule in rules:
            items = [(p, False) for p in rule.prerequisites] + [(p, True) for p in rule.order_only]
            deps = items + deps if rule.recipe is not None else deps + items
        recipe: list[RecipeLine] = list(recipe_rule.recipe or []) if recipe_rule is not None else []
        stem = _explicit_stem(target, database.suffixes)
        has_recipe = recipe_rule is not None
        if recipe_rule is None and not phony:
            found = self._pattern(target)
            if found is not None:
                pattern, stem = found
                implicit = [(p.replace("%", stem, 1), False) for p in pattern.prerequisites]
                deps = implicit + [(p.replace("%", stem, 1), True) for p in pattern.order_only] + deps
                recipe = list(pattern.recipe or [])
                has_recipe = True
            elif entry is None or not rules:
                return self._no_rule(target, chain)
        scope_layers = ((entry.variables,) if entry is not None and entry.variables else ()) + layers
        here = (*chain, target)
        # remake.c: a prerequisite already being made up the chain is a circular dependency, dropped from the
        # target's list ("Circular a <- b dependency dropped."), so `$<` and `$^` do not name it.
        deps = [(p, only) for p, only in deps if p not in here]
        normal = [p for p, only in deps if not only]
        order_only = [p for p, only in deps if only and p not in normal]
        remade = False
        # Made in the list's order, each once (a name both normal and order-only is normal).
        for prerequisite in _unique([p for p, _ in deps]):
            made = self._visit(prerequisite, scope_layers, here)
            remade = remade or (made and prerequisite in normal)
        runs = phony or self.call.always_make or self._out_of_date(target, normal, remade)
        if runs and has_recipe:
            self._recipe(target, recipe, stem, normal, order_only, scope_layers)
        self.done[target] = runs
        return runs

    def _no_rule(self, target: str, chain: tuple[str, ...]) -> bool:
        exists = self._exists(target)
        if exists:
            self.done[target] = False
            return False
        needed = f", needed by '{chain[-1]}'" if chain else ""
        if exists is None:
            raise MakeUnread(f"No rule to make target '{target}'{needed}, and whether the file is there is not known")
        raise MakeUnread(
            f"No rule to make target '{target}'{needed}: not in the checkout (make stops unless an earlier step makes it)"
        )

    def _out_of_date(self, target: str, normal: list[str], remade: bool) -> bool:
        exists = self._exists(target)
        if exists is False:
            return True
        if exists is None:
            raise MakeUnread(f"whether the target {target} is a file of the checkout is not known")
        if remade:
            return True
        if not normal:
            return False  # a file with no prerequisites is up to date
        raise MakeUnread(
            f"{target} is a file of the checkout and not .PHONY: make runs its recipe only if a prerequisite is newer"
        )

    def _pattern(self, target: str) -> tuple[PatternRule, str] | None:
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
            raise MakeUnread(
                f"{target} would be made through a chain of implicit rules ({candidate.pattern} needs {' '.join(candidate.needed)})"
            )
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
        assert database is not None
        if self.rules is None:
            self.rules = _RuleIndex.of(database.patterns, builtin=not self.call.no_builtin_rules)
        out: list[tuple[int, int, _Candidate]] = []
        folder, _, base = name.rpartition("/")
        for order, pattern, prerequisites, terminal, rule in self.rules.matching(base, builtin=self._may_build(folder, base)):
            if pattern == "%" and not terminal:
                # A non-terminal match-anything rule never makes an intermediate file, nor a name of a known
                # suffix (the "dummy" rules `%.c:`, one per .SUFFIXES entry, stand in its way).
                if depth > 0 or any(name.endswith(s) for s in database.suffixes):
                    continue
            stem = _stem(pattern, base if "/" not in pattern else name)
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
        names = self.world.files.names(_join(self.call.folder, folder or "."))
        if names is None:
            return True
        return any(n.startswith((f"{base}.", f"{base},")) or n in (f"s.{base}", "RCS", "SCCS") for n in names)

    def _ought(self, name: str) -> bool | None:
        """Whether `name` exists or ought to (a target or a prerequisite of an explicit rule)."""
        database = self.database
        assert database is not None
        if name in database.targets or name in database.mentioned or name in database.phony:
            return True
        return self._exists(name)

    def _exists(self, name: str) -> bool | None:
        path = self._path(name)
        if path not in self.world.existing:
            self.world.existing[path] = self.world.files.exists(path)
        return self.world.existing[path]

    # --- recipes ----------------------------------------------------------------------------------------------

    def _recipe(
        self,
        target: str,
        recipe: list[RecipeLine],
        stem: str,
        normal: list[str],
        order_only: list[str],
        layers: tuple[dict[str, Variable], ...],
    ) -> None:
        database = self.database
        assert database is not None
        automatic = {
            "@": target,
            "<": normal[0] if normal else "",
            "^": " ".join(_unique(normal)),
            "+": " ".join(normal),
            "|": " ".join(_unique(order_only)),
            "*": stem,
            "?": opaque("${MAKE_NEWER_PREREQUISITES}") if normal else "",
            "%": "",
        }
        scope = Scope(globals=database.variables, layers=layers, automatic=automatic)
        expander = self._expander(scope)
        # job.c new_job: every line of a recipe is expanded before the first runs.
        expanded: list[tuple[RecipeLine, str, bool]] = []
        for line in recipe:
            expander.where = f"{line.file}:{line.line}"
            text = expander.expand(_collapse_in_references(line.text))
            recursive = "$(MAKE)" in line.text or "${MAKE}" in line.text
            expanded.append((line, text, recursive))
        env = self._exported(expander, scope)
        lines = [(line, text, recursive) for line, text, recursive in expanded if _prefixes(text)[0].strip()]
        if database.oneshell and not (len(lines) == 1 and lines[0][2]):  # one sub-make line is read as any other
            self._oneshell(target, expanded, env)
            return
        for line, text, recursive in expanded:
            for piece in _commands(text):
                body, plus = _prefixes(piece)
                if not body.strip():
                    continue
                self._emit(target, line, body, env, recursive or plus)

    def _oneshell(self, target: str, expanded: list[tuple[RecipeLine, str, bool]], env: dict[str, str | None]) -> None:
        if not expanded:
            return
        pieces: list[str] = []
        for n, (_, text, recursive) in enumerate(expanded):
            if recursive:
                raise MakeUnread(
                    f"$(MAKE) in a .ONESHELL recipe ({expanded[0][0].file}:{expanded[0][0].line}) is outside the modelled subset"
                )
            pieces.append(_prefixes(text)[0] if n == 0 else text.lstrip("@-+ \t"))
        if not "".join(pieces).strip():
            return  # job.c: an empty recipe is not run
        first = expanded[0][0]
        self._add(
            RecipeCommand(
                file=first.file,
                line=first.line,
                text="\n".join(pieces),
                folder=self.call.folder,
                env=_delta(env, self.top),
                target=target,
                level=self.level,
            )
        )

    def _emit(self, target: str, line: RecipeLine, body: str, env: dict[str, str | None], recursive: bool) -> None:
        command = RecipeCommand(
            file=line.file,
            line=line.line,
            text=plain(body),
            folder=self.call.folder,
            env=_delta(env, self.top),
            target=target,
            level=self.level,
            recursive=recursive,
        )
        sub = self._sub_make(body, env) if is_known(body) else None
        if sub is None:
            self._add(command)
            return
        call, folder_env = sub
        self._add(RecipeCommand(**{**command.__dict__, "inlined": True}))
        key = (call.folder, call.makefiles, call.goals, call.variables)
        if key in self.stack:
            raise MakeUnread(
                f"make calls itself again at {line.file}:{line.line} ({' '.join(call.goals) or 'the default goal'} in {call.folder})"
            )
        if self.level + 1 > MAX_MAKE_DEPTH:
            raise MakeUnread(f"sub-makes nested deeper than {MAX_MAKE_DEPTH} at {line.file}:{line.line}")
        _Make(
            world=self.world, call=call, environment=folder_env, top=self.top, level=self.level + 1, stack=(*self.stack, key)
        ).run()

    def _add(self, command: RecipeCommand) -> None:
        if len(self.world.commands) >= MAX_COMMANDS:
            raise MakeUnread(f"more than {MAX_COMMANDS} recipe commands")
        self.world.commands.append(command)

    def _sub_make(self, body: str, env: dict[str, str | None]) -> tuple[MakeCall, dict[str, str]] | None:
        """`[cd DIR &&]... make ARGS`: the sub-make a command line is, with the environment it gets; None for any
        other shell form (the shell reader reads it, and follows a `make` inside)."""
        try:
            lexer = shlex.shlex(body, posix=True, punctuation_chars=";&|()<>")
            lexer.whitespace_split = True
            lexer.commenters = ""
            words = list(lexer)
        except ValueError:
            return None
        if any(c in body for c in "$`*?[~"):
            return None
        folder = self.call.folder
        while len(words) >= 3 and words[0] == "cd" and words[2] in ("&&", ";"):
            folder = _join(folder, words[1])
            words = words[3:]
        if not words or (not is_make(words[0]) and words[0] != self.call.program):
            return None
        if any(w in (";", "&&", "||", "|", "&", "(", ")", "<", ">", ">>") or w.startswith((">", "<")) for w in words):
            return None
        environment = {k: v for k, v in env.items() if v is not None}
        call = make_call(words, folder, environment)
        return (call, environment) if call is not None and not call.unread else None

    def _exported(self, expander: Expander, scope: Scope) -> dict[str, str | None]:
        """The environment make gives a recipe: its own with the exported variables set and the unexported taken
        out, MAKELEVEL one up and MAKEFLAGS carrying the command-line variables."""
        database = self.database
        assert database is not None
        env: dict[str, str | None] = dict(self.environment)
        names = set(database.variables).union(*(set(layer) for layer in scope.layers))
        for name in sorted(names):
            found = scope.find(name)
            if found is None or not env_name(name):
                continue
            variable, index = found
            exported = variable.exported
            if exported is None and index < len(scope.layers) and name in database.variables:
                exported = database.variables[name].exported  # variable.c target_environment: the global's mark
            if exported is None:
                exported = variable.source in (Source.ENVIRONMENT, Source.COMMAND_LINE) or (
                    database.export_all and variable.source not in (Source.DEFAULT, Source.AUTOMATIC)
                )
            if name in ("MAKELEVEL", "MAKEFLAGS", "MAKE_VERSION", "SHELL"):
                continue
            if exported and variable.source is Source.ENVIRONMENT and name in self.environment:
                env[name] = self.environment[name]  # variable.c target_environment: goes back unchanged, unexpanded
            elif exported:
                env[name] = plain(expander.value(name))
            elif name in env:
                env[name] = None
        env["MAKELEVEL"] = str(self.level + 1)
        flags = makeflags(self.call.variables)
        env["MAKEFLAGS"] = flags if flags else None
        return env

    # --- helpers ----------------------------------------------------------------------------------------------

    def _expander(self, scope: Scope) -> Expander:
        return Expander(scope=scope, bounds=self.world.bounds, decisions=self.world.decisions, open_world=self.world.open_world)

    def _path(self, name: str) -> str:
        return _join(self.call.folder, name)


def _environment_value(name: str, value: str) -> str:
    """A variable of the environment make starts with: a value the step knows only at run time is opaque."""
    if any(mark in value for mark in _RUN_TIME_MARKS):
        return opaque(f"${{{name}}}")
    return value


def _delta(env: Mapping[str, str | None], top: Mapping[str, str]) -> tuple[tuple[str, str | None], ...]:
    """What `env` changes in the environment the top make was given."""
    out: list[tuple[str, str | None]] = []
    for name in sorted(set(env) | set(top)):
        value = env.get(name)
        if value is None:
            if name in top:
                out.append((name, None))  # taken out, or not handed down (a sub-make's environment lacks it)
        elif top.get(name) != value:
            out.append((name, value))
    return tuple(out)


def _last(rules: list[RuleRecord]) -> RuleRecord:
    """The rule whose recipe a target runs: the last one given ("warning: overriding recipe for target")."""
    return rules[-1]


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _stem(pattern: str, name: str) -> str | None:
    prefix, _, suffix = pattern.partition("%")
    if "/" not in pattern and "/" in name:
        return None
    if len(name) >= len(prefix) + len(suffix) and name.startswith(prefix) and name.endswith(suffix):
        stem = name[len(prefix) : len(name) - len(suffix)]
        return stem if stem else None
    return None


def _explicit_stem(target: str, suffixes: tuple[str, ...]) -> str:
    """`$*` of an explicit rule: the target less a known suffix, else empty (GNU make manual, "Automatic Variables")."""
    for suffix in suffixes:
        if target.endswith(suffix) and len(target) > len(suffix):
            return target[: -len(suffix)]
    return ""


def _collapse_in_references(text: str) -> str:
    """job.c new_job: backslash-newline inside a variable reference is taken out before expansion."""
    if "\\\n" not in text or "$" not in text:
        return text
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        if text.startswith("$(", i) or text.startswith("${", i):
            depth += 1
            out.append(text[i : i + 2])
            i += 2
            continue
        if text[i] in ")}" and depth:
            depth -= 1
        if depth and text.startswith("\\\n", i):
            out.append(" ")
            i += 2
            while i < len(text) and text[i] in " \t":
                i += 1
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _commands(text: str) -> list[str]:
    """The commands of an expanded recipe line: it splits at newlines not escaped by a backslash (a canned
    recipe from `define` gives several)."""
    out: list[str] = []
    start = 0
    for at, char in enumerate(text):
        if char == "\n" and (at == 0 or text[at - 1] != "\\"):
            out.append(text[start:at])
            start = at + 1
    out.append(text[start:])
    return out


def _prefixes(command: str) -> tuple[str, bool]:
    """The command without make's `@`, `-`, `+` in front, and whether `+` was among them."""
    at = 0
    plus = False
    while at < len(command) and command[at] in "@-+ \t":
        plus = plus or command[at] == "+"
        at += 1
    return command[at:], plus


def _join(folder: str, path: str) -> str:
    return path if path.startswith("/") else posixpath.normpath(posixpath.join(folder, path))


def _merge(worlds: list[tuple[dict[str, bool], _World]], questions: Mapping[str, tuple[str, str]], bounds: Bounds) -> MakeRun:
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
