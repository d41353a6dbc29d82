"""The commands `tox -e ENV` and `nox -s SESSION` run, read from tox.ini and noxfile.py as a shell script; pure.

tox (tox.wiki, "tox.ini" configuration): `[testenv:NAME]` (else `[testenv]`) `commands =` lines, each one command;
`{posargs}` / `{posargs:default}` is what follows `--` on the tox command line, else the default; other `{...}`
substitutions and factor conditions (`py311: pytest`) are not read: such a line is left out and named. nox
(nox.thea.codes, "Configuration & API"): the function decorated with `@nox.session` (or `@session(name=...)`)
whose name is SESSION; each `session.run("prog", "arg", ...)` with literal arguments is one command,
`*session.posargs` what follows `--`. The noxfile is parsed with `ast`, never imported.
"""

from __future__ import annotations

import ast
import configparser
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

_POSARGS = re.compile(r"\{posargs(?::([^}]*))?\}")
_OF_INTEREST = ("pytest", "py.test", "make", ".sh")
_PYTHON_ENV = re.compile(r"^(py\d*|pypy\d*)(-|$)")


@dataclass(frozen=True, kw_only=True)
class SessionCall:
    """`tox -e a,b -- args` or `nox -s a b -- args`: the file to read, the environments named, the extra args."""

    tool: str  # "tox" or "nox"
    file: str
    names: tuple[str, ...]
    posargs: tuple[str, ...]


def session_call(words: Sequence[str]) -> SessionCall | None:
    """The tox or nox invocation `words` are (also `python -m tox`, `uvx nox`, `tox run`), else None."""
    rest = list(words)
    if rest[:2] == ["pipx", "run"]:
        rest = rest[2:]
    elif rest[:1] == ["uvx"]:
        rest = rest[1:]
    if len(rest) >= 3 and re.match(r"^python[\d.]*$", rest[0]) and rest[1] == "-m":
        rest = rest[2:]
    if not rest or rest[0].rsplit("/", 1)[-1] not in ("tox", "nox"):
        return None
    tool = rest[0].rsplit("/", 1)[-1]
    args = rest[1:]
    posargs: tuple[str, ...] = ()
    if "--" in args:
        posargs = tuple(args[args.index("--") + 1 :])
        args = args[: args.index("--")]
    if tool == "tox" and args and args[0] in ("run", "r", "run-parallel", "p"):
        args = args[1:]
    file = "tox.ini" if tool == "tox" else "noxfile.py"
    names: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-e", "-s", "--sessions", "--session", "-c", "-f", "--noxfile", "--envlist"):
            value = args[i + 1] if i + 1 < len(args) else ""
            if word in ("-c", "-f", "--noxfile"):
                file = value
            elif tool == "tox":
                names.extend(v for v in value.split(",") if v)
            else:
                names.append(value)
                j = i + 2
                while j < len(args) and not args[j].startswith("-"):  # `nox -s a b`
                    names.append(args[j])
                    j += 1
                i = j
                continue
            i += 2
            continue
        i += 1
    return SessionCall(tool=tool, file=file, names=tuple(names), posargs=posargs)


def tox_script(text: str, call: SessionCall) -> tuple[str, tuple[str, ...]]:
    """(a shell script of the commands the named tox environments run, each on its tox.ini line; what is not read)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return "", ("tox.ini does not parse",)
    envlist = tuple(parser.get("tox", "envlist", fallback="").replace(",", " ").split())
    names = call.names or envlist
    if not names:
        return "", ("tox without -e and without an envlist",)
    lines = text.splitlines()
    out: dict[int, str] = {}
    problems: list[str] = []
    for name in names:
        # tox 4 makes an environment no section names from [testenv] only when the envlist names it or it is a
        # Python factor (`py311`); any other name is an error there
        section = f"testenv:{name}" if parser.has_section(f"testenv:{name}") else "testenv"
        from_base = section == "testenv" and not (_PYTHON_ENV.match(name) or name in envlist)
        if not parser.has_section(section) or from_base:
            problems.append(f"tox environment {name} is not in tox.ini")
            continue
        commands = parser.get(section, "commands", fallback="")
        start = _line_of(lines, f"[{section}]")
        for written in commands.splitlines():
            command = written.strip()
            if not command or command.startswith("#"):
                continue
            number = _line_of(lines, command, start)
            filled = _POSARGS.sub(lambda m: shlex.join(call.posargs) if call.posargs else (m.group(1) or ""), command)
            if "{" in filled or re.match(r"^[\w.,!-]+:\s", filled):
                if any(k in filled for k in _OF_INTEREST):
                    problems.append(f"tox {name}: `{filled[:80]}` (a substitution or factor condition) is not read")
                continue
            out[number] = filled
    return _as_script(out), tuple(problems)


def nox_script(source: str, call: SessionCall) -> tuple[str, tuple[str, ...]]:
    """(a shell script of the `session.run` commands of the named nox sessions, each on its line; what is not read)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return "", ("the noxfile does not parse as Python",)
    sessions = {_session_name(f): f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and _session_name(f)}
    if not call.names:
        return "", ("nox without -s (every session, or the file's defaults) is not read",)
    out: dict[int, str] = {}
    problems: list[str] = []
    for name in call.names:
        function = sessions.get(name)
        if function is None:
            problems.append(f"nox session {name} is not in the noxfile")
            continue
        for node in ast.walk(function):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run"):
                continue
            words = _literal_words(node.args, call.posargs)
            if words is None:
                shown = ast.get_source_segment(source, node) or "session.run(...)"
                if any(k in shown for k in _OF_INTEREST):
                    problems.append(f"nox {name}: `{shown[:80]}` has arguments known only at run time")
                continue
            out[node.lineno] = shlex.join(words)
    return _as_script(out), tuple(problems)


def _session_name(function: ast.FunctionDef) -> str:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        named = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if named != "session":
            continue
        if isinstance(decorator, ast.Call):
            for keyword in decorator.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
                    return keyword.value.value
        return function.name
    return ""


def _literal_words(args: Sequence[ast.expr], posargs: tuple[str, ...]) -> list[str] | None:
    words: list[str] = []
    for arg in args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            words.append(arg.value)
        elif isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Attribute) and arg.value.attr == "posargs":
            words.extend(posargs)
        else:
            return None
    return words or None


def _line_of(lines: list[str], needle: str, after: int = 0) -> int:
    for number in range(after, len(lines)):
        if needle in lines[number]:
            return number + 1
    return after + 1


def _as_script(commands: dict[int, str]) -> str:
    width = max(commands, default=0)
    return "\n".join(commands.get(n, "") for n in range(1, width + 1)) + "\n"
