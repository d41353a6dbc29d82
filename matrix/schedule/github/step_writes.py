"""What a `run:` script writes to `$GITHUB_ENV` and `$GITHUB_OUTPUT`, read with the shell parser; pure.

GitHub reads both files after the step as lines `NAME=value`, or `NAME<<DELIMITER`, the value's lines, then the
delimiter ("Workflow commands for GitHub Actions": setting an environment variable, multiline strings, setting an
output parameter). Read here: `echo` (with `-n`, `-e`), `printf` with `%s`, `%%` and the escapes `\\n`, `\\t`, `\\\\`,
`cat` of a here-document, a `{ ...; }` or `( ... )` group of those, each redirected with `>>` or `>` to the file,
and `... | tee [-a] FILE`. A value with a part the run computes (`$X`, `$(cmd)`, a run-time expression) is known
only at run time; a write under a condition, a loop or a function may not happen, so its value is not known
either (never the value the job had before). A write of any other form (`python x.py >> $GITHUB_ENV`) sets
variables this reader cannot name: it is listed with why.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# A name GitHub accepts before `=` or `<<`.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_TARGET = re.compile(r"""^["']?\$\{?GITHUB_(ENV|OUTPUT)\}?["']?$""")
# Statements whose body may run zero times, or several: a write inside them is not known to happen once.
_MAYBE = frozenset(
    {"if_statement", "case_statement", "while_statement", "for_statement", "c_style_for_statement", "function_definition"}
)
_RUN_TIME = "\x00"  # a character of the written text the run computes
# Commands that only read or name a file given as an argument.
_READERS = frozenset({"echo", "cat", "head", "tail", "ls", "test", "[", "wc", "grep", "stat"})
_UNRESOLVED = re.compile(r"__UNRESOLVED_\d+__")


@dataclass(frozen=True, kw_only=True)
class Written:
    """What a script writes: (name, value) pairs in order for each file (value None: known only at run time, with
    the reason in `why`), and the writes not read, with why."""

    env: tuple[tuple[str, str | None], ...] = ()
    outputs: tuple[tuple[str, str | None], ...] = ()
    why: tuple[tuple[str, str], ...] = ()  # name -> why its value is not known
    unread: tuple[str, ...] = ()


NOTHING = Written()


@functools.lru_cache(maxsize=1024)
def step_writes(script: str) -> Written:
    """The `$GITHUB_ENV` and `$GITHUB_OUTPUT` writes of one script (see the module docstring)."""
    if "GITHUB_ENV" not in script and "GITHUB_OUTPUT" not in script:
        return NOTHING
    from matrix.schedule.shell.tree import parse

    files: dict[str, list[tuple[str, str | None]]] = {"ENV": [], "OUTPUT": []}
    why: dict[str, str] = {}
    unread: list[str] = []
    understood: set[int] = set()  # ids of the target nodes read
    for node, target, written in _writes(parse(script).root_node):
        understood.add(target.id)
        which = _TARGET.match(_text(target))
        assert which is not None
        maybe = _under_condition(node)
        body = written
        if written is not None and written.type == "list":
            # `test -n "$X" && echo "K=1" >> FILE`: bash redirects the last command only, which runs or not
            body, maybe = written.named_children[-1] if written.named_children else None, True
        text = _output(body)
        line = (body or node).start_point[0] + 1
        if text is None:
            unread.append(f"line {line} writes $GITHUB_{which.group(1)} with a command this reader does not read: {_short(body)}")
            continue
        for name, value in _parse_file(text):
            if name is None:
                unread.append(f"line {line} writes $GITHUB_{which.group(1)} under a name known only at run time")
            elif maybe or value is None:
                files[which.group(1)].append((name, None))
                why[name] = (
                    f"written to $GITHUB_{which.group(1)} under a condition or in a loop (line {line})"
                    if maybe
                    else f"written to $GITHUB_{which.group(1)} from a value the run computes (line {line})"
                )
            else:
                files[which.group(1)].append((name, value))
    for reference in _references(parse(script).root_node):
        if reference.id not in understood and not _is_read_of_value(reference):
            kind = "ENV" if "GITHUB_ENV" in _text(reference) else "OUTPUT"
            line = reference.start_point[0] + 1
            unread.append(f"line {line} uses $GITHUB_{kind} in a way this reader does not read: {_short(reference.parent)}")
    return Written(
        env=tuple(files["ENV"]),
        outputs=tuple(files["OUTPUT"]),
        why=tuple(why.items()),
        unread=tuple(dict.fromkeys(unread)),
    )


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _short(node: Any) -> str:
    return " ".join(_text(node).split())[:80]


def _walk(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        here = stack.pop()
        yield here
        stack.extend(reversed(here.children))


def _writes(root: Any) -> Iterator[tuple[Any, Any, Any]]:
    """(statement, the target node naming the file, the statement whose output goes there) for each write."""
    for node in _walk(root):
        if node.type == "redirected_statement" and node.children:
            # `cat >> FILE <<EOF`: the here-document is the statement's own (read with it)
            heredocs = [c for c in node.children[1:] if c.type == "heredoc_redirect"]
            body = node if heredocs else node.children[0]
            # `cat <<EOF >> FILE`: the parser puts the file redirect inside the here-document's node
            inner = [c for h in heredocs for c in h.children if c.type == "file_redirect"]
            for redirect in [*node.children[1:], *inner]:
                if redirect.type != "file_redirect" or redirect.child_count < 2:
                    continue
                operator, target = redirect.children[0], redirect.children[-1]
                if _text(operator) in (">>", ">", ">|") and _TARGET.match(_text(target)):
                    yield node, target, body
        elif node.type == "pipeline":
            commands = [c for c in node.children if c.type in ("command", "redirected_statement", "compound_statement")]
            last = commands[-1] if commands else None
            if last is not None and last.type == "command" and _command_name(last) == "tee" and len(commands) >= 2:
                targets = [a for a in _arguments(last) if _TARGET.match(_text(a))]
                for target in targets:
                    yield node, target, commands[-2] if len(commands) == 2 else None


def _references(root: Any) -> Iterator[Any]:
    """Every word that names `$GITHUB_ENV` or `$GITHUB_OUTPUT` (the file, not a variable that merely has the name)."""
    for node in _walk(root):
        if node.type in ("simple_expansion", "expansion") and _text(node).strip("${}") in ("GITHUB_ENV", "GITHUB_OUTPUT"):
            outer = node.parent if node.parent is not None and node.parent.type == "string" else node
            yield outer


def _is_read_of_value(node: Any) -> bool:
    """A mention that writes nothing: the file's name echoed to the log, tested, or given to `cat` to read."""
    parent = node.parent
    if parent is not None and parent.type in ("test_command", "binary_expression", "unary_expression"):
        return True
    if parent is not None and parent.type == "command" and _command_name(parent) in _READERS:
        return not any(c.type == "file_redirect" for c in (parent.parent.children if parent.parent else ()))
    return False


def _command_name(node: Any) -> str:
    for child in node.children:
        if child.type == "command_name":
            return _text(child)
    return ""


_NOT_ARGUMENTS = frozenset({"command_name", "variable_assignment", "file_redirect", "herestring_redirect"})


def _arguments(node: Any) -> list[Any]:
    return [c for c in node.children if c.type not in _NOT_ARGUMENTS]


def _under_condition(node: Any) -> bool:
    """Whether a statement runs only sometimes (or several times): inside an `if`, `case`, loop, function, or on
    either side of `&&`/`||`."""
    parent = node.parent
    while parent is not None:
        if parent.type in _MAYBE:
            return True
        if parent.type == "list":  # `a && b`, `a || b`
            return True
        parent = parent.parent
    return False


def _output(node: Any) -> str | None:
    """What a statement prints, with `_RUN_TIME` for each computed part; None when it is not a form read here."""
    if node is None:
        return None
    if node.type in ("compound_statement", "subshell"):
        parts = [_output(child) for child in node.children if child.type not in ("{", "}", "(", ")", ";", "\n", "comment")]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
    if node.type == "redirected_statement" and node.children:
        heredocs = [c for c in node.children[1:] if c.type == "heredoc_redirect"]
        body = node.children[0]
        if heredocs and body.type == "command" and _command_name(body) == "cat" and not _arguments(body):
            return _heredoc(heredocs[0])
        return None
    if node.type != "command":
        return None
    name = _command_name(node)
    words = [_word(a) for a in _arguments(node)]
    if name == "echo":
        return _echo(words)
    if name == "printf":
        return _printf(words)
    return None


def _word(node: Any) -> str:
    """A word's text with quotes removed and each expansion or substitution one `_RUN_TIME` character."""
    kind = node.type
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "word":
        return re.sub(r"\\(.)", r"\1", _text(node))
    if kind == "string":
        out = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type == "string_content":
                out.append(re.sub(r'\\([$`"\\])', r"\1", _text(child)))
            else:
                out.append(_RUN_TIME)
        return "".join(out)
    if kind == "concatenation":
        return "".join(_word(child) for child in node.children)
    if kind == "ansi_c_string":
        return _RUN_TIME
    return _RUN_TIME


def _echo(words: list[str]) -> str:
    newline, escapes = True, False
    while words and words[0] in ("-n", "-e", "-E", "-ne", "-en"):
        flag = words.pop(0)
        newline = newline and "n" not in flag
        escapes = "e" in flag if flag != "-E" else False
    text = " ".join(words)
    if escapes:
        text = _escapes(text)
    return text + ("\n" if newline else "")


def _printf(words: list[str]) -> str | None:
    """printf FORMAT ARGS with `%s` and `%%` (the format reused while arguments are left, as bash does)."""
    if not words or words[0].startswith("-"):
        return None
    form, left = words[0], list(words[1:])
    if re.search(r"%(?!s|%)", form):
        return None  # another conversion: not read
    conversions = len(re.findall(r"%s", form))
    out: list[str] = []
    while True:
        taken, left = left[:conversions], left[conversions:]
        values = iter(taken)
        out.append(_escapes(re.sub(r"%s|%%", lambda m: "%" if m.group(0) == "%%" else next(values, ""), form)))  # noqa: B023
        if not left or not conversions:
            return "".join(out)


def _escapes(text: str) -> str:
    return re.sub(r"\\([nt\\])", lambda m: {"n": "\n", "t": "\t", "\\": "\\"}[m.group(1)], text)


def _heredoc(redirect: Any) -> str | None:
    start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
    body = next((c for c in redirect.children if c.type == "heredoc_body"), None)
    if start is None:
        return None
    text = _text(body) if body is not None else ""
    if _text(start).startswith(("'", '"')):
        return text  # a quoted delimiter: the body as written
    return re.sub(r"\$\{?\w+\}?|\$\(|`", _RUN_TIME, text)


def _parse_file(text: str) -> Iterator[tuple[str | None, str | None]]:
    """GitHub's reading of the written text: `NAME=value` lines and `NAME<<DELIMITER` blocks; a name the run computes
    is None, a value with a part the run computes is None."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        head, eq, value = line.partition("=")
        block = line.partition("<<")
        if "<<" in line and (not eq or len(block[0]) < len(head)):
            name, delimiter = block[0], block[2]
            values: list[str] = []
            while i < len(lines) and lines[i] != delimiter:
                values.append(lines[i])
                i += 1
            i += 1
            joined = "\n".join(values)
            yield _named(name), None if _computed(joined) or _computed(delimiter) else joined
        elif eq:
            yield _named(head), None if _computed(value) else value
        else:
            yield None, None


def _named(name: str) -> str | None:
    return name if _NAME.fullmatch(name) else None


def _computed(text: str) -> bool:
    return _RUN_TIME in text or _UNRESOLVED.search(text) is not None or "${{" in text
