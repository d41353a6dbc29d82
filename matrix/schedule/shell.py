"""The command lines of a `run:` script, as words: continuations joined, comments dropped, `&&`/`||`/`;`/`|` split,
environment prefixes (`IS_BLACKWELL=1 python3 ...`) taken off, `cd DIR` followed, and wrapped commands
(`bash -c "..."`, `sh -c`, `docker exec C bash -c "..."`, `timeout 60`, `env X=1`, `uv run`) unwrapped; pure.

This is not a shell: loops, functions and heredocs are read line by line, which finds the commands CI files write.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

MAX_SCRIPT = 256 * 1024
MAX_DEPTH = 4  # bash -c "sh -c '...'" nesting
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&"})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "(", "time", "exec", "sudo", "nohup"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


@dataclass(frozen=True, kw_only=True)
class Command:
    """One simple command: its words (prefix assignments removed), those assignments, and the directory it runs in."""

    words: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    working_dir: str


_CD = re.compile(r"(?:^|[\s;&|(])cd\s")


def commands(script: str, working_dir: str = ".", keywords: tuple[str, ...] | None = None) -> tuple[Command, ...]:
    """Every simple command of `script`, in order; with `keywords`, only lines holding one of them (and `cd`
    lines, which move the working directory) are split, which keeps long scripts cheap."""
    return _commands(script[:MAX_SCRIPT], working_dir, keywords)


@functools.lru_cache(maxsize=4096)
def _commands(script: str, working_dir: str, keywords: tuple[str, ...] | None) -> tuple[Command, ...]:
    out: list[Command] = []
    state = [working_dir]
    lines = _lines(script) if keywords is None else _wanted_lines(script, keywords)
    for line in lines:
        if keywords is not None and not _holds(line, keywords):
            continue
        out.extend(_line_commands(line, state, 0))
    return tuple(out)


def _holds(line: str, keywords: tuple[str, ...]) -> bool:
    """Whether a line may run a command of interest: it names a keyword, or it moves the working directory."""
    return any(k in line for k in keywords) or _CD.search(line) is not None


@functools.lru_cache(maxsize=64)
def _wanted(keywords: tuple[str, ...]) -> re.Pattern[str]:
    """A search that every line `_holds` keeps matches (each keyword, or `cd`): a first test, never the verdict."""
    return re.compile("|".join([*(re.escape(k) for k in keywords), "cd"]))


# Line breaks of str.splitlines besides "\n": a script holding one is read line by line.
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _wanted_lines(script: str, keywords: tuple[str, ...]) -> Iterator[str]:
    """The lines of `_lines(script)` that `_wanted` matches, in order, found by searching the whole script rather
    than each of its lines (a 200-line script has a handful)."""
    joined = _joined(script)
    if _OTHER_BREAKS.search(joined) or any(_OTHER_BREAKS.search(k) or "\n" in k for k in keywords):
        yield from _lines(script)
        return
    line_end = -1
    for match in _wanted(keywords).finditer(joined):
        if match.start() < line_end:
            continue  # the line is given already
        start = joined.rfind("\n", 0, match.start()) + 1
        line_end = joined.find("\n", match.start())
        if line_end < 0:
            line_end = len(joined)
        line = joined[start:line_end]
        if not line.lstrip().startswith("#"):
            yield line


def _joined(script: str) -> str:
    return re.sub(r"\\\r?\n", " ", script)


def _lines(script: str) -> Iterator[str]:
    for raw in _joined(script).splitlines():
        if raw.lstrip().startswith("#"):
            continue
        yield raw


# shlex's split (`_shlex_split`), for a line without backslashes: words end at its whitespace (only these four
# characters) and at a run of punctuation, which is a word of its own; quotes join what they hold to the word and
# are dropped (`''` is an empty word); a `#` outside quotes starts a comment, even inside a word; an unclosed quote
# makes the line unreadable. `tests/schedule/test_shell_split.py` compares the two on generated lines.
_TOKEN = re.compile(r"""(?P<ws>[ \t\r\n]+)|(?P<punct>[;&|()]+)|(?P<word>(?:[^ \t\r\n;&|()'"#]+|'[^']*'|"[^"]*")+)|(?P<stop>.)""")
_QUOTED = re.compile("'([^']*)'|\"([^\"]*)\"")


def _split(line: str) -> list[str] | None:
    """The words of one line as `shlex` (POSIX mode, `;&|()` punctuation) splits them; None when a quote is
    not closed."""
    if "\\" in line or "\n" in line:
        return _shlex_split(line)  # escapes, or a comment that ends before the text does: shlex's own rules
    words: list[str] = []
    for match in _TOKEN.finditer(line):
        kind = match.lastgroup
        if kind == "word":
            word = match.group()
            words.append(_QUOTED.sub(_unquote, word) if "'" in word or '"' in word else word)
        elif kind == "punct":
            words.append(match.group())
        elif kind == "stop":
            return None if match.group() in "'\"" else words  # an unclosed quote, or a comment to the line's end
    return words


def _unquote(match: re.Match[str]) -> str:
    return match.group(1) if match.group(1) is not None else match.group(2)


def _shlex_split(line: str) -> list[str] | None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return None  # an unbalanced quote: the command continues on a line this reader does not join


def _line_commands(line: str, state: list[str], depth: int) -> Iterator[Command]:
    words = _split(line)
    if not words:
        return
    current: list[str] = []
    for word in [*words, ";"]:
        if word in _OPERATORS or word in ("(", ")"):
            if current:
                yield from _simple(current, state, depth)
            current = []
        else:
            current.append(word)


def _simple(words: list[str], state: list[str], depth: int) -> Iterator[Command]:
    env: list[tuple[str, str]] = []
    while words and (words[0] in _KEYWORDS or _ASSIGN.match(words[0])):
        if _ASSIGN.match(words[0]):
            name, _, value = words[0].partition("=")
            env.append((name, value))
        words = words[1:]
    words = _unwrap(words, env)
    if not words:
        return
    if words[0] == "cd":
        target = words[1] if len(words) > 1 else "."
        if target.startswith("/") or "$" in target or target == "-":
            state[0] = target
        else:
            state[0] = posixpath.normpath(posixpath.join(state[0], target))
        return
    inner = _inline_script(words)
    if inner is not None:
        if depth < MAX_DEPTH:
            nested = [state[0]]
            for line in _lines(inner):
                for cmd in _line_commands(line, nested, depth + 1):
                    yield Command(words=cmd.words, env=(*env, *cmd.env), working_dir=cmd.working_dir)
        return
    yield Command(words=tuple(words), env=tuple(env), working_dir=state[0])


def _unwrap(words: list[str], env: list[tuple[str, str]]) -> list[str]:
    """Take off `env X=1`, `timeout [-k N] N`, `uv run [--opts]`, `time`, `sudo` in front of the command."""
    for _ in range(8):
        if not words:
            return words
        head = words[0]
        if head == "env":
            words = words[1:]
            while words and (_ASSIGN.match(words[0]) or words[0].startswith("-")):
                if _ASSIGN.match(words[0]):
                    name, _, value = words[0].partition("=")
                    env.append((name, value))
                words = words[1:]
        elif head == "timeout":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-k", "-s", "--kill-after", "--signal") else words[1:]
            words = words[1:]  # the duration
        elif head == "uv" and len(words) > 1 and words[1] == "run":
            words = words[2:]
            while words and words[0].startswith("-"):
                words = words[1:]
        elif head in _KEYWORDS:
            words = words[1:]
        else:
            return words
    return words


def _inline_script(words: list[str]) -> str | None:
    """The script of `bash -c "..."` (also after `docker exec [opts] CONTAINER`), else None."""
    for i, word in enumerate(words):
        if posixpath.basename(word) in _SHELLS:
            rest = words[i + 1 :]
            for j, flag in enumerate(rest):
                if flag == "-c" or (flag.startswith("-") and not flag.startswith("--") and "c" in flag[1:]):
                    return rest[j + 1] if j + 1 < len(rest) else None
                if not flag.startswith("-"):
                    break
            return None
    return None


def split_words(text: str) -> tuple[str, ...]:
    """shlex words of one command line (a malformed one gives none)."""
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return ()
