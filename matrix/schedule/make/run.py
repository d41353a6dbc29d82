"""One `make` process within a world: its variables (defaults, environment, command line), its Makefiles read, its
goals built depth first (prerequisites before the target, each target once, the last recipe given for a target,
a pattern rule where it has none), each recipe expanded in its target's scope when the target runs, and the
sub-makes its recipes start followed as makes of their own; pure apart from the `MakeFiles` it is handed.

GNU make rules followed (GNU make manual, "How make Processes a Makefile", "Rules", "Recursive Use of make",
"Variables from the Environment"; 4.3's `remake.c`, `job.c` new_job/start_job_command, `variable.c`
target_environment): a target is remade when phony, absent, or older than a prerequisite that was remade; each
recipe line runs in a shell of its own unless `.ONESHELL`; every line of a recipe is expanded before the first
runs; a variable of the environment or the command line is exported, and goes back unexpanded.
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from matrix.schedule.make.database import Database, MakeFiles, RecipeLine, RuleRecord, environment_variables
from matrix.schedule.make.defaults import DEFAULT_VARIABLES
from matrix.schedule.make.expand import Expander
from matrix.schedule.make.implicit import ImplicitRules, stem_of
from matrix.schedule.make.outcome import MakeProblem, RecipeCommand
from matrix.schedule.make.read import Reader
from matrix.schedule.make.recipes import collapse_in_references, commands, prefixes, sub_make_words
from matrix.schedule.make.targets import MakeCall, make_call, makeflags
from matrix.schedule.make.variables import (
    Bounds,
    Flavor,
    MakeStops,
    MakeUnread,
    Scope,
    Source,
    Variable,
    env_name,
    is_known,
    opaque,
    plain,
)

MAX_MAKE_DEPTH = 4  # sub-makes inside sub-makes
MAX_TARGETS = 2_000  # targets visited, over a whole read
MAX_COMMANDS = 2_000  # recipe commands, over a whole read
MAX_PREREQUISITE_DEPTH = 200  # a prerequisite of a prerequisite of ...
_DEFAULT_NAMES = ("GNUmakefile", "makefile", "Makefile")
_RUN_TIME_MARKS = ("${{", "__UNRESOLVED_", "\x00", "$(", "`")


@dataclass(kw_only=True)
class World:
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

    world: World
    call: MakeCall
    environment: dict[str, str]
    top: Mapping[str, str]
    level: int
    stack: tuple[tuple[object, ...], ...]
    database: Database | None = None
    done: dict[str, bool] = field(default_factory=dict)
    implicit: ImplicitRules | None = None

    def run(self) -> None:
        if self.call.unread:
            raise MakeUnread(f"make {self.call.unread}: an option outside the modelled subset")
        database = self._read()
        self.database = database
        self.implicit = ImplicitRules(
            database=database,
            files=self.world.files,
            folder=self.call.folder,
            builtin=not self.call.no_builtin_rules,
            exists=self._exists,
        )
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
            if goal not in database.targets and goal not in database.phony and self._implicit().pattern(goal) is None:
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
                stem = stem_of(pattern.targets[0], name)
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
            found = self._implicit().pattern(target)
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
            # $^: each name once where it first stands, normal if any mention is (file.c: a name both normal and
            # order-only is normal); $+ keeps the normal mentions as given (checked against make)
            every = _unique([p for p, _ in deps if p in normal])
            self._recipe(target, recipe, stem=stem, normal=normal, every=every, order_only=order_only, layers=scope_layers)
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

    def _implicit(self) -> ImplicitRules:
        assert self.implicit is not None
        return self.implicit

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
        *,
        stem: str,
        normal: list[str],
        every: list[str],
        order_only: list[str],
        layers: tuple[dict[str, Variable], ...],
    ) -> None:
        database = self.database
        assert database is not None
        automatic = {
            "@": target,
            "<": normal[0] if normal else "",
            "^": " ".join(every),
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
            text = expander.expand(collapse_in_references(line.text))
            recursive = "$(MAKE)" in line.text or "${MAKE}" in line.text
            expanded.append((line, text, recursive))
        if not any(prefixes(piece)[0].strip() for _, text, _ in expanded for piece in commands(text)):
            return  # job.c: lines that expand to nothing run no command, and no environment is made for one
        env = self._exported(expander, scope)
        lines = [(line, text, recursive) for line, text, recursive in expanded if prefixes(text)[0].strip()]
        if database.oneshell and not (len(lines) == 1 and lines[0][2]):  # one sub-make line is read as any other
            self._oneshell(target, expanded, env)
            return
        for line, text, recursive in expanded:
            for piece in commands(text):
                body, plus = prefixes(piece)
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
            pieces.append(prefixes(text)[0] if n == 0 else text.lstrip("@-+ \t"))
        if not "".join(pieces).strip():
            return  # job.c: an empty recipe is not run
        # job.c (one shell, a POSIX shell): every line's leading @-+ and blanks go, also those of lines a variable
        # expanded to (`$(CANNED)` of a define), but not after a backslash-newline (checked against make)
        lines = "\n".join(pieces).split("\n")
        kept = [
            lines[0],
            *(line if before.endswith("\\") else line.lstrip("@-+ \t") for before, line in itertools.pairwise(lines)),
        ]
        pieces = ["\n".join(kept)]
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
            goals = " ".join(call.goals) or "the default goal"
            raise MakeUnread(f"make calls itself again at {line.file}:{line.line} ({goals} in {call.folder})")
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
        """The sub-make a recipe command is, with the environment it gets (`recipes.sub_make_words`)."""
        found = sub_make_words(body, self.call.folder, self.call.program)
        if found is None:
            return None
        environment = {k: v for k, v in env.items() if v is not None}
        call = make_call(found[1], found[0], environment)
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
        for name in database.environment - names - {"MAKELEVEL", "MAKEFLAGS", "MAKE_VERSION", "SHELL"}:
            env[name] = None  # variable.c target_environment: a variable `undefine` took away is in no recipe's environment
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


def _explicit_stem(target: str, suffixes: tuple[str, ...]) -> str:
    """`$*` of an explicit rule: the target less a known suffix, else empty (GNU make manual, "Automatic Variables")."""
    for suffix in suffixes:
        if target.endswith(suffix) and len(target) > len(suffix):
            return target[: -len(suffix)]
    return ""


def _join(folder: str, path: str) -> str:
    return path if path.startswith("/") else posixpath.normpath(posixpath.join(folder, path))
