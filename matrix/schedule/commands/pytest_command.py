"""pytest invocations read from CI command lines and from the shell scripts a step calls; pure.

`PytestCommandReader` is a `CommandReader`: it turns `pytest ...` / `python -m pytest ...` into a
`PytestSelection`. `read_script` reads a shell script's command lines (continuations joined, comments dropped,
`&&`/`;`/`||` lists split, environment prefixes removed) and hands each to the readers, following `bash x.sh`
into further scripts up to a fixed depth.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from matrix.schedule.commands.wrapped import pytest_call, runs_tests
from matrix.schedule.environment.installs import INSTALL_WORDS, install_step
from matrix.schedule.environment.model import InstallStep
from matrix.schedule.environment.plugins import Arity, option_arities
from matrix.schedule.model import (
    CommandReader,
    Origin,
    PytestSelection,
    Selection,
    StepContext,
    UnreadableCommand,
    UnreadJob,
    unread_entry,
)
from matrix.schedule.shell.commands import FOLLOWED

MAX_SCRIPT_DEPTH = 4
MAX_SCRIPT_LINES = 20_000
MAX_WORDS = 4_000

# pytest's own options that take a value as the next word (or after `=`); their values are not test paths. The
# options of plugins (pytest-xdist's `-n`, pytest-cov's `--cov` whose value is optional, specmatrix's own) come with
# their arity from the plugin table (`matrix.schedule.environment.plugins`).
_VALUED = frozenset(
    {
        "-c",
        "-p",
        "-o",
        "-W",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--junitxml",
        "--junit-xml",
        "--junit-prefix",
        "--maxfail",
        "--durations",
        "--durations-min",
        "--tb",
        "--log-level",
        "--log-file",
        "--import-mode",
        "--capture",
        "--override-ini",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "-k",
        "-m",
        "--backend",
        "--report-log",
        "-r",
        "--color",
        "--cache-clear-dir",
    }
)


def _arity(option: str) -> Arity:
    """How many words an option takes: pytest's own valued ones one, a plugin table's as the table says, else none."""
    if option in _VALUED:
        return Arity.ONE
    found = option_arities().get(option)
    return found[0] if found is not None else Arity.NONE


def _short_valued(word: str) -> bool:
    """`-k expr` written `-kexpr`, `-n4`: a short option that takes a value, with the value attached."""
    return len(word) > 2 and not word.startswith("--") and _arity(word[:2]) is not Arity.NONE


_RUN_TIME = "__UNRESOLVED_"
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# ${NAME:-default}, ${NAME-default}, ${NAME}, $NAME, $$NAME (Buildkite's escaped dollar)
_VARIABLE = re.compile(r"\$\$?(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


class UnexpandedVariable(UnreadableCommand):
    """A word holds a variable whose value neither the step's env nor a literal default gives, or whose value is
    a workflow expression known only at run time (`TEST_SCRIPT: ${{ matrix.script }}`)."""

    def __init__(self, name: str, value: str | None = None) -> None:
        known = f"is {value[:80]}, known only at run time" if value is not None else "has no value the step or a default gives"
        super().__init__(f"${name} {known}")
        self.name = name


def expand(word: str, env: Mapping[str, str]) -> str:
    """Shell parameter expansion of literal forms: the env's value, else the written default."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(4)
        if name in env and (env[name] or match.group(2) != ":-"):
            if "${{" in env[name] or "$(" in env[name] or "`" in env[name]:
                raise UnexpandedVariable(name, env[name])
            return env[name]
        if match.group(2) is not None:
            return match.group(3)
        raise UnexpandedVariable(name)

    return _VARIABLE.sub(one, word)


def strip_prefixes(words: Sequence[str]) -> list[str]:
    """Drop `NAME=value` assignments, `env`, `exec`, `time` and `timeout N` in front of a command."""
    out = list(words)
    while out:
        head = out[0]
        if _ASSIGNMENT.match(head) or head in ("env", "exec", "time", "command", "nohup"):
            out.pop(0)
        elif head == "timeout" and len(out) > 1:
            del out[:2]
        else:
            break
    return out


def _pytest_arguments(words: Sequence[str]) -> list[str] | None:
    """pytest's arguments when `words` run pytest (wrappers included, see `matrix.schedule.commands.wrapped`), else None."""
    found = pytest_call(words)
    return None if found is None else found.arguments


def _values(option: str, words: Sequence[str], at: int) -> int:
    """How many of the words after `words[at]` the option `option` takes as its values (argparse's rules: an
    optional value or a list of values stops at the next word that looks like an option)."""
    arity = _arity(option)
    if arity is Arity.NONE:
        return 0
    if arity is Arity.ONE:
        return 1
    count = 0
    while at + 1 + count < len(words) and not words[at + 1 + count].startswith("-"):
        count += 1
        if arity is Arity.OPTIONAL:
            break
    return count


def _relative(path: str, working_dir: str) -> str:
    joined = posixpath.normpath(posixpath.join(working_dir, path)) if not path.startswith("/") else path
    return joined.removeprefix("./")


@dataclass(frozen=True, kw_only=True)
class PytestCommandReader:
    """Reads `pytest` and `python -m pytest` command lines; `--shard-id`/`--num-shards` become the shard."""

    # Lines without one of these cannot hold a pytest command: the GitHub walker does not split them.
    keywords = ("pytest", "py.test")

    def selections(self, words: Sequence[str], context: StepContext) -> Iterable[Selection]:
        call = pytest_call(strip_prefixes(words))
        if call is None:
            return ()
        if call.unread:
            raise UnreadableCommand(call.unread)
        args = call.arguments
        if not runs_tests(args):
            return ()  # --collect-only, --fixtures, --version, -h: pytest lists or prints, no test runs
        if "$" in context.working_dir or "`" in context.working_dir:
            raise UnreadableCommand(f"pytest runs in {context.working_dir[:80]}, a folder known only at run time")
        if context.working_dir.startswith(("/", "~")) and any(not a.startswith("-") for a in args):
            # A folder outside the checkout (`cd /src/tests`, `docker exec -w /x`): where the repository is there is
            # not known, so the relative paths name nothing here.
            raise UnreadableCommand(f"pytest runs in {context.working_dir[:80]}, a folder outside the checkout")
        # The GitHub walker's stand-in for a `${{ ... }}` it could not resolve, or a command substitution the shell
        # reader keeps as written (`$(cat list)`): either may be any words at run time.
        late = next((a for a in args if _RUN_TIME in a or "$(" in a or "`" in a), None)
        if late is not None:
            raise _unread(f"pytest argument {late[:80]} is known only at run time", args, context.working_dir)
        try:
            expanded = [expand(a, context.env) for a in args]
        except UnexpandedVariable as exc:
            bounded = _unread(exc.reason, args, context.working_dir)
            exc.reason, exc.reach = bounded.reason, bounded.reach
            raise
        return (parse_pytest_arguments(expanded, context.working_dir),)


def _unread(reason: str, args: Sequence[str], working_dir: str) -> UnreadableCommand:
    """A pytest command with a run-time part, bounded by `reach` where its words bound it."""
    found = reach(args, working_dir)
    # The shell reader drops quotes: a bound assumes each run-time value stays one word (`-k "$FILTER"`).
    return UnreadableCommand(reason if found is None else f"{reason} (each run-time value taken as one word)", found)


def _late(word: str) -> bool:
    """Whether a word holds a part only the run knows (a variable, a command substitution, an expression)."""
    return "$" in word or "`" in word or _RUN_TIME in word


def reach(args: Sequence[str], working_dir: str) -> tuple[str, ...] | None:
    """The repository-relative paths a pytest command whose words are partly known only at run time can still run:
    its literal test paths, when every run-time part is an option's value (`-k "$FILTER"`) or a name under a
    literal folder (`tests/attention/$NAME`). None when a run-time word may name a path anywhere (`$(cat list)`,
    `$EXTRA_ARGS`), when `--pyargs` makes the paths module names, or when no path is written (pytest then runs its
    `testpaths` or the folder it starts in)."""
    words = list(args)[:MAX_WORDS]
    paths: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--pyargs" or (word.startswith("-") and _late(word.partition("=")[0])):
            return None
        if word.startswith("-"):
            name, eq, _ = word.partition("=")
            option = name if word.startswith("--") else word[:2]
            if not eq and not _short_valued(word):
                i += _values(option, words, i)  # whatever the run gives them, they are this option's, not paths
        elif _late(word):
            literal = re.split(r"\$|`|" + _RUN_TIME, word, maxsplit=1)[0]
            folder = literal.rpartition("/")[0]
            if not folder or _late(folder):
                return None  # the run-time part may be a whole path, or several
            paths.append(_relative(folder.split("::", 1)[0], working_dir))
        else:
            paths.append(_relative(word.split("::", 1)[0], working_dir))
        i += 1
    return tuple(dict.fromkeys(paths)) or None


def parse_pytest_arguments(args: Sequence[str], working_dir: str) -> PytestSelection:
    """A pytest argument list as a selection; paths, --ignore and --deselect made relative to the repository."""
    paths: list[str] = []
    ignore: list[str] = []
    deselect: list[str] = []
    keyword: str | None = None
    markexpr: str | None = None
    shard_id: int | None = None
    shards: int | None = None
    words = list(args)[:MAX_WORDS]
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, inline = word.partition("=")
        if word.startswith("-"):
            if word.startswith("--"):
                option, value = (name, inline) if eq else (word, None)
            elif _short_valued(word):
                option, value = word[:2], word[2:]
            else:
                option, value = word, None
            if value is None and (taken := _values(option, words, i)):
                value = words[i + 1] if i + 1 < len(words) else ""
                i += taken
            if value is not None:
                if option == "--ignore":
                    ignore.append(_relative(value, working_dir))
                elif option == "--deselect":
                    deselect.append(_relative(value, working_dir))
                elif option == "-k":
                    keyword = value  # pytest keeps the last -k (argparse's store action), as it does -m
                elif option == "-m":
                    markexpr = value
                elif option == "--shard-id" and value.isdigit():
                    shard_id = int(value)
                elif option == "--num-shards" and value.isdigit():
                    shards = int(value)
        else:
            paths.append(_relative(word, working_dir))
        i += 1
    return PytestSelection(
        paths=tuple(paths) or (_relative(".", working_dir),),
        working_dir=working_dir,
        ignore=tuple(ignore),
        deselect=tuple(deselect),
        keyword=keyword,
        markexpr=markexpr,
        shard=(shard_id, shards) if shard_id is not None and shards else None,
        argv=tuple(words),
    )


# --- shell scripts ------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ScriptResult:
    """What a script (and the scripts it calls) selects, and the command lines that could not be read."""

    selections: tuple[tuple[Selection, Origin], ...] = ()
    unread: tuple[tuple[Origin, str], ...] = ()
    # The shell conditions a selection's command runs under (`if [ "$GPU" = 1 ]` with GPU not known before the
    # run), for the selections that have any: each becomes an assumption of the entry.
    conditions: tuple[tuple[Selection, tuple[str, ...]], ...] = ()
    # Selections that run on another runner than the step's (a Modal function's GPU): (selection, labels,
    # the assumptions those labels rest on).
    runners: tuple[tuple[Selection, tuple[str, ...], tuple[str, ...]], ...] = ()
    # The unread items whose text bounds what they could run: ((origin, reason), repository-relative paths).
    bounds: tuple[tuple[tuple[Origin, str], tuple[str, ...]], ...] = ()
    # The install steps the followed texts run before each selection's command (a Modal function's image and its
    # `pip install` lines, a script's), for the selections that have any.
    installs: tuple[tuple[Selection, tuple[InstallStep, ...]], ...] = ()
    # The environment each selection's command runs with, as the script left it: (selection, where its command is,
    # env pairs, names it certainly lacks; "*" after `env -i`). One selection may run from several commands, each
    # with an environment of its own (`SUITE=a pytest t` then `SUITE=b pytest t`).
    environments: tuple[tuple[Selection, Origin, tuple[tuple[str, str], ...], tuple[str, ...]], ...] = ()

    def unread_jobs(
        self,
        shown: Callable[[str], str] = str,
        place: Callable[[tuple[str, ...]], tuple[str, ...] | None] = lambda reach: reach,
    ) -> list[UnreadJob]:
        """The unread items as schedule records, each with its bound (`shown` rewrites a reason for display, `place`
        names a bound's paths from the repository's root)."""
        bound = {key: place(reach) for key, reach in self.bounds}
        return [unread_entry(where, shown(reason), bound.get((where, reason))) for where, reason in self.unread]


_LIST_OPERATORS = frozenset({"&&", "||", ";", "|", "&"})
_SHELLS = frozenset({"bash", "sh", "source", "."})


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, command line) with backslash continuations joined and whole-line comments dropped."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines()[:MAX_SCRIPT_LINES], start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        out.append((start, " ".join(pending)))
        pending = []
    if pending:
        out.append((start, " ".join(pending)))
    return out


def commands_of(line: str) -> list[list[str]] | None:
    """The simple commands of one line, split at list operators; None when the line does not tokenise."""
    found = _split_line(line)
    return None if found is None else [list(c) for c in found]


@functools.lru_cache(maxsize=8192)
def _split_line(line: str) -> tuple[tuple[str, ...], ...] | None:
    # The same script is read once per job that calls it: its lines are split once.
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError:
        return None
    out: list[list[str]] = [[]]
    for word in words[:MAX_WORDS]:
        if word in _LIST_OPERATORS or set(word) <= set(";&|()"):
            out.append([])
        else:
            out[-1].append(word)
    return tuple(tuple(c) for c in out if c)


ScriptLoader = Callable[[str], str | None]
MAX_SCRIPTS = 64  # scripts one read follows, calls of the same script with the same inputs counted once
MAX_SCRIPTS_BYTES = 8 * 1024 * 1024  # the text of those scripts, in all


@dataclass(kw_only=True)
class ScriptBudget:
    """What one read of a step's scripts may still follow: a script count and a byte total (depth alone does not
    bound a script that calls another thirty times). Mutable by design: one per read, shared by its calls."""

    scripts: int = MAX_SCRIPTS
    size: int = MAX_SCRIPTS_BYTES
    done: dict[tuple[str, str, tuple[tuple[str, str], ...]], ScriptResult] = field(default_factory=dict)


def read_script(
    path: str,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    context: StepContext,
    *,
    depth: int = 0,
    budget: ScriptBudget | None = None,
    calling: tuple[str, ...] = (),
) -> ScriptResult:
    """Read the script at repo-relative `path` (text from `load`, None if absent) through the readers, with the
    shell parser (`matrix.schedule.shell.commands`): its branches, functions and arrays as bash runs them."""
    here = _script_origin(path, context)
    budget = ScriptBudget() if budget is None else budget
    if path in calling:
        return ScriptResult(unread=((here, f"runs itself again ({' -> '.join((*calling, path))}): not followed"),))
    if depth > MAX_SCRIPT_DEPTH:
        return ScriptResult(unread=((here, f"scripts nested deeper than {MAX_SCRIPT_DEPTH}"),))
    key = (path, context.working_dir, tuple(sorted(context.env.items())))
    if key in budget.done:
        return budget.done[key]
    why = f"over the budget of scripts one step may follow ({MAX_SCRIPTS} scripts, {MAX_SCRIPTS_BYTES} bytes)"
    if budget.scripts <= 0:
        return ScriptResult(unread=((here, why),))  # refused before the file is even opened
    if "$" in path or "`" in path:  # a folder or name set at run time (`cd "$(mktemp -d)" && bash x.sh`)
        return ScriptResult(unread=((here, "the script's path is known only at run time"),))
    text = load(path)
    if text is None:
        return ScriptResult(unread=((here, missing_reason(load, path)),))
    if budget.size < len(text):
        return ScriptResult(unread=((here, why),))
    budget.scripts -= 1
    budget.size -= len(text)
    result = read_text(own_folder(text, path), path, load, readers, context, depth=depth, budget=budget, calling=(*calling, path))
    budget.done[key] = result
    return result


def _script_origin(path: str, context: StepContext) -> Origin:
    via = (*context.origin.via, f"{context.origin.file}:{context.origin.line}")
    return Origin(file=path, line=0, job=context.origin.job, via=via)


def missing_reason(load: ScriptLoader, path: str) -> str:
    """Why `load` gave no text for `path`: the loader's own reason when it keeps one (`TreeLoader.refused`)."""
    owner = getattr(load, "__wrapped__", load)
    refused = getattr(owner, "refused", None)
    if isinstance(refused, Mapping) and path in refused:
        return f"the script {refused[path]}"
    return "the script is not in the tree"


def read_text(
    text: str,
    path: str,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    context: StepContext,
    *,
    depth: int,
    budget: ScriptBudget,
    calling: tuple[str, ...],
) -> ScriptResult:
    """The commands of a script's text (a file, a make recipe, a Modal function's commands) through the readers."""
    from matrix.schedule.follow import follow  # make and Modal readers, loaded when a script is read
    from matrix.schedule.shell.commands import commands, environment  # the shell parser, loaded when a script is read

    here = _script_origin(path, context)
    selections: list[tuple[Selection, Origin]] = []
    unread: list[tuple[Origin, str]] = []
    conditions: list[tuple[Selection, tuple[str, ...]]] = []
    runners: list[tuple[Selection, tuple[str, ...], tuple[str, ...]]] = []
    bounds: list[tuple[tuple[Origin, str], tuple[str, ...]]] = []
    installs: list[tuple[Selection, tuple[InstallStep, ...]]] = []
    early = install_lines(text, context.working_dir, context.env, load)
    environments: list[tuple[Selection, Origin, tuple[tuple[str, str], ...], tuple[str, ...]]] = []
    for command in commands(text, context.working_dir, _keywords(readers), context.env, load):
        origin = replace(here, file=command.file or path, line=command.line)
        if command.unread:
            unread.append((origin, command.unread))
            continue
        words = list(command.words)
        before = [step for file, line, step, _ in early if (file or path) == (command.file or path) and line < command.line]
        step = StepContext(working_dir=command.working_dir, env=environment(command, context.env), origin=origin)
        found, problem = _command(words, step, readers)
        selections.extend((s, origin) for s in found)
        installs.extend((s, tuple(before)) for s in found if before)
        lacks = (*command.unset, *(("*",) if command.cleared else ()))
        environments.extend((s, origin, tuple(sorted(step.env.items())), lacks) for s in found)
        conditions.extend((s, command.conditions) for s in found if command.conditions)
        if problem is not None:
            item = (origin, _conditional(problem.reason, command.conditions))
            unread.append(item)
            if problem.reach is not None:
                bounds.append((item, problem.reach))
        inner = follow(words, step, load, readers, budget=budget, depth=depth, calling=calling)
        selections.extend(inner.selections)
        own_installs = dict(inner.installs)
        installs.extend((s, (*before, *own_installs.get(s, ()))) for s, _ in inner.selections if before or s in own_installs)
        unread.extend(inner.unread)
        runners.extend(inner.runners)
        bounds.extend(inner.bounds)
        environments.extend(inner.environments)
        own = dict(inner.conditions)
        conditions.extend(
            (s, (*command.conditions, *own.get(s, ()))) for s, _ in inner.selections if command.conditions or s in own
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


def _conditional(reason: str, conditions: tuple[str, ...]) -> str:
    return reason if not conditions else f"{reason} ({'; '.join(conditions)})"


def _keywords(readers: Sequence[CommandReader]) -> tuple[str, ...] | None:
    """The text a line must hold for a reader (or a script call) to find something; None: every line."""
    found = [getattr(r, "keywords", None) for r in readers]
    if any(k is None for k in found):
        return None
    return (*(k for ks in found if ks for k in ks), *FOLLOWED)


def install_lines(
    text: str, working_dir: str, env: Mapping[str, str], load: ScriptLoader | None = None, *, containers: bool = False
) -> list[tuple[str, int, InstallStep, str]]:
    """(file, line, install, container) of each install command of a script's text, in order (`file` empty: the
    text itself; `container` the one a `docker exec` runs it in, "" on the runner; with `containers` False those
    are left out). A second, narrow read of the text: the readers' read skips lines without their keywords, and a
    construct the shell reader does not follow around an install is no reason to list anything unread."""
    from matrix.schedule.shell.commands import commands  # the shell parser, loaded when a script is read

    if not any(word in text for word in INSTALL_WORDS):
        return []
    from matrix.schedule.shell.commands import CONTAINER, exec_marker

    out: list[tuple[str, int, InstallStep, str]] = []
    for command in commands(text, working_dir, INSTALL_WORDS, env, load):
        step = install_step(strip_prefixes(list(command.words)), command.working_dir) if not command.unread else None
        marker = dict(command.env).get(CONTAINER)
        if step is not None and command.conditions and not step.unread:
            # An install on one branch of the script may not run: what it installs is not known to be there.
            step = replace(step, unread=command.conditions[0][:120])
        if step is not None and (containers or marker is None):
            out.append((command.file or "", command.line, step, exec_marker(marker)[0] if marker else ""))
    return out


def _command(
    words: Sequence[str], context: StepContext, readers: Sequence[CommandReader]
) -> tuple[list[Selection], UnreadableCommand | None]:
    found: list[Selection] = []
    for reader in readers:
        try:
            found.extend(reader.selections(words, context))
        except UnreadableCommand as exc:
            return [], exc
    return found, None


def called_scripts(words: Sequence[str], context: StepContext) -> list[tuple[str | None, str]]:
    """The shell scripts a command runs, repo-relative: `bash x.sh`, `./x.sh`, and the scripts handed to a wrapper
    script as arguments (`bash ci/docker.sh IMAGE ./scripts/task.sh`). A script path known only at run time
    comes back as (None, why), so the caller lists it instead of dropping it."""
    stripped = strip_prefixes(words)
    first = _called_script(stripped, context.working_dir)
    if first is None:
        raw = _script_word(stripped)
        if raw is None or "$" not in raw:
            return []
        try:
            value = expand(raw, context.env)
        except UnexpandedVariable as exc:
            return [(None, f"runs the script {raw}: {exc.reason}")]
        if "$" in value:
            return [(None, f"runs the script {raw}, known only at run time")]
        first = _relative(value, context.working_dir)
    out: list[tuple[str | None, str]] = [(first, "")]
    start = 2 if stripped[0] in _SHELLS else 1
    for word in stripped[start:]:
        if word.startswith("-") or ("/" not in word and not word.endswith(".sh")):
            continue
        try:
            value = expand(word, context.env)
        except UnexpandedVariable as exc:
            if "$" in word.split("/")[-1]:  # the script's own name is the run-time part
                out.append((None, f"{first} runs the script {word}: {exc.reason}"))
            continue
        if value.endswith(".sh") and "$" not in value:
            out.append((_relative(value, context.working_dir), ""))
    return out


def _script_word(words: Sequence[str]) -> str | None:
    if words and words[0] in _SHELLS and len(words) > 1 and words[1].endswith(".sh"):
        return words[1]
    if words and words[0].endswith(".sh") and ("/" in words[0]):
        return words[0]
    return None


def _called_script(words: Sequence[str], working_dir: str) -> str | None:
    target = _script_word(words)
    if target is None or "$" in target:
        return None
    return _relative(target, working_dir)


# `$(dirname "${BASH_SOURCE[0]}")`, `$(dirname "$0")` and `$(cd "$(dirname ...)"/.. && pwd)`: the script's own
# folder (or the folders above it).
_DIRNAME = r"""\$\(dirname\s+"?\$\{?(?:BASH_SOURCE(?:\[0\])?|0)\}?"?\)"""
_OWN_FOLDER = re.compile(rf"""\$\(\s*cd\s+"?{_DIRNAME}"?((?:/\.\.)*)/?"?\s*&&\s*pwd\s*\)|{_DIRNAME}""")


def own_folder(line: str, path: str) -> str:
    """`line` with the idioms naming the running script's folder replaced by that folder (repo-relative)."""
    if "$(" not in line:
        return line
    here = posixpath.dirname(path) or "."
    return _OWN_FOLDER.sub(lambda m: posixpath.normpath(here + (m.group(1) or "")), line)
