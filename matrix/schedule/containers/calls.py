"""A command run in a container (`docker exec C ...`, `docker run IMG ...`, `podman`, `docker compose run S ...`),
read from its words: the command it runs, the folder it runs in, and a marker for the readers of the container's
environment (`containers.docker`); pure. The options read are `containers.subset`'s.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from matrix.schedule.containers.subset import (
    COMPOSE_FLAGS,
    COMPOSE_GLOBAL_VALUED,
    COMPOSE_VALUED,
    EXEC_FLAGS,
    EXEC_SHORT_FLAGS,
    EXEC_VALUED,
    RUN_FLAGS,
    RUN_SHORT_FLAGS,
    RUN_VALUED,
)
from matrix.schedule.shell.subset import Outside

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_TOOLS = frozenset({"docker", "podman", "nerdctl"})
# The checkout as a `-v` source: the runner's folder, or the workspace.
_HERE = frozenset({"$PWD", "${PWD}", "$(pwd)", "`pwd`", ".", "./"})
_WORKSPACE = re.compile(r"^(?:\$\{?GITHUB_WORKSPACE\}?|\$\{\{\s*github\.workspace\s*\}\})")


@dataclass(frozen=True, kw_only=True)
class ContainerCall:
    """What a container command gives the command it runs: `kind` is "exec" (a running container, `name`), "run" (a
    new container of the image `name`) or "compose" (a service `name`); its `-e` pairs (a value the runner's shell
    knows only at run time is a run-time marker), what cannot be read, notes the command's own script adds (a login
    shell, a `source`), and the shell it runs a script in (`bash` for `bash -c`)."""

    kind: str
    name: str
    container: str = ""  # `docker run --name NAME`: the name a later `docker exec` reaches it by
    env: tuple[tuple[str, str], ...] = ()
    unread: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    shell: str = ""
    lost: str = ""  # why the command it runs is not known (an option outside the tables): then it runs nothing read


def marker(call: ContainerCall) -> str:
    """The value of the CONTAINER pair a container command leaves in its env."""
    return json.dumps(asdict(call))


def read_marker(value: str) -> ContainerCall:
    doc = json.loads(value) if value else {}
    return ContainerCall(
        kind=str(doc.get("kind", "exec")),
        name=str(doc.get("name", "")),
        container=str(doc.get("container", "")),
        env=tuple((str(k), str(v)) for k, v in doc.get("env", ())),
        unread=tuple(str(u) for u in doc.get("unread", ())),
        notes=tuple(str(n) for n in doc.get("notes", ())),
        shell=str(doc.get("shell", "")),
        lost=str(doc.get("lost", "")),
    )


def container_name(call: ContainerCall) -> str:
    """How a container is named in reports and install lists: the container `docker exec` reaches, a `docker run`'s
    `--name` (else its image), a compose service."""
    if call.kind == "run":
        return call.container or f"of the image {call.name}"
    if call.kind == "compose":
        return f"of the compose service {call.name}"
    return call.name


def with_note(value: str, note: str, *, shell: str = "") -> str:
    """A marker with one more note of what the command's own script does inside (and the shell it runs in)."""
    call = read_marker(value)
    notes = call.notes if not note or note in call.notes else (*call.notes, note)
    return marker(replace(call, notes=notes, shell=shell or call.shell))


def container_call(words: Sequence[str]) -> tuple[list[str], str | None, ContainerCall] | None:
    """(the command run inside, its folder relative to the runner's or None, the call) of a container command;
    None when `words` are no container command (`docker build`, `docker ps`)."""
    if not words:
        return None
    tool = posixpath.basename(words[0])
    rest = list(words[1:])
    if tool in ("docker-compose", "podman-compose"):
        return _compose(rest)
    if tool not in _TOOLS or not rest:
        return None
    if rest[0] == "container" and len(rest) > 1:
        rest = rest[1:]
    if rest[0] == "compose":
        return _compose(rest[1:])
    if rest[0] == "exec":
        return _exec(rest[1:])
    if rest[0] == "run":
        return _run(rest[1:])
    return None


def _options(
    words: Sequence[str], valued: frozenset[str], flags: frozenset[str], short: frozenset[str]
) -> tuple[list[tuple[str, str]], int, str]:
    """(option, value) pairs up to the first word that is not an option, that word's index, and the first option
    outside the tables ("" when none: then the index is where the operand is)."""
    found: list[tuple[str, str]] = []
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        option, eq, inline = words[i].partition("=")
        if option == "--":
            return found, i + 1, ""
        if option in valued and not eq:
            found.append((option, words[i + 1] if i + 1 < len(words) else ""))
            i += 2
        elif option in valued or option in flags or (not option.startswith("--") and set(option[1:]) <= short and not eq):
            found.append((option, inline))
            i += 1
        elif not option.startswith("--") and option[1:2] in {"e", "w", "u", "v", "p"} and len(option) > 2 and not eq:
            found.append((option[:2], option[2:]))  # `-eX=1`, `-w/src`: a short option glued to its value
            i += 1
        else:
            return found, i, option
    return found, i, ""


def _env(pairs: Sequence[tuple[str, str]], verb: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The `-e` pairs (a value with a part the runner's shell knows only at run time is a run-time marker) and what
    is unread (`-e NAME` passes the runner's value; `--env-file` is read at run time)."""
    from matrix.schedule.shell.words import run_time

    env: list[tuple[str, str]] = []
    unread: list[str] = []
    for option, value in pairs:
        if option in ("-e", "--env") and _ASSIGN.match(value):
            name, _, given = value.partition("=")
            late = "$" in given or "`" in given or "__UNRESOLVED_" in given
            env.append((name, run_time(f"{verb} -e {value}") if late else given))
        elif option in ("-e", "--env"):
            unread.append(f"`{verb} -e {value}` passes the runner's {value}")
            # the runner's value, or (unset there) none: either way it replaces what the image or `docker run` gave
            env.append((value, run_time(f"`{verb} -e {value}` passes the runner's {value}")))
        elif option == "--env-file":
            unread.append(f"`{verb} --env-file {value}` is read at run time")
    return env, unread


def _exec(words: Sequence[str]) -> tuple[list[str], str | None, ContainerCall]:
    pairs, i, lost = _options(words, EXEC_VALUED, EXEC_FLAGS, EXEC_SHORT_FLAGS)
    env, unread = _env(pairs, "docker exec")
    if lost:
        why = f"`docker exec {lost}`, an option this reader does not know (where the command starts is not known)"
        return [], None, ContainerCall(kind="exec", name="", env=tuple(env), unread=(*unread, why), lost=why)
    folder = next((v for o, v in pairs if o in ("-w", "--workdir")), None)
    name = words[i] if i < len(words) else ""
    return list(words[i + 1 :]), folder, ContainerCall(kind="exec", name=name, env=tuple(env), unread=tuple(unread))


def _run(words: Sequence[str]) -> tuple[list[str], str | None, ContainerCall]:
    pairs, i, lost = _options(words, RUN_VALUED, RUN_FLAGS, RUN_SHORT_FLAGS)
    env, unread = _env(pairs, "docker run")
    if lost:
        why = f"`docker run {lost}`, an option this reader does not know (where the command starts is not known)"
        named = next((words[k + 1] for k in range(i, len(words) - 1) if words[k] == "--name"), "")
        call = ContainerCall(kind="run", name="", container=named, env=tuple(env), unread=(*unread, why), lost=why)
        return [], None, call
    image = words[i] if i < len(words) else ""
    command = list(words[i + 1 :])
    entrypoint = next((v for o, v in pairs if o == "--entrypoint"), None)
    if entrypoint is not None:
        command = [entrypoint, *command] if entrypoint else command
    workdir = next((v for o, v in pairs if o in ("-w", "--workdir")), None)
    folder = _mapped(workdir, [v for o, v in pairs if o in ("-v", "--volume")])
    named = next((v for o, v in pairs if o == "--name"), "")
    call = ContainerCall(kind="run", name=image, container=named, env=tuple(env), unread=tuple(unread))
    if entrypoint is not None:
        call = replace(call, notes=("--entrypoint",))
    return command, folder, call


def _mapped(workdir: str | None, volumes: Sequence[str]) -> str:
    """The folder a `docker run` command starts in, relative to the runner's folder when `-w` lies in a `-v` mount
    of the checkout; else a run-time folder (the image's WORKDIR, or a folder outside the checkout)."""
    if workdir is None:
        return "$(the image's WORKDIR)"
    for volume in volumes:
        source, _, rest = volume.partition(":")
        target = rest.split(":", 1)[0].rstrip("/") or "/"
        if workdir != target and not workdir.startswith(target + "/"):
            continue
        below = workdir[len(target) :].lstrip("/")
        if source.rstrip("/") in _HERE or source in ("$PWD/", "$(pwd)/"):
            return posixpath.normpath(below or ".")
        if _WORKSPACE.match(source) and source.rstrip("/") == _WORKSPACE.match(source).group(0):  # type: ignore[union-attr]
            return posixpath.normpath(posixpath.join("$GITHUB_WORKSPACE", below)) if below else "$GITHUB_WORKSPACE"
    return workdir


def _compose(words: Sequence[str]) -> tuple[list[str], str | None, ContainerCall] | None:
    _, i, lost = _options(
        words, COMPOSE_GLOBAL_VALUED, frozenset({"--compatibility", "--dry-run", "--all-resources"}), frozenset()
    )
    if lost:
        raise Outside(f"`docker compose {lost}`, an option this reader does not know")
    if i >= len(words) or words[i] not in ("run", "exec"):
        return None
    verb = words[i]
    pairs, j, lost = _options(words[i + 1 :], COMPOSE_VALUED, COMPOSE_FLAGS, frozenset("dTit"))
    if lost:
        raise Outside(f"`docker compose {verb} {lost}`, an option this reader does not know")
    env, unread = _env(pairs, f"docker compose {verb}")
    rest = words[i + 1 + j :]
    service = rest[0] if rest else ""
    unread.insert(0, f"the compose service {service or '(unknown)'}: its compose file is not read")
    folder = next((v for o, v in pairs if o in ("-w", "--workdir")), None)
    call = ContainerCall(kind="compose", name=service, env=tuple(env), unread=tuple(unread))
    return list(rest[1:]), folder or "$(the compose service's working folder)", call
