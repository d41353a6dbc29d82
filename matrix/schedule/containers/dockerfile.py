"""The environment a Dockerfile's stage gives a container, as BuildKit computes it; pure.

Read (`containers.subset.INSTRUCTIONS`): `FROM image [AS name]` (an earlier stage's ENV inherited; the ARGs declared
before the first FROM usable in FROM lines), `ARG NAME[=default]` (scoped to its stage; `--build-arg` overrides; an
ARG declared before the first FROM reaches a stage only when the stage declares it again), `ENV` with Dockerfile
environment replacement (`$N`, `${N}`, `${N:-w}`, `${N-w}`, `${N:+w}`, `${N+w}`; an unset name is empty; every name
of one ENV is replaced from the state before it), `ENTRYPOINT` (noted). A value with a part known only at run time
(a `--build-arg` from the runner, BuildKit's platform ARGs, another replacement form) is a run-time marker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from matrix.schedule.containers.subset import INSTRUCTIONS
from matrix.schedule.shell.words import run_time

MAX_STAGES = 32
# ARGs BuildKit sets itself (Dockerfile reference, "Automatic platform ARGs in the global scope"): run-time here.
_AUTOMATIC = frozenset(
    {"TARGETPLATFORM", "TARGETOS", "TARGETARCH", "TARGETVARIANT", "BUILDPLATFORM", "BUILDOS", "BUILDARCH", "BUILDVARIANT"}
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# A value: known text, or None when a part is known only at run time.
Value = str | None
_UNSET = "\x00unset"  # an ARG declared with no value and given none: replaced by nothing


@dataclass(kw_only=True)
class _Stage:
    name: str
    base: str  # the external image the stage chain starts from, or "" when unknown
    env: dict[str, Value] = field(default_factory=dict)
    args: dict[str, Value] = field(default_factory=dict)
    entrypoint: bool = False
    unread: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class StageEnv:
    """What a stage gives a container: its ENV (run-time values as markers), the external image its chain starts
    from (None when the stage is not in the file), whether it sets an ENTRYPOINT, and what is not read."""

    env: Mapping[str, str]
    base: str | None
    entrypoint: bool = False
    unread: tuple[str, ...] = ()


def stage_env(text: str, target: str | None = None, build_args: Mapping[str, Value] | None = None) -> StageEnv:
    """The environment of the `target` stage (else the last) of a Dockerfile built with `build_args`."""
    given = dict(build_args or {})
    stages: list[_Stage] = []
    globals_: dict[str, Value] = {}
    for instruction, argument in instructions(text):
        if instruction == "FROM":
            if len(stages) >= MAX_STAGES:
                break
            stages.append(_from(argument, stages, globals_))
        elif instruction == "ARG":
            scope = stages[-1].args if stages else globals_
            scope_pair = (stages[-1].env, stages[-1].args) if stages else ({}, globals_)
            for name, default in _arg_pairs(argument, scope_pair, open_base=bool(stages) and _open(stages[-1])):
                if name in given:
                    scope[name] = given[name]
                elif name in _AUTOMATIC:
                    scope[name] = None
                elif default is not _NO_DEFAULT:
                    scope[name] = default  # type: ignore[assignment]
                elif stages and name in globals_:
                    scope[name] = globals_[name]
                else:
                    scope[name] = _UNSET  # declared without a value: unset (not the base image's)
        elif instruction == "ENV" and stages:
            stage = stages[-1]
            stage.env.update(_env_pairs(argument, stage.env, stage.args, open_base=_open(stage)))
        elif instruction == "ENTRYPOINT" and stages:
            stages[-1].entrypoint = True
        elif instruction == "ONBUILD" and stages and argument.split(None, 1)[0].upper() in ("ENV", "ARG"):
            stages[-1].unread.append(f"ONBUILD {argument[:60]}")  # runs in a stage built from this one
        elif instruction not in INSTRUCTIONS and stages:
            stages[-1].unread.append(f"{instruction} {argument[:60]} (an instruction this reader does not know)")
    chosen = next((s for s in stages if s.name == target.lower()), None) if target else (stages[-1] if stages else None)
    if chosen is None:
        return StageEnv(env={}, base=None)
    env = {k: (v if v is not None else run_time(f"ENV {k} in a Dockerfile")) for k, v in chosen.env.items()}
    return StageEnv(env=env, base=chosen.base, entrypoint=chosen.entrypoint, unread=tuple(chosen.unread))


def _open(stage: _Stage) -> bool:
    """Whether the stage starts from an image that may set variables of its own (anything but `scratch`)."""
    return stage.base.partition("@")[0].partition(":")[0] != "scratch"


def _from(argument: str, stages: list[_Stage], globals_: Mapping[str, Value]) -> _Stage:
    words = [w for w in argument.split() if not w.startswith("--")]
    image = _replace(words[0], {}, globals_) if words else None
    alias = words[2].lower() if len(words) > 2 and words[1].lower() == "as" else ""
    if image is None:
        return _Stage(name=alias, base="", unread=[f"FROM {words[0] if words else ''} (a base known only at run time)"])
    parent = next((s for s in reversed(stages) if s.name and s.name == image.lower()), None)
    if parent is None:
        return _Stage(name=alias, base=image)
    return _Stage(name=alias, base=parent.base, env=dict(parent.env), entrypoint=parent.entrypoint, unread=list(parent.unread))


def instructions(text: str) -> Iterable[tuple[str, str]]:
    """(INSTRUCTION, argument) per logical line: comments dropped, `\\` continuations joined, here-documents
    (`RUN <<EOF` ... `EOF`) skipped. A parser directive that changes the escape character stops the read (its lines
    are not these)."""
    pending = ""
    closing: list[str] = []  # the words that end the here-documents still open
    for raw in text.splitlines():
        line = raw.strip()
        if closing:
            if line == closing[0]:
                closing.pop(0)
            continue
        if re.match(r"#\s*escape\s*=\s*`", line):
            return
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole, pending = pending + line, ""
        head, _, argument = whole.partition(" ")
        closing = _HEREDOC.findall(argument)
        yield head.upper(), argument.strip()


_HEREDOC = re.compile(r"<<-?[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")


_NO_DEFAULT = object()


def _arg_pairs(
    argument: str, scope: tuple[Mapping[str, Value], Mapping[str, Value]], *, open_base: bool
) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for word, value in _words(argument, *scope, open_base=open_base):
        name, eq, _ = word.partition("=")
        if not _NAME.fullmatch(name):
            continue
        if not eq:
            out.append((name, _NO_DEFAULT))
        else:
            out.append((name, None if value is None else value.partition("=")[2]))
    return out


# A value longer than this is not kept (a run-time marker): `ENV A=${A}${A}` sixty times would double to exabytes.
MAX_VALUE = 64 * 1024


def _env_pairs(argument: str, env: Mapping[str, Value], args: Mapping[str, Value], *, open_base: bool) -> dict[str, Value]:
    """`ENV A=1 B="two words"` or the older `ENV A value with spaces`, replaced from the state before it."""
    found = [(w, None if v is None or len(v) > MAX_VALUE else v) for w, v in _words(argument, env, args, open_base=open_base)]
    if not found:
        return {}
    first_word = found[0][0]
    if "=" not in first_word:
        name = first_word
        rest = [v for _, v in found[1:]]
        return {name: None if any(v is None for v in rest) else " ".join(v for v in rest if v is not None)}
    out: dict[str, Value] = {}
    for word, value in found:
        name, eq, _ = word.partition("=")
        if eq and _NAME.fullmatch(name):
            out[name] = None if value is None else value.partition("=")[2]
    return out


def _words(argument: str, env: Mapping[str, Value], args: Mapping[str, Value], *, open_base: bool) -> list[tuple[str, Value]]:
    """(the word as written, its value after quote removal and replacement, None when run-time) of each word."""
    out: list[tuple[str, Value]] = []
    i = 0
    while i < len(argument):
        while i < len(argument) and argument[i].isspace():
            i += 1
        if i >= len(argument):
            break
        start = i
        value: list[str] = []
        late = False
        quote = ""
        while i < len(argument) and (quote or not argument[i].isspace()):
            char = argument[i]
            if quote == "'" and char != "'":
                value.append(char)
                i += 1
            elif char in "'\"" and (not quote or quote == char):
                quote = "" if quote else char
                i += 1
            elif char == "\\" and i + 1 < len(argument):
                value.append(argument[i + 1])
                i += 2
            elif char == "$":
                replaced, i = _dollar(argument, i, env, args, open_base=open_base)
                if replaced is None:
                    late = True
                else:
                    value.append(replaced)
            else:
                value.append(char)
                i += 1
        out.append((argument[start:i], None if late else "".join(value)))
    return out


_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])([^}]*))?\}")
_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def _dollar(text: str, at: int, env: Mapping[str, Value], args: Mapping[str, Value], *, open_base: bool) -> tuple[Value, int]:
    """The replacement of the `$...` at `at` and where it ends (None: known only at run time)."""
    braced = _BRACED.match(text, at)
    if braced:
        name, operator, word = braced.groups()
        return _lookup(name, operator, word, (env, args), open_base=open_base), braced.end()
    bare = _BARE.match(text, at)
    if bare:
        return _lookup(bare.group(1), None, None, (env, args), open_base=open_base), bare.end()
    if text.startswith("${", at):  # another replacement form (`${N#p}`, `${N/a/b}`): not read
        end = text.find("}", at)
        return None, (end + 1 if end >= 0 else len(text))
    return "$", at + 1


def _lookup(
    name: str, operator: str | None, word: str | None, scope: tuple[Mapping[str, Value], Mapping[str, Value]], *, open_base: bool
) -> Value:
    """A name's replacement; one the Dockerfile does not declare is the base image's (`PATH`): known only at run
    time, but under `FROM scratch` (nothing set)."""
    env, args = scope
    if name in env:
        present, value = True, env[name]
    elif name in args and args[name] == _UNSET:
        present, value = False, ""
    elif name in args:
        present, value = True, args[name]
    elif open_base:
        return None
    else:
        present, value = False, ""
    if operator is None:
        return value
    if present and value is None:
        return None
    word_value = _replace(word or "", env, args, open_base=open_base)
    empty = not present or (operator.startswith(":") and value == "")
    if operator.endswith("+"):
        return "" if empty else word_value
    return word_value if empty else value


def _replace(text: str, env: Mapping[str, Value], args: Mapping[str, Value], *, open_base: bool = False) -> Value:
    words = _words(text, env, args, open_base=open_base)
    if any(v is None for _, v in words):
        return None
    return " ".join(v for _, v in words if v is not None)


def official(image: str) -> bool:
    """Whether `image` names a Docker Official Image (`ubuntu:24.04`, `library/python:3.12`, `debian@sha256:...`):
    no registry host, no namespace but `library/`, a name in `containers.subset.OFFICIAL_IMAGES`."""
    from matrix.schedule.containers.subset import OFFICIAL_IMAGES

    if "$" in image or not image:
        return False
    reference = image.partition("@")[0]
    name = reference.rpartition(":")[0] if ":" in reference.rsplit("/", 1)[-1] else reference
    name = name.removeprefix("docker.io/library/").removeprefix("library/")
    return "/" not in name and name in OFFICIAL_IMAGES
