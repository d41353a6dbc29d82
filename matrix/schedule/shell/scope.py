"""What the shell walk knows at one point of a script (`Scope`), the commands it gives (`Command`), and how the
environment of a command follows from both; pure.

A command's environment is the one its script started with, changed by what the script did before it: names it
exported (with their values, or a run-time marker, `words.run_time`), names it took out (`unset`, `export -n`,
`env -u`), `env -i` (nothing before reaches the command), and its own prefix assignments. A name the script starts
with is already exported, so assigning it (`K=$(...)`) changes the environment too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from matrix.schedule.shell.globs import GlobOptions
from matrix.schedule.shell.words import Variables, bounded, run_time

# The pair `docker exec` (and `docker run`, `podman`, `docker compose`) leaves in a command's env: the runner's own
# environment stops there, and what reaches the command is the container's (`matrix.schedule.containers.docker`).
CONTAINER = "@container"
# Operations a wrapper leaves among a command's env pairs while the walk reads it (never in a `Command`).
UNSET_OP = "@unset"  # `env -u NAME`: (UNSET_OP, NAME)
CLEAR_OP = "@clear"  # `env -i`
EXEC_OP = "@exec"  # `exec CMD`: nothing after it runs


@dataclass(frozen=True, kw_only=True)
class Command:
    """One simple command: its words (prefix assignments removed), what the script changed of its environment
    (`env`: values it sets, the variables the script exported before it included; `unset`: names it certainly
    lacks; `cleared`: `env -i`), the directory it runs in, the conditions its branch rests on, its line in the
    script, and, for a statement the reader does not read, why (its words are then empty)."""

    words: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    working_dir: str
    conditions: tuple[str, ...] = ()
    line: int = 1
    unread: str = ""
    file: str = ""  # the file a sourced script's command is written in; "" for the script being read
    unset: tuple[str, ...] = ()
    cleared: bool = False


def environment(command: Command, base: Mapping[str, str]) -> dict[str, str]:
    """The environment `command` runs with when its script started with `base` (for a command run in a container,
    the pairs after the CONTAINER one are what its script gives inside: see `inside`)."""
    out = {} if command.cleared else {k: v for k, v in base.items() if k not in command.unset}
    out.update(command.env)
    return out


def inside(command: Command, container: Mapping[str, str]) -> dict[str, str]:
    """The environment a command run in a container sees: the container's (`container`), changed by what the
    command's own script did after entering it."""
    pairs = list(command.env)
    names = [k for k, _ in pairs]
    after = pairs[len(names) - names[::-1].index(CONTAINER) :] if CONTAINER in names else pairs
    out = {} if command.cleared else {k: v for k, v in container.items() if k not in command.unset}
    out.update(after)
    return out


def normal(
    pairs: Iterable[tuple[str, str]], removed: Iterable[str], ops: Iterable[tuple[str, str]]
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...], bool, bool]:
    """(env pairs, unset names, cleared, exec) of a command: the script's exported `pairs` and `removed` names,
    then the command's own prefix assignments and wrapper operations `ops`, in order; a CONTAINER pair starts
    over (what the runner's shell did does not reach the container)."""
    env: dict[str, str] = {}
    unset: dict[str, None] = {}
    cleared = False
    stops = False
    for key, value in pairs:
        if key == CONTAINER:
            env, unset, cleared = {CONTAINER: value}, {}, False
        else:
            env[key] = value
    unset.update(dict.fromkeys(n for n in removed if n not in env))
    for key, value in ops:
        if key == CONTAINER:
            env, unset, cleared = {CONTAINER: value}, {}, False
        elif key == UNSET_OP:
            env.pop(value, None)
            unset[value] = None
        elif key == CLEAR_OP:
            env = {k: v for k, v in env.items() if k == CONTAINER}
            unset, cleared = {}, True
        elif key == EXEC_OP:
            stops = True
        else:
            env[key] = value
            unset.pop(key, None)
    return tuple(env.items()), tuple(unset), cleared, stops


@dataclass(kw_only=True)
class Scope:
    """The state at one point of a walk: variables, the folder, the environment changes so far (`exported`:
    name -> value or run-time marker; `removed`: names taken out of the environment), the names the script
    started with in its environment (`inherited`: already exported), shell options that change what is read,
    the conditions the point rests on, pushd's stack, and whether the script (`stopped`) has ended here or a
    construct outside the subset (`outside`) makes what follows unread. Mutable: a walk owns one per branch."""

    known: Variables
    working_dir: str
    exported: dict[str, str] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    inherited: frozenset[str] = frozenset()
    marked: set[str] = field(default_factory=set)  # `export NAME` with no value yet: exported once assigned
    uncertain: set[str] = field(default_factory=set)  # exported on some paths only: an assignment may not reach the env
    allexport: bool = False
    noglob: bool = False
    glob: GlobOptions = field(default_factory=GlobOptions)
    conditions: tuple[str, ...] = ()
    carried: tuple[str, ...] = ()  # conditions from a point on (an `exit` on a branch), kept when a branch is taken
    dirs: list[str] = field(default_factory=list)
    stopped: str = ""  # "exit", "return", or "fail" (a failing exit: a path the reading excludes) once ended
    returns: list[Scope] = field(default_factory=list)  # the states at each `return` on a branch, for the caller
    outside: str = ""  # the construct outside the subset that this point follows, if any
    container: bool = False  # inside a script a container runs (`docker exec C bash -c '...'`)

    def branch(self, condition: str | None = None) -> Scope:
        extra = (condition,) if condition else ()
        return Scope(
            known=self.known.copy(),
            working_dir=self.working_dir,
            exported=dict(self.exported),
            removed=set(self.removed),
            inherited=self.inherited,
            marked=set(self.marked),
            uncertain=set(self.uncertain),
            allexport=self.allexport,
            noglob=self.noglob,
            glob=self.glob,
            conditions=(*self.conditions, *extra),
            carried=self.carried,
            dirs=list(self.dirs),
            stopped=self.stopped,
            returns=list(self.returns),
            outside=self.outside,
            container=self.container,
        )

    def take(self, other: Scope) -> None:
        """Become `other` (a branch that certainly ran), keeping this scope's conditions."""
        self.known, self.working_dir, self.exported, self.removed = other.known, other.working_dir, other.exported, other.removed
        self.marked, self.uncertain = other.marked, other.uncertain
        self.allexport, self.noglob, self.glob, self.dirs = other.allexport, other.noglob, other.glob, other.dirs
        self.stopped, self.outside, self.returns = other.stopped, other.outside, other.returns
        self.conditions = (*self.conditions, *(c for c in other.carried if c not in self.carried))
        self.carried = other.carried

    def exports(self, name: str) -> bool:
        """Whether assigning `name` changes the environment (it is exported, or `set -a` is on)."""
        return (
            self.allexport
            or name in self.exported
            or name in self.marked
            or (name in self.inherited and name not in self.removed)
        )

    def assign(self, name: str, value: str | None, written: str) -> None:
        """`name=value` (None: a run-time value, shown as `written`)."""
        value = bounded(value)
        exported = self.exports(name)
        self.known.set(name, value)
        if name in self.uncertain:
            self.exported[name] = run_time(f"{name}={written}, exported on some paths only")
            self.removed.discard(name)
        elif exported:
            self.exported[name] = value if value is not None else run_time(written)
            self.removed.discard(name)
            self.marked.discard(name)

    def export(self, name: str) -> None:
        """`export NAME`: its current value (known or not) goes to the environment; a name with no value is only
        marked, and reaches the environment once assigned."""
        self.uncertain.discard(name)
        if name in self.known.unset or (
            name not in self.known.scalars and name not in self.known.arrays and name not in self.inherited
        ):
            self.marked.add(name)
            return
        value = self.known.value(name)
        if name in self.inherited and name not in self.removed and name not in self.exported and value is not None:
            return  # already in the environment, unchanged
        self.exported[name] = value if value is not None else run_time(f"${name}")
        self.removed.discard(name)

    def unexport(self, name: str) -> None:
        """`export -n NAME`: the value stays in the shell, not in the environment."""
        self.uncertain.discard(name)
        self.exported.pop(name, None)
        self.marked.discard(name)
        self.removed.add(name)

    def unset(self, name: str) -> None:
        """`unset NAME`: gone from the shell, and from the environment when it may be there (exported, given by the
        step, or a name the script never set, which the runner may); a variable of the script's own was not."""
        in_env = (
            self.exports(name) or name in self.uncertain or (name not in self.known.scalars and name not in self.known.arrays)
        )
        self.uncertain.discard(name)
        self.known.remove(name)
        self.exported.pop(name, None)
        self.marked.discard(name)
        if in_env:
            self.removed.add(name)

    def unknown(self, name: str, why: str) -> None:
        """`read NAME` and the like: a run-time value."""
        self.assign(name, None, why)


def returned(scope: Scope, before: tuple[str, ...]) -> None:
    """After a function or a sourced file: it ended at its end or at a `return` on a branch, so what the caller sees
    is what those ends agree on; the conditions a `return` carried (not in `before`, those carried at the call)
    go, since it ended only the function."""
    ends = [*([] if scope.stopped in ("exit", "fail") else [_ended(scope)]), *scope.returns]
    if ends:
        merged = ends[0]
        for end in ends[1:]:
            end.stopped = ""
            join(merged, [end], False)
        scope.take(merged)
    scope.stopped = scope.stopped if scope.stopped in ("exit", "fail") and not ends else ""
    scope.returns = []
    dropped = {c for c in scope.carried if c not in before and "did not return" in c}
    scope.conditions = tuple(c for c in scope.conditions if c not in dropped)
    scope.carried = tuple(c for c in scope.carried if c not in dropped)


def join(scope: Scope, branches: list[Scope], certain: bool) -> None:
    """After a branch: what every path (each branch that went on, and `scope`, the way past them) agrees on is
    known, the rest is known only at run time."""
    if certain and len(branches) == 1:
        scope.take(branches[0])
        return
    live = [b for b in branches if not b.stopped]
    absorb_returns(scope, branches)
    paths = [*live, scope]
    names = {n for p in paths for n in (*p.exported, *p.removed, *p.marked, *p.inherited, *p.uncertain)}
    exporting = {n for n in names if len({p.exports(n) for p in paths}) > 1 or any(n in p.uncertain for p in paths)}
    for name in {n for p in paths for n in (*p.known.scalars, *p.known.unset)}:
        if len({_state(p.known, name) for p in paths}) > 1:
            scope.known.set(name, None)
    for name in {n for p in paths for n in p.known.arrays}:
        if len({repr(p.known.arrays.get(name, "\x01")) for p in paths}) > 1:
            scope.known.arrays[name] = None
    for name in {n for p in paths for n in p.exported}:
        if len({p.exported.get(name) for p in paths}) > 1:
            scope.exported[name] = run_time(f"{name} set on a branch")
    for name in {n for p in paths for n in p.removed}:
        if all(name in p.removed for p in paths):
            continue
        if name not in scope.inherited and not any(p.exports(name) for p in paths):
            continue  # a variable of the script itself, in the environment on no path
        scope.exported[name] = run_time(f"{name} unset on a branch")  # taken out on some paths only
    for branch in live:
        scope.allexport = scope.allexport or branch.allexport
        scope.marked |= branch.marked
        scope.outside = scope.outside or branch.outside
        for note in branch.carried:
            if note not in scope.carried:
                scope.conditions, scope.carried = (*scope.conditions, note), (*scope.carried, note)
    scope.uncertain |= exporting
    if any(b.working_dir != scope.working_dir for b in live):
        scope.working_dir = "$(a folder chosen on a branch)"
    ended = [b for b in branches if b.stopped in ("exit", "return")]
    if ended and not certain:
        how = ", ".join(sorted({b.stopped for b in ended}))
        note = f"runs only if the script did not {how} on a branch before (known only at run time)"
        if note not in scope.carried:
            scope.conditions, scope.carried = (*scope.conditions, note), (*scope.carried, note)


def _state(known: Variables, name: str) -> tuple[str, str | None]:
    """How a path holds a name: unset, set (to a value or a run-time one), or unknown to it."""
    if name in known.unset:
        return ("unset", None)
    if name in known.scalars:
        return ("set", known.scalars[name])
    return ("absent", None)


def absorb_returns(scope: Scope, branches: list[Scope]) -> None:
    """Keep the states in which a `return` ended a branch (and those its own branches kept), for the caller."""
    for branch in branches:
        found = [*branch.returns, *([_ended(branch)] if branch.stopped == "return" else [])]
        scope.returns.extend(r for r in found if not any(r is kept for kept in scope.returns))


def _ended(branch: Scope) -> Scope:
    ended = branch.branch()
    ended.returns, ended.stopped = [], ""
    return ended
