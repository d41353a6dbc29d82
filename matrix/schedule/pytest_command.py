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
from dataclasses import dataclass, replace

from matrix.schedule.model import CommandReader, Origin, PytestSelection, Selection, StepContext, UnreadableCommand

MAX_SCRIPT_DEPTH = 4
MAX_SCRIPT_LINES = 20_000
MAX_WORDS = 4_000

# pytest options that take a value as the next word (or after `=`); their values are not test paths.
_VALUED = frozenset(
    {
        "-c",
        "-p",
        "-o",
        "-n",
        "-W",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--junitxml",
        "--junit-xml",
        "--junit-prefix",
        "--timeout",
        "--maxfail",
        "--durations",
        "--durations-min",
        "--tb",
        "--log-level",
        "--log-file",
        "--import-mode",
        "--capture",
        "--override-ini",
        "--dist",
        "--cov",
        "--cov-report",
        "--cov-config",
        "--reruns",
        "--reruns-delay",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "-k",
        "-m",
        "--shard-id",
        "--num-shards",
        "--splits",
        "--group",
        "--backend",
        "--count",
        "--random-order-seed",
        "--report-log",
        "--json-report-file",
        "--html",
        "-r",
        "--color",
        "--cache-clear-dir",
    }
)
_SHORT_VALUED = frozenset({"-c", "-p", "-o", "-n", "-W", "-k", "-m", "-r"})
_PYTEST_PROGRAMS = frozenset({"pytest", "py.test"})
_PYTHONS = re.compile(r"^(python|python3(\.\d+)?)$")
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
            if "${{" in env[name]:
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
    if not words:
        return None
    program = posixpath.basename(words[0])
    if program in _PYTEST_PROGRAMS:
        return list(words[1:])
    if _PYTHONS.match(program):
        rest = list(words[1:])
        while rest and rest[0].startswith("-") and rest[0] != "-m":
            rest.pop(0)  # -u, -X dev, -O
        if len(rest) >= 2 and rest[0] == "-m" and rest[1] in ("pytest", "py.test"):
            return rest[2:]
    return None


def _relative(path: str, working_dir: str) -> str:
    joined = posixpath.normpath(posixpath.join(working_dir, path)) if not path.startswith("/") else path
    return joined.removeprefix("./")


@dataclass(frozen=True, kw_only=True)
class PytestCommandReader:
    """Reads `pytest` and `python -m pytest` command lines; `--shard-id`/`--num-shards` become the shard."""

    # Lines without one of these cannot hold a pytest command: the GitHub walker does not split them.
    keywords = ("pytest", "py.test")

    def selections(self, words: Sequence[str], context: StepContext) -> Iterable[Selection]:
        args = _pytest_arguments(strip_prefixes(words))
        if args is None:
            return ()
        late = next((a for a in args if _RUN_TIME in a), None)
        if late is not None:  # the GitHub walker's stand-in for a `${{ ... }}` it could not resolve
            raise UnreadableCommand(f"pytest argument {late[:80]} is known only at run time")
        return (parse_pytest_arguments([expand(a, context.env) for a in args], context.working_dir),)


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
            elif len(word) > 2 and word[:2] in _SHORT_VALUED:
                option, value = word[:2], word[2:]
            else:
                option, value = word, None
            if option in _VALUED:
                if value is None:
                    i += 1
                    value = words[i] if i < len(words) else ""
                if option == "--ignore":
                    ignore.append(_relative(value, working_dir))
                elif option == "--deselect":
                    deselect.append(_relative(value, working_dir))
                elif option == "-k":
                    keyword = value if keyword is None else f"({keyword}) and ({value})"
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
_FUNCTION = re.compile(r"^(function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?\s*$|^function\s+([A-Za-z_][\w-]*)\s*\{?\s*$")


def top_level(lines: Sequence[tuple[int, str]]) -> tuple[list[tuple[int, str]], list[tuple[str, int]]]:
    """Lines outside shell function bodies, and (name, line) of each function whose body mentions pytest."""
    out: list[tuple[int, str]] = []
    functions: list[tuple[str, int]] = []
    index = 0
    while index < len(lines):
        number, line = lines[index]
        match = _FUNCTION.match(line)
        if match is None:
            out.append((number, line))
            index += 1
            continue
        name = match.group(2) or match.group(3)
        depth = line.count("{") - line.count("}")
        mentions = False
        index += 1
        while index < len(lines) and (depth > 0 or (depth == 0 and lines[index][1] == "{")):
            body = lines[index][1]
            depth += body.count("{") - body.count("}")
            mentions = mentions or "pytest" in body
            index += 1
        if mentions:
            functions.append((name, number))
    return out, functions


@functools.lru_cache(maxsize=256)
def _script_lines(text: str) -> tuple[list[tuple[int, str]], list[tuple[str, int]]]:
    return top_level(logical_lines(text))


@functools.lru_cache(maxsize=256)
def _read_lines(text: str, wanted: tuple[str, ...] | None) -> tuple[tuple[tuple[int, str], ...], tuple[tuple[str, int], ...]]:
    """The lines of a script a reader may find something on (its text, a script call, an assignment), and its
    functions: the same for every step that runs the script, so worked out once per text."""
    lines, functions = _script_lines(text)
    kept = (
        (number, written)
        for number, written in lines
        if wanted is None or any(k in written for k in wanted) or _SETS.match(written)
    )
    return tuple(kept), tuple(functions)


def read_script(
    path: str,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    context: StepContext,
    depth: int = 0,
) -> ScriptResult:
    """Read the script at repo-relative `path` (text from `load`, None if absent) through the readers."""
    here = Origin(
        file=path, line=0, job=context.origin.job, via=(*context.origin.via, f"{context.origin.file}:{context.origin.line}")
    )
    if depth > MAX_SCRIPT_DEPTH:
        return ScriptResult(unread=((here, f"scripts nested deeper than {MAX_SCRIPT_DEPTH}"),))
    text = load(path)
    if text is None:
        return ScriptResult(unread=((here, "the script is not in the tree"),))
    selections: list[tuple[Selection, Origin]] = []
    unread: list[tuple[Origin, str]] = []
    env = dict(context.env)
    # Lines without a reader's text, a script call or an assignment hold nothing to read: left out.
    lines, functions = _read_lines(text, _keywords(readers))
    unread.extend(
        (replace(here, line=line), f"pytest inside the shell function {name}() is not followed; declare what it runs")
        for name, line in functions
    )
    for number, written in lines:
        origin = replace(here, line=number)
        line = own_folder(written, path)
        commands = commands_of(line)
        if commands is None:
            if "pytest" in line:
                unread.append((origin, "a pytest line that does not tokenise"))
            continue
        for words in commands:
            _note_assignment(words, env)
            step = StepContext(working_dir=context.working_dir, env=env, origin=origin)
            found, problem = _command(words, step, readers)
            selections.extend((s, origin) for s in found)
            if problem is not None:
                unread.append((origin, problem))
            for called, why in called_scripts(words, step):
                if called is None:
                    unread.append((origin, why))
                    continue
                inner = read_script(called, load, readers, step, depth + 1)
                selections.extend(inner.selections)
                unread.extend(inner.unread)
    return ScriptResult(selections=tuple(selections), unread=tuple(unread))


_SETS = re.compile(r"^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=|^:\s+\$\{")


def _keywords(readers: Sequence[CommandReader]) -> tuple[str, ...] | None:
    """The text a line must hold for a reader (or a script call) to find something; None: every line."""
    found = [getattr(r, "keywords", None) for r in readers]
    if any(k is None for k in found):
        return None
    return (*(k for ks in found if ks for k in ks), ".sh")


def _note_assignment(words: Sequence[str], env: dict[str, str]) -> None:
    # `export NAME=value` or `NAME=value` alone on a line; `: ${NAME:=value}` sets a default.
    body = list(words[1:]) if words and words[0] == "export" else list(words)
    if body and all(_ASSIGNMENT.match(w) for w in body):
        for word in body:
            name, _, value = word.partition("=")
            try:
                env[name] = expand(value, env)
            except UnexpandedVariable:
                env.pop(name, None)
    if len(words) == 2 and words[0] == ":":
        match = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*):=([^}$]*)\}", words[1])
        if match and match.group(1) not in env:
            env[match.group(1)] = match.group(2)


def _command(words: Sequence[str], context: StepContext, readers: Sequence[CommandReader]) -> tuple[list[Selection], str | None]:
    found: list[Selection] = []
    for reader in readers:
        try:
            found.extend(reader.selections(words, context))
        except UnreadableCommand as exc:
            return [], exc.reason
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
