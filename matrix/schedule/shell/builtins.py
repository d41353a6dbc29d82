"""What a builtin does to the walk's state (`shell.subset.BUILTINS` says which, and how they are read); pure.

Each function takes the command's words (expanded, wrappers off) and the `Scope` it changes. `effect` returns
True when the command is a builtin whose only effect is on the state (nothing to hand to a command reader).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from matrix.schedule.shell.globs import GlobOptions
from matrix.schedule.shell.scope import Scope
from matrix.schedule.shell.subset import SET_OPTIONS, SHOPT_OPTIONS, Effect, Outside, builtin

_NAME = re.compile(r"^[A-Za-z_]\w*$")
_WORKSPACE = re.compile(r"^(?:\$\{?GITHUB_WORKSPACE\}?|\$\{?CI_PROJECT_DIR\}?|\$\{?BUILDKITE_BUILD_CHECKOUT_PATH\}?)(?=/|$)")


def effect(argv: Sequence[str], scope: Scope) -> bool:
    """Apply the builtin `argv[0]` to `scope`; True when it is handled here and runs nothing of interest.
    Raises `Outside` for a construct outside the subset."""
    head = argv[0]
    found = builtin(head)
    if found is None:
        return False
    kind = found.effect
    if kind is Effect.FOLDER:
        _folder(argv, scope)
        return True
    if kind is Effect.RUN_TIME:
        for name in _run_time_names(argv):
            scope.unknown(name, f"{head} {name}")
        return head != "printf" or "-v" in argv[1:2]
    if kind is Effect.SET:
        _set(argv, scope)
        return True
    if kind is Effect.SHOPT:
        _shopt(argv, scope)
        return True
    if kind is Effect.STOP:
        status = argv[1] if len(argv) > 1 else "0"
        failing = head == "exit" and status.isdigit() and int(status) % 256 != 0
        # A failing exit ends the job's step too: every command is read as succeeding, so that path is not taken.
        scope.stopped = "fail" if failing else "exit" if head == "exit" else "return"
        return True
    if kind is Effect.OUTSIDE:
        raise Outside(f"`{' '.join(argv)[:60]}` ({head}: {found.reading})", later=True)
    if kind is Effect.TRAP:
        return _trap(argv)
    return False


def _folder(argv: Sequence[str], scope: Scope) -> None:
    head = argv[0]
    if head == "popd":
        scope.working_dir = scope.dirs.pop() if scope.dirs else scope.working_dir
        return
    targets = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    target = targets[0] if targets else "~"
    if head == "pushd":
        scope.dirs.append(scope.working_dir)
    scope.working_dir = moved(scope.working_dir, target)


def moved(working_dir: str, target: str) -> str:
    """The folder `cd target` leads to from `working_dir` (repository-relative; `$...`, `~`, `-` and absolute
    targets as written: not a folder of the checkout)."""
    target = _WORKSPACE.sub(".", target)  # the checkout: the repository root
    if target.startswith("/") or "$" in target or target in ("-", "~") or target.startswith("~"):
        return target
    return posixpath.normpath(posixpath.join(working_dir, target))


def _run_time_names(argv: Sequence[str]) -> list[str]:
    """The names `read`, `mapfile`, `printf -v`, `getopts`, `let` set."""
    head, rest = argv[0], list(argv[1:])
    if head == "printf":
        return [rest[1]] if len(rest) > 1 and rest[0] == "-v" else []
    if head == "let":
        return [m.group(1) for a in rest for m in [re.match(r"([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=", a)] if m]
    if head == "getopts":
        return ["OPTIND", "OPTARG", *(rest[1:2] if len(rest) > 1 else [])]
    valued = {"read": "adenpt", "mapfile": "dnOsuCc", "readarray": "dnOsuCc"}[head]
    names: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if word.startswith("-") and len(word) > 1:
            letters = word[1:]
            if head == "read" and "a" in letters:
                names.append(rest[i + 1] if i + 1 < len(rest) else "")
            if letters[-1] in valued:
                i += 1  # its value
        else:
            names.append(word)
        i += 1
    if head in ("mapfile", "readarray") and not [n for n in names if _NAME.match(n)]:
        names.append("MAPFILE")
    if head == "read" and not names:
        names.append("REPLY")
    return [n for n in names if _NAME.match(n)]


def _set(argv: Sequence[str], scope: Scope) -> None:
    """`set -e`, `set -o pipefail`, `set -- a b`, `shift`."""
    if argv[0] == "shift":
        scope.known.positional = None
        return
    words = list(argv[1:])
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("--", "-"):
            scope.known.positional = tuple(words[i + 1 :]) if all("$" not in w for w in words[i + 1 :]) else None
            return
        if word[:1] not in ("-", "+") or len(word) < 2:
            scope.known.positional = tuple(words[i:]) if all("$" not in w for w in words[i:]) else None
            return
        on = word[0] == "-"
        for letter in word[1:]:
            if letter == "o":
                i += 1
                _set_option(words[i] if i < len(words) else "", on, scope)
            else:
                _set_option(letter, on, scope)
        i += 1


def _set_option(name: str, on: bool, scope: Scope) -> None:
    if name not in SET_OPTIONS:
        shown = name if len(name) == 1 else "o " + name
        raise Outside(f"`set {'-' if on else '+'}{shown}`, a shell option this reader does not model", later=True)
    if name in ("a", "allexport"):
        scope.allexport = on
    elif name in ("f", "noglob"):
        scope.noglob = on


def _shopt(argv: Sequence[str], scope: Scope) -> None:
    flags = [a for a in argv[1:] if a.startswith("-")]
    names = [a for a in argv[1:] if not a.startswith("-")]
    if "-o" in flags:
        for name in names:
            _set_option(name, "-u" not in flags, scope)
        return
    if "-s" not in flags and "-u" not in flags:
        return  # prints or queries
    on = "-s" in flags
    for name in names:
        if name not in SHOPT_OPTIONS:
            raise Outside(f"`shopt {'-s' if on else '-u'} {name}`, a shell option this reader does not model", later=True)
        if name in ("globstar", "nullglob", "dotglob"):
            options = {"globstar": scope.glob.globstar, "nullglob": scope.glob.nullglob, "dotglob": scope.glob.dotglob}
            options[name] = on
            scope.glob = GlobOptions(**options)


def _trap(argv: Sequence[str]) -> bool:
    """`trap ACTION SIGNAL...`: an EXIT, ERR or signal action runs after (or instead of) the commands read and is not
    read as one of them; a DEBUG or RETURN action runs between commands, outside the subset."""
    signals = {a.upper().removeprefix("SIG") for a in argv[2:]}
    if signals & {"DEBUG", "RETURN"}:
        raise Outside(f"`{' '.join(argv)[:60]}` (a trap that runs between commands)", later=True)
    return True
