"""Every command README.md and docs/*.md show is one the command line accepts.

A doc names a command in a fenced block of any language, an indented block, or an inline code span. Each
`specmatrix ...` and `python -m matrix ...` found there is parsed by the real parser (`build_parser`), never run:
the command, every flag, and each value a flag restricts to choices, an int, a float or a date must be accepted,
and no spelling may be one the parser calls deprecated.
A usage synopsis parses too: `[optional]` parts are kept, the first of `a | b` alternatives is taken, `X...` is one
`X`, and a placeholder (`FILE`, `<path>`, `$VAR`) is given a value of the type its flag expects. `python ci/X.py`
and `python -m matrix.X` (an entry point of its own) name a script or module that exists, with flags its `--help`
lists. A command that cannot parse by design is in
NOT_A_COMMAND with the reason. docs/architecture.md ("Docs that are tested") describes the convention.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import itertools
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from matrix.cli.main import build_parser
from matrix.core.errors import UsageError

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent> *)(?P<mark>```+|~~~+)(?P<lang>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=mark)\s*$", re.M | re.S)
SPAN = re.compile(r"(?<!`)`(?!`)(?P<code>[^`]+?)`(?!`)")
# Where a command starts: the program, after an optional prompt or environment assignments.
PROGRAM = re.compile(
    r"(?:^|(?<=[\s(]))(?:(?:[A-Z_][A-Z0-9_]*=\S*\s+)*)"
    r"(?P<program>specmatrix(?=\s)(?!\s*=)|(?:\"?\$py\"?|python3?|\.nox/\w+/bin/python3?|\S*/bin/python3?)\s+(?:-P\s+)?-m\s+matrix(?:\.[\w.]*\w)?(?=\s|$)|python3?\s+ci/[\w./-]+\.py(?=\s|$))"
)
# Where a command can begin in a shell or YAML line: the line's start, after a prompt, a YAML key that runs a
# command, or a shell operator.
COMMAND_START = re.compile(r"(?:^\s*(?:\$\s+|-\s+)?(?:(?:run|entry|script|command):\s*)?|&&\s*|\|\|\s*|;\s*|\$\(\s*)")
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_-]*(?:\.[a-z]+)?|<[^<>]+>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)$")

# Code that starts like a command but is not one, each with why.
NOT_A_COMMAND = {
    "specmatrix 0.1.0": "the version the command prints, quoted as output",
    "specmatrix COMMAND": "stands for any command",
}


@dataclass(frozen=True)
class Command:
    where: str  # file:line
    text: str  # the command as the doc writes it, continuation lines joined
    whole: bool = True  # a command line to type, not prose naming a command or one of its flags


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _joined(lines: list[str], start: int) -> str:
    """The line at `start` with its backslash continuations."""
    out = lines[start]
    i = start
    while out.rstrip().endswith("\\") and i + 1 < len(lines):
        i += 1
        out = out.rstrip()[:-1] + " " + lines[i].strip()
    return out


def _commands_in_block(body: list[str], first_line: int, name: str, *, console: bool) -> list[Command]:
    found = []
    for i, line in enumerate(body):
        if console and not line.lstrip().startswith("$ "):
            continue  # a console block's other lines are output
        joined = _joined(body, i)
        for start in COMMAND_START.finditer(joined):
            match = PROGRAM.match(joined, start.end())
            if match:
                # pre-commit appends the staged files to a hook's `entry:`
                whole = not start.group().strip().startswith("entry:")
                text = joined[match.start("program") :]
                found.append(Command(where=f"{name}:{first_line + i}", text=text, whole=whole))
    return found


def commands_of(text: str, name: str) -> list[Command]:
    """Every command of one Markdown file, in fenced blocks, indented blocks and inline code spans."""
    found: list[Command] = []
    prose = list(text)
    for fence in FENCE.finditer(text):
        body = fence.group("body").splitlines()
        first = _line_of(text, fence.start("body"))
        found += _commands_in_block(body, first, name, console=fence.group("lang").strip() == "console")
        for k in range(fence.start(), fence.end()):
            if prose[k] != "\n":
                prose[k] = " "
    outside = "".join(prose)
    lines = outside.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("    ") and not line.lstrip().startswith(("-", "*", "|", "`")) and i and not lines[i - 1].strip():
            found += _commands_in_block(lines[i : i + 1], i + 1, name, console=False)
    for span in SPAN.finditer(outside):
        code = " ".join(span.group("code").split())
        match = PROGRAM.match(code, COMMAND_START.match(code).end())  # type: ignore[union-attr]
        if match:
            where = f"{name}:{_line_of(outside, span.start())}"
            found.append(Command(where=where, text=code[match.start("program") :], whole=False))
    return found


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def all_commands() -> list[Command]:
    out = []
    for path in doc_files():
        out += commands_of(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    return out


# --- from a doc's spelling to an argument vector ------------------------------------------------------------------


def synopsis_words(command: str) -> list[str]:
    """The words of one command: up to the first shell operator, comment or top-level `|`; in `[...]` and `(...)`
    groups the brackets dropped and only the first alternative kept; `X...` read as `X`."""
    out: list[str] = []
    depth, skip_to, quote = 0, -1, ""
    for ch in command:
        before = out[-1] if out else " "
        if quote:
            out.append(ch)
            quote = "" if ch == quote else quote
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
            skip_to = -1 if depth <= skip_to else skip_to
        elif skip_to >= 0:
            continue
        elif ch in "\"'":
            quote = ch
            out.append(ch)
        elif ch == "|" and depth:
            skip_to = depth - 1
        elif ch in "|;&" or (ch == "#" and before.isspace()) or (ch == ">" and (before.isspace() or before.isdigit())):
            break
        else:
            out.append(ch)
    try:
        split = shlex.split("".join(out).rstrip().removesuffix("\\"))
    except ValueError:  # an unclosed quote: the doc's line ends inside a string the next line closes
        split = "".join(out).split()
    words = [w.removesuffix("...") for w in split]
    return [w for w in words if w]


def _value_for(action: argparse.Action | None, word: str) -> str:
    """A value of the type `action` expects, for the placeholder `word`."""
    if action is None:
        return word
    if action.choices is not None:
        return str(next(iter(action.choices)))
    if action.type is int:
        return "1"
    if action.type is float:
        return "1.5"
    if action.type is dt.date.fromisoformat:
        return "2026-01-01"
    return word


def _actions(parser: argparse.ArgumentParser, command: str | None) -> dict[str, argparse.Action]:
    flags = {flag: a for a in parser._actions for flag in a.option_strings}
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if command and sub is not None and command in sub.choices:
        flags |= {flag: a for a in sub.choices[command]._actions for flag in a.option_strings}
    return flags


def _takes_value(action: argparse.Action | None) -> bool:
    return action is not None and action.nargs != 0


def argv_of(words: list[str], parser: argparse.ArgumentParser, commands: set[str], *, whole: bool) -> list[str]:
    """The words after the program, each placeholder given a value of its flag's type; in a mention (`whole`
    false) a flag named without its value gets one."""
    command = next((w for w in words if w in commands), None)
    flags = _actions(parser, command)
    argv: list[str] = []
    for word in words:
        flag = flags.get(argv[-1]) if argv else None
        if not whole and _takes_value(flag) and word.startswith("-"):
            argv.append(_value_for(flag, "VALUE"))
        if PLACEHOLDER.match(word) and word not in commands:
            argv.append(_value_for(flag if _takes_value(flag) else None, word))
        else:
            argv.append(word)
    last = flags.get(argv[-1]) if argv else None
    if not whole and _takes_value(last):
        argv.append(_value_for(last, "VALUE"))
    return argv


def _spelled_in_full(parser: argparse.ArgumentParser) -> None:
    """A doc spells each flag in full: a prefix argparse would accept today turns ambiguous with the next flag."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _spelled_in_full(sub)


def _nothing_required(parser: argparse.ArgumentParser) -> None:
    """A mention names a command or a flag of it; the arguments it leaves out are not missing."""
    for action in parser._actions:
        action.required = False
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _nothing_required(sub)
    for group in parser._mutually_exclusive_groups:
        group.required = False


def parse(words: list[str], *, whole: bool = True) -> str:
    """ "" when the real parser accepts `words` (`specmatrix ARGS...`), else its complaint. A mention (`whole`
    false) may leave out required arguments and the command itself."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    _spelled_in_full(parser)
    if not whole:
        _nothing_required(parser)
    argv = argv_of(words, parser, set(sub.choices), whole=whole)
    warnings = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(warnings):
        try:
            args = parser.parse_args(argv)
        except UsageError as error:
            return str(error)
        except SystemExit as leave:  # --help, --version
            return "" if leave.code in (0, None) else f"exit {leave.code}"
    if "is deprecated" in warnings.getvalue():  # the parser's own line naming the replacement
        return warnings.getvalue().strip()
    if whole and getattr(args, "command", None) is None:
        return "no command"
    return ""


def _program_and_args(command: Command) -> tuple[str, list[str]]:
    words = synopsis_words(command.text)
    if words[0] == "specmatrix":
        return "specmatrix", words[1:]
    if words[0].endswith(".py"):
        return words[0], words[1:]
    script = next((w for w in words if w.startswith("ci/") and w.endswith(".py")), None)
    if script is not None:
        return script, words[words.index(script) + 1 :]
    i = words.index("-m")
    if words[i + 1] != "matrix":  # an entry point of its own (`python -m matrix.gpu.cellrun`)
        return f"-m {words[i + 1]}", words[i + 2 :]
    return "specmatrix", words[i + 2 :]


def _named(command: Command) -> bool:
    return not any(command.text.startswith(prefix) for prefix in NOT_A_COMMAND)


COMMANDS = [c for c in all_commands() if _named(c)]
CLI = [c for c in COMMANDS if _program_and_args(c)[0] == "specmatrix"]
SCRIPTS = [c for c in COMMANDS if _program_and_args(c)[0] != "specmatrix"]


def test_the_docs_name_many_commands() -> None:
    assert len(CLI) >= 100, len(CLI)
    files = {c.where.split(":")[0] for c in CLI}
    assert {"README.md", "docs/adoption.md", "docs/ci.md", "docs/ledger.md", "docs/pytest-audit.md"} <= files


@pytest.mark.parametrize("command", CLI, ids=lambda c: c.where)
def test_every_command_in_the_docs_parses(command: Command) -> None:
    _, words = _program_and_args(command)
    complaint = parse(words, whole=command.whole)
    assert complaint == "", f"{command.where}: `{command.text}` does not parse: {complaint}"


RUNNER_FLAGS = ("--runner", "--only-runners", "--expect-runners", "--replace-runner")


def unknown_runners(words: list[str], known: set[str]) -> list[str]:
    """The runner profiles a command's runner flags name that no profile file defines (placeholders aside)."""
    out = []
    for flag, value in itertools.pairwise(words):
        if flag in RUNNER_FLAGS:
            out += [v for v in value.split(",") if v and not PLACEHOLDER.match(v) and v not in known]
    return out


@pytest.fixture(scope="module")
def known_runners() -> set[str]:
    """The built-in profiles, those of the docs' example project (`examples/own-matrix`), and `auto`."""
    from matrix.core.loader import load_runners

    with (REPO / "examples" / "own-matrix" / "runners.toml").open("rb") as stream:
        own = set(tomllib.load(stream)["runner"])
    return {*load_runners(), *own, "auto"}


def test_every_runner_a_doc_command_names_exists(known_runners: set[str]) -> None:
    unknown = [f"{c.where}: {r}" for c in CLI for r in unknown_runners(_program_and_args(c)[1], known_runners)]
    assert unknown == []
    planted = _program_and_args(Command(where="doc.md:1", text="specmatrix cells --runner 4-gpu-b300"))[1]
    assert unknown_runners(planted, known_runners) == ["4-gpu-b300"]
    assert unknown_runners(["guards", "p", "--only-runners", "4-gpu-b200,NAMES"], known_runners) == []


CELL_ID = re.compile(r"^(?:draft|target)-[\w-]+$")


def test_every_cell_a_doc_command_names_exists() -> None:
    from matrix.core.loader import load_matrix

    cells = {c.id for c in load_matrix().cells}
    named = [(c.where, w) for c in COMMANDS for w in _program_and_args(c)[1] if CELL_ID.match(w)]
    assert len(named) >= 3
    assert [f"{where}: {w}" for where, w in named if w not in cells] == []
    assert "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph" in cells
    assert "draft-fa3-topk1-page16-hd128-gqa4-bf16-graf" not in cells  # what a typo in a doc would name


def test_every_exemption_is_still_in_the_docs() -> None:
    texts = [c.text for c in all_commands()]
    for prefix in NOT_A_COMMAND:
        assert any(t.startswith(prefix) for t in texts), f"NOT_A_COMMAND lists {prefix!r}, which no doc shows"


def _script_flags(program: list[str]) -> set[str]:
    done = subprocess.run([*program, "--help"], check=False, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, f"{program}: --help exits {done.returncode}: {done.stderr[-300:]}"
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", done.stdout))


@pytest.fixture(scope="module")
def script_flags() -> dict[str, set[str]]:
    return {}


@pytest.mark.parametrize("command", SCRIPTS, ids=lambda c: c.where)
def test_every_ci_script_in_the_docs_exists_and_takes_its_flags(command: Command, script_flags: dict[str, set[str]]) -> None:
    script, args = _program_and_args(command)
    if script.startswith("-m "):
        # A module's own parser, with its subcommand when it has one (`forkserver serve`): --help of that part.
        module = script.removeprefix("-m ")
        path = REPO.joinpath(*module.split(".")).with_suffix(".py")
        subcommand = args[:1] if args and args[0].isidentifier() and args[0].islower() else []
        program = [sys.executable, "-m", module, *subcommand]
    else:
        path = REPO / script
        program = [sys.executable, str(path)]
    assert path.is_file(), f"{command.where}: `{command.text}` names {script}, which does not exist"
    key = " ".join(program[1:])
    if key not in script_flags:
        script_flags[key] = _script_flags(program)
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag.startswith("-") and flag not in ("-", "--"):
            assert flag in script_flags[key], f"{command.where}: {script} has no flag {flag} (see its --help)"


# --- the reader itself, shown red on planted defects -----------------------------------------------------------------

DOC = """# A doc

Run `specmatrix cells --runner 4-gpu-b200` or `specmatrix explian X`, and
`specmatrix shard --runner R
--shards N`.

```yaml
      - run: specmatrix guards test/registered --format github && echo done
        name: specmatrix guards
```

```console
$ specmatrix guards a --format sarif
specmatrix guards: output line, not a command
```

    $ specmatrix cells --no-such-flag

```sh
specmatrix [--runners FILE ...] ledger LEDGER... --root DIR [--runner R|auto] [--summary FILE]
specmatrix shard --runner R (--shards N | --budget MINUTES)
python ci/output_snapshot.py --help
```
"""


def test_commands_are_found_in_every_kind_of_code() -> None:
    found = commands_of(DOC, "doc.md")
    assert [(c.where, c.text.split()[1], c.whole) for c in found] == [
        ("doc.md:8", "guards", True),  # a YAML `run:`; its `name:` is not a command
        ("doc.md:13", "guards", True),  # a console block's command; the line under it is output
        ("doc.md:20", "[--runners", True),
        ("doc.md:21", "shard", True),
        ("doc.md:22", "ci/output_snapshot.py", True),
        ("doc.md:17", "cells", True),  # an indented block
        ("doc.md:3", "cells", False),  # inline code: a mention
        ("doc.md:3", "explian", False),
        ("doc.md:4", "shard", False),  # a span across a line break
    ]


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("specmatrix cells --runner 4-gpu-b200", ""),
        ("specmatrix explian X", "invalid choice: 'explian'"),
        ("specmatrix cells --no-such-flag", "unrecognized arguments: --no-such-flag"),
        ("specmatrix shard --runner R --shards N", ""),
        ("specmatrix shard --runner R --shards many", "invalid int value: 'many'"),
        ("specmatrix shard --runner R", "one of the arguments --shards --budget is required"),
        ("specmatrix guards a --format sarif", ""),
        ("specmatrix guards a --format FORMAT", ""),
        ("specmatrix guards a --format yaml", "invalid choice: 'yaml'"),
        ("specmatrix guards test/registered --format github && echo done", ""),
        ("specmatrix [--runners FILE ...] ledger LEDGER... --root DIR [--runner R|auto] [--summary FILE]", ""),
        ("specmatrix shard --runner R (--shards N | --budget MINUTES)", ""),
        ("specmatrix ledger --install-hook | --uninstall-hook", ""),
        ("specmatrix ledger --install-hook --uninstall-hook", "not allowed with argument"),
        ("specmatrix shard --runner R --shards 4 --format gha", "--format gha is deprecated; use --format github"),
        ("specmatrix guards PATH --json", "--json is deprecated; use --format json"),
    ],
)
def test_a_command_parses_or_says_why_not(text: str, complaint: str) -> None:
    got = parse(_program_and_args(Command(where="doc.md:1", text=text))[1])
    assert complaint in got if complaint else got == "", got


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("specmatrix guards", ""),
        ("python -m matrix", ""),
        ("specmatrix report --html", ""),
        ("specmatrix guards ... --write-baseline", ""),
        ("specmatrix shard --cached-configs FILE", ""),
        ("specmatrix gaurds", "invalid choice: 'gaurds'"),
        ("specmatrix report --htm", "unrecognized arguments: --htm"),
        ("specmatrix shard --shards many", "invalid int value: 'many'"),
    ],
)
def test_a_mention_may_leave_out_what_is_required_but_nothing_else(text: str, complaint: str) -> None:
    words = _program_and_args(Command(where="doc.md:1", text=text, whole=False))[1]
    got = parse(words, whole=False)
    assert complaint in got if complaint else got == "", got
    if text in ("specmatrix guards", "specmatrix report --html"):
        assert parse(words) != "", "a whole command must give what is required"
