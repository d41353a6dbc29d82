"""Differential test: the shell reader against bash itself, on generated scripts inside its declared subset.

Hypothesis writes a script (assignments, `export`, `export -n`, `unset`, `env -u`, `NAME= cmd`, command
substitution of a stubbed command, `read` from one, pipelines, `if`/`&&`/`||`, `cd`, functions with `local`,
`shopt -s globstar`, pytest invocations with arguments, pathname patterns and environment prefixes); bash runs it
in a sandbox checkout, twice, with `pytest` and `python` stubbed as PATH scripts that log their arguments, folder
and four variables, and `getval` printing a value that differs between the two runs. The reader must agree with
bash on which pytest commands run (a command it calls conditional may run or not), with which arguments, in which
folder and with which values of the variables, and say "unknown" where a value depends on `getval`'s output:
never a known value bash contradicts, and, in a script whose conditions read no such value, unknown only where
the two runs differ. A script with a construct outside the subset must come out unread from there on.

`nox -s tests` runs a few examples; `SPECMATRIX_ORACLE_EXAMPLES=400` (any number) runs a deep pass.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from matrix.schedule.commands.wrapped import pytest_call
from matrix.schedule.load import TreeLoader
from matrix.schedule.shell.commands import Command, commands, environment
from matrix.schedule.shell.words import is_run_time

EXAMPLES = int(os.environ.get("SPECMATRIX_ORACLE_EXAMPLES", "25"))
BASH = shutil.which("bash")
NAMES = ("A", "B", "C", "D")
JOB_ENV = {"A": "job", "B": "base", "C": "cee", "D": "dee"}
UNKNOWN = None  # the reader's "not known before the run"

pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed (CI installs it)")

STUBS = {
    "pytest": (
        "#!/bin/sh\n{\n  printf 'CALL\\n'\n  printf 'CWD\\t%s\\n' \"$PWD\"\n"
        '  for a in "$@"; do printf \'ARG\\t%s\\n\' "$a"; done\n'
        "  for n in A B C D; do\n"
        '    if v=$(printenv "$n"); then printf \'ENV\\t%s\\t%s\\n\' "$n" "$v"; else printf \'UNSET\\t%s\\n\' "$n"; fi\n'
        '  done\n} >> "${0%/bin/*}/log"\n'
    ),
    "python": (
        '#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pytest ]; then shift 2; exec pytest "$@"; fi\n'
        'if [ "$1" = -mpytest ]; then shift; exec pytest "$@"; fi\n'
    ),
    "getval": "#!/bin/sh\nprintf 'v%s\\n' \"$ORACLE_SEED\"\n",
}
STUBS["python3"] = STUBS["python"]


@functools.cache
def sandbox() -> Path:
    """A checkout: folders p and q three deep, each with two test files, a conftest and a hidden file; `bin/`
    (outside the checkout) holds the stubs."""
    base = Path(tempfile.mkdtemp(prefix="shell-oracle-"))  # one per process: xdist workers do not share it
    root = base / "repo"
    folders = [""]
    for _ in range(3):
        folders += [f"{f}/{c}".lstrip("/") for f in folders for c in ("p", "q") if f.count("/") < 2 or f == ""]
    for folder in dict.fromkeys(folders):
        here = root / folder
        here.mkdir(parents=True, exist_ok=True)
        for name in ("test_a.py", "test_b.py", "conftest.py", ".hidden.py"):
            (here / name).write_text("", encoding="utf-8")
    (base / "bin").mkdir()
    for name, text in STUBS.items():
        path = base / "bin" / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
    return root


# --- the generated scripts -------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Script:
    """A generated script and what the generator knows of it: whether a condition reads a value that depends on
    `getval` (then precision is not checked), and the folder the top level is in."""

    lines: list[str] = field(default_factory=list)
    tainted: set[str] = field(default_factory=set)  # names whose value may come from getval
    exact: bool = True
    folder: list[str] = field(default_factory=list)  # the top level's folder, as components
    calls: int = 0
    functions: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


LITERALS = ("w1", "w2", "v1", "")


def _value(draw: st.DrawFn, script: Script) -> tuple[str, bool]:
    """(an assignment's right side, whether it may depend on getval)."""
    other = draw(st.sampled_from(NAMES))
    forms = [
        (draw(st.sampled_from(LITERALS[:3])), False),
        (f'"${other}"', other in script.tainted),
        (f'"${{{other}:-d}}"', other in script.tainted),
        (f'"${{{other}-d}}"', other in script.tainted),
        (f'"${{{other}:+p}}"', other in script.tainted),
        ('"$(getval)"', True),
        ("$(getval)", True),
        ('"pre$(getval)"', True),
        (f'"${other}/x"', other in script.tainted),
    ]
    chosen = draw(st.sampled_from(forms))
    if other in script.tainted and any(op in chosen[0] for op in (":-", ":+", "-d}")):
        script.exact = False  # whether getval's output is empty decides it: the reader cannot know, bash can
    return chosen


def _condition(draw: st.DrawFn, script: Script, *, commands: bool = True) -> str:
    """A condition; with `commands`, also a command's status (the subset reads `a && b` as `a` succeeding, so a
    command is drawn only as an `if` condition, where it is known only at run time)."""
    name = draw(st.sampled_from(NAMES))
    literal = draw(st.sampled_from(LITERALS))
    forms = [
        f'[ "${name}" = "{literal}" ]',
        f'[ -n "${name}" ]',
        f'[ -z "${name}" ]',
        '[ "$(getval)" = v1 ]',
        "getval | grep -q v1",
        "true",
        "false",
        f'! [ "${name}" = "{literal}" ]',
    ]
    chosen = draw(st.sampled_from([f for f in forms if commands or "|" not in f]))
    if "getval" in chosen or (name in script.tainted and "$" in chosen):  # decided by getval's output
        script.exact = False
    return chosen


def _pytest(draw: st.DrawFn, script: Script) -> str:
    script.calls += 1
    prefix = draw(
        st.sampled_from(
            [
                "",
                "",
                "{n}=w2 ",
                "env -u {n} ",
                "env -u{n} ",
                "env --unset={n} ",
                "env {n}=w1 ",
                "{n}= ",
                "env -i PATH=$PATH ",
                "A=w1 B=w2 ",
            ]
        )
    ).format(n=draw(st.sampled_from(NAMES)))
    program = draw(st.sampled_from(["pytest", "pytest", "python -m pytest", "python3 -mpytest"]))
    if prefix.startswith("env -i") and program != "pytest":
        program = "pytest"
    arguments = draw(
        st.lists(
            st.sampled_from(
                [
                    "-q",
                    "test_a.py",
                    "p/test_b.py",
                    '"$A"',
                    '"$B"',
                    '"$C"',
                    "$D",
                    '-k "not $A"',
                    "p/*",
                    "*/test_a.py",
                    "test_?.py",
                    "[pq]/test_b.py",
                    "**/test_b.py",
                    "nomatch*",
                    "'p/*'",
                    "p/\\*",
                    '"$@"',
                ]
            ),
            max_size=4,
        )
    )
    return f"{prefix}{program} c{script.calls} {' '.join(arguments)}".rstrip()


@st.composite
def statements(draw: st.DrawFn, script: Script, depth: int, top: bool) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(1, 4 if depth == 0 else 2))):
        kind = draw(
            st.sampled_from(
                [
                    "assign",
                    "export",
                    "exportn",
                    "unset",
                    "pytest",
                    "pytest",
                    "if",
                    "and",
                    "read",
                    "pipe",
                    "cd",
                    "call",
                    "glob",
                    "exit",
                ]
            )
        )
        name = draw(st.sampled_from(NAMES))
        if kind == "assign":
            value, tainted = _value(draw, script)
            out.append(f"{name}={value}")
            (script.tainted.add if tainted else script.tainted.discard)(name)
        elif kind == "export":
            if draw(st.booleans()):
                value, tainted = _value(draw, script)
                out.append(f"export {name}={value}")
                (script.tainted.add if tainted else script.tainted.discard)(name)
            else:
                out.append(f"export {name}")
        elif kind == "exportn":
            out.append(f"export -n {name}")
        elif kind == "unset":
            spelling = draw(st.sampled_from(["unset {n}", 'unset "{n}"', "unset -v '{n}'", 'unset {n}""', 'V_={n}; unset "$V_"']))
            out.append(spelling.format(n=name))
            script.tainted.discard(name)
        elif kind == "read":
            out.append(f'read -r {name} <<< "$(getval)"')
            script.tainted.add(name)
        elif kind == "pipe":
            out.append(f"getval | read -r {name}")  # a subshell: the name does not change
        elif kind == "exit" and depth > 0:
            out.append("exit 0")
        elif kind == "glob" and top:
            out.append(f"shopt -{draw(st.sampled_from('su'))} globstar")
        elif kind == "cd" and top:
            choices = [c for c in ("p", "q") if len(script.folder) < 3] + ([".."] if script.folder else [])
            target = draw(st.sampled_from(choices))
            script.folder = script.folder[:-1] if target == ".." else [*script.folder, target]
            out.append(f"cd {target}")
        elif kind == "if" and depth < 2:
            condition = _condition(draw, script)
            body = draw(statements(script, depth + 1, top=False))
            other = draw(statements(script, depth + 1, top=False)) if draw(st.booleans()) else []
            tail = ["else", *(f"  {line}" for line in other)] if other else []
            out += [f"if {condition}; then", *(f"  {line}" for line in body), *tail, "fi"]
        elif kind == "and" and depth < 2:
            condition = _condition(draw, script, commands=False)
            out.append(f"{condition} {draw(st.sampled_from(['&&', '||']))} {_pytest(draw, script)}")
        elif kind == "call" and top and depth == 0 and len(script.functions) < 2:
            fname = f"f{len(script.functions)}"
            script.functions.append(fname)
            local = draw(st.sampled_from(NAMES))
            early = [f"  {_condition(draw, script, commands=False)} && return 0"] if draw(st.booleans()) else []
            body = [f"  local {local}=w2", *early, f'  {_pytest(draw, script)} "$1"', f"  {name}=w1"]
            (script.tainted.discard)(name)
            out += [f"{fname}() {{", *body, "}", f"{fname} {draw(st.sampled_from(['p/test_a.py', 'x', '$A']))}"]
        else:
            out.append(_pytest(draw, script))
    return out


@st.composite
def scripts(draw: st.DrawFn) -> Script:
    script = Script()
    script.lines = draw(statements(script, 0, top=True))
    if script.calls == 0:
        script.lines.append(_pytest(draw, script))
    return script


# --- running both ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Run:
    """One pytest invocation: its id (`cN`), its other arguments, its folder (checkout-relative) and the values of
    the four variables (None: unset for bash; UNKNOWN for the reader, told apart by `known`)."""

    call: str
    arguments: tuple[str | None, ...]
    folder: str | None
    env: tuple[tuple[str, str | None, bool], ...]  # (name, value, known)
    conditional: bool = False


def run_bash(text: str, seed: int) -> list[Run]:
    root = sandbox()
    log = root.parent / "log"  # the stubs write there (`env -i` leaves them no variable to find it by)
    script = root.parent / "script.sh"
    script.write_text(text, encoding="utf-8")
    log.write_text("", encoding="utf-8")
    env = {"PATH": f"{root.parent / 'bin'}:/usr/bin:/bin", "ORACLE_SEED": str(seed), "LC_ALL": "C"}
    subprocess.run([BASH or "bash", str(script)], cwd=root, env={**env, **JOB_ENV}, capture_output=True, timeout=20, check=False)
    out: list[Run] = []
    for record in log.read_text(encoding="utf-8").split("CALL\n")[1:]:
        arguments: list[str] = []
        folder = ""
        values: dict[str, str | None] = {}
        for line in record.splitlines():
            kind, _, rest = line.partition("\t")
            if kind == "CWD":
                folder = os.path.relpath(rest, root)
            elif kind == "ARG":
                arguments.append(rest)
            elif kind == "ENV":
                name, _, value = rest.partition("\t")
                values[name] = value
            elif kind == "UNSET":
                values[rest] = None
        out.append(
            Run(
                call=arguments[0] if arguments else "",
                arguments=tuple(arguments[1:]),
                folder=folder,
                env=tuple((n, values.get(n), True) for n in NAMES),
            )
        )
    return out


def run_reader(text: str) -> tuple[list[Run], list[Command]]:
    """The reader's pytest commands (with what it knows of each) and its unread commands."""
    found = commands(text, ".", None, JOB_ENV, folders=TreeLoader(sandbox()))
    runs: list[Run] = []
    for command in found:
        if command.unread:
            continue
        call = pytest_call(command.words)
        if call is None or not call.arguments:
            continue
        env = environment(command, JOB_ENV)
        values = tuple(
            (n, None, True) if n not in env else ((n, None, False) if is_run_time(env[n]) else (n, env[n], True)) for n in NAMES
        )
        runs.append(
            Run(
                call=call.arguments[0],
                arguments=tuple(None if "$" in a or "`" in a else a for a in call.arguments[1:]),
                folder=None if "$" in command.working_dir else os.path.normpath(command.working_dir),
                env=values,
                conditional=bool(command.conditions),
            )
        )
    return runs, [c for c in found if c.unread]


def disagreements(text: str, *, exact: bool) -> list[str]:
    """Where the reader and bash disagree on `text` (run with two outputs of getval); [] when they agree."""
    reader, unread = run_reader(text)
    problems = [f"unread inside the subset: {c.unread}" for c in unread]
    first, second = run_bash(text, 1), run_bash(text, 2)
    for runs in (first, second):
        matched = _match(reader, runs)
        if matched is None:
            problems.append(f"reader {[(r.call, r.conditional) for r in reader]} vs bash {[r.call for r in runs]}")
            continue
        for mine, theirs in matched:
            problems += [f"{mine.call}: {p}" for p in _compare(mine, theirs)]
    if exact and not problems and [r.call for r in first] == [r.call for r in second]:
        for mine, one, two in zip(reader, first, second, strict=False):
            problems += [f"{mine.call}: {p}" for p in _precision(mine, one, two)]
    return problems


def _match(reader: Sequence[Run], runs: Sequence[Run]) -> list[tuple[Run, Run]] | None:
    """The reader's commands paired with bash's invocations, in order; a conditional command may be skipped."""

    @functools.cache
    def at(i: int, j: int) -> tuple[tuple[int, int], ...] | None:
        if i == len(reader):
            return () if j == len(runs) else None
        if j < len(runs) and reader[i].call == runs[j].call and not _compare(reader[i], runs[j]):
            rest = at(i + 1, j + 1)
            if rest is not None:
                return ((i, j), *rest)
        return at(i + 1, j) if reader[i].conditional else None

    found = at(0, 0)
    if found is None and len(reader) == len(runs) and all(r.call == b.call for r, b in zip(reader, runs, strict=True)):
        return list(zip(reader, runs, strict=True))  # same commands: report the values that differ
    return None if found is None else [(reader[i], runs[j]) for i, j in found]


def _compare(mine: Run, theirs: Run) -> list[str]:
    problems: list[str] = []
    if None not in mine.arguments and mine.arguments != theirs.arguments:
        problems.append(f"arguments {mine.arguments} != bash {theirs.arguments}")
    elif None in mine.arguments and len(mine.arguments) == len(theirs.arguments):
        for a, b in zip(mine.arguments, theirs.arguments, strict=True):
            if a is not None and a != b:
                problems.append(f"argument {a!r} != bash {b!r}")
    if mine.folder is not None and mine.folder != theirs.folder:
        problems.append(f"folder {mine.folder} != bash {theirs.folder}")
    for (name, value, known), (_, actual, _) in zip(mine.env, theirs.env, strict=True):
        if known and value != actual:
            problems.append(f"{name}={value!r} != bash {actual!r}")
    return problems


def _precision(mine: Run, one: Run, two: Run) -> list[str]:
    """Unknown only where the two runs differ (the value depends on getval)."""
    problems: list[str] = []
    if mine.folder is None and one.folder == two.folder:
        problems.append(f"folder unknown, bash {one.folder} both times")
    if len(mine.arguments) == len(one.arguments) == len(two.arguments):
        for a, b, c in zip(mine.arguments, one.arguments, two.arguments, strict=True):
            if a is None and b == c:
                problems.append(f"an argument unknown, bash {b!r} both times")
    for (name, _, known), (_, x, _), (_, y, _) in zip(mine.env, one.env, two.env, strict=True):
        if not known and x == y:
            problems.append(f"{name} unknown, bash {x!r} both times")
    return problems


# --- the tests ---------------------------------------------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scripts())
def test_the_reader_agrees_with_bash(script: Script) -> None:
    problems = disagreements(script.text, exact=script.exact)
    assert not problems, f"\n{script.text}\n" + "\n".join(problems)


OUTSIDE = [
    'eval "A=w2"',
    "trap 'A=w2' DEBUG",
    "set -k",
    "shopt -s expand_aliases",
    "declare -n R=A",
    'case "$A" in job) A=w2 ;& *) B=w2 ;; esac',
    "(( A = 3 )) && unset B; eval true",
]


@settings(max_examples=max(EXAMPLES // 2, 5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts(), st.sampled_from(OUTSIDE), st.data())
def test_a_construct_outside_the_subset_leaves_what_follows_unread(script: Script, construct: str, data: st.DataObject) -> None:
    assume("exit" not in script.text)  # a script that may end before the construct need not reach it
    at = data.draw(st.integers(0, len(script.lines)))
    while at < len(script.lines) and script.lines[at].startswith((" ", "else", "fi", "}")):
        at += 1  # a whole statement boundary at the top level
    lines = [*script.lines[:at], construct, *script.lines[at:], "pytest last"]
    found = commands("\n".join(lines) + "\n", ".", None, JOB_ENV, folders=TreeLoader(sandbox()))
    after = [c for c in found if c.line > at + 1 and not c.unread and pytest_call(c.words) is not None]
    assert after == [], "\n".join(lines)
    assert any(c.unread for c in found)


# --- planted bugs: the oracle must see each -----------------------------------------------------------------------

PLANTED = {
    "unset is a no-op": "unset A\npytest c1",
    "env -u is ignored": "env -u B pytest c1",
    "rebinding keeps the job's value": 'A=$(getval)\npytest c1 "$A"',
    "a glob stays literal": "pytest c1 p/test_*.py",
    "a quoted unset name is ignored": 'unset "A"\npytest c1',
}


def _plant(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from matrix.schedule.shell import assignments, scope, words
    from matrix.schedule.shell import commands as shell_commands

    if name == "unset is a no-op":
        monkeypatch.setattr(scope.Scope, "unset", lambda self, n: None)
    elif name == "env -u is ignored":
        monkeypatch.setattr(shell_commands, "UNSET_OP", "@ignored")
    elif name == "rebinding keeps the job's value":
        monkeypatch.setattr(scope.Scope, "exports", lambda self, n: n in self.exported)
        monkeypatch.setattr(words.Variables, "value", lambda self, n: self.scalars.get(n) or JOB_ENV.get(n))
    elif name == "a quoted unset name is ignored":  # as the reader once did: only a bare name was taken out
        monkeypatch.setattr(assignments, "words", lambda node, known, glob=None: [])
    elif name == "a glob stays literal":
        monkeypatch.setattr(words, "_globbed", lambda pattern, node, known, glob: [words.word(node, known)])
    commands_cache: Callable[[], None] = shell_commands._commands.cache_clear
    commands_cache()


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_oracle_sees_a_planted_bug(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert disagreements(PLANTED[name], exact=False) == []
    _plant(name, monkeypatch)
    assert disagreements(PLANTED[name], exact=False) != []
    monkeypatch.undo()
    from matrix.schedule.shell import commands as shell_commands

    shell_commands._commands.cache_clear()
