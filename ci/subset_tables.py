"""docs/reader-subsets.md, written from the declared subsets of the CI readers: each reader's module docstring and
tables (`matrix/schedule/{github,shell,make,containers,commands}/subset.py`), and the tests that check the reader
against its table and, where one runs here, against the real tool.

Usage: python ci/subset_tables.py [--check] [PAGE]   (PAGE: docs/reader-subsets.md). --check exits 1 when the page
is not what this script writes, without writing. tests/core/test_reader_subsets_page.py runs the check.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from matrix.schedule.commands import subset as commands  # noqa: E402
from matrix.schedule.containers import subset as containers  # noqa: E402
from matrix.schedule.github import subset as github  # noqa: E402
from matrix.schedule.make import subset as make  # noqa: E402
from matrix.schedule.shell import subset as shell  # noqa: E402

PAGE = ROOT / "docs" / "reader-subsets.md"
WIDTH = 120


@dataclass(frozen=True, kw_only=True)
class Check:
    """A test file that holds a reader to its table: `tool` is the real program it runs as the oracle ("" when the
    test walks the table without one)."""

    path: str
    tool: str
    what: str


@dataclass(frozen=True, kw_only=True)
class Reader:
    """One reader's section: its subset module, how its tables are drawn, and the tests that check it."""

    title: str
    module: ModuleType
    tables: Callable[[], list[str]]
    checks: tuple[Check, ...]


def cell(text: str) -> str:
    """A table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(name: str) -> str:
    return f"`{name}`" if "`" not in name else f"``{name}``"


def table(head: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    head = list(head)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def names(values: Iterable[str]) -> str:
    return ", ".join(code(v) for v in sorted(values))


def grouped(items: Iterable[tuple[str, tuple[str, ...]]]) -> list[tuple[list[str], tuple[str, ...]]]:
    """Names that share the same description, together, in the order each description first appears; a name described
    only as another (`as declare`, `as docker run`) joins that name's row."""
    items = list(items)
    known = dict(items)
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, described in items:
        alias = described[-1].removeprefix("as ")
        shared = known[alias] if described[-1].startswith("as ") and alias in known else described
        groups.setdefault(shared, []).append(name)
    return [(found, described) for described, found in groups.items()]


def rows_of(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """(names, reading) rows of a name -> reading table, grouped."""
    return [(", ".join(code(n) for n in found), reading) for found, (reading,) in grouped((k, (v,)) for k, v in items)]


def docstring(module: ModuleType) -> list[str]:
    """The module's docstring, each paragraph re-wrapped to the page's width."""
    doc = ast.get_docstring(ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))) or ""
    out = []
    for paragraph in re.split(r"\n\s*\n", doc.strip()):
        out += [*textwrap.wrap(" ".join(paragraph.split()), WIDTH, break_on_hyphens=False, break_long_words=False), ""]
    return out


# --- each reader's tables -------------------------------------------------------------------------------------------


def github_tables() -> list[str]:
    out = ["**Functions** (names matched ignoring case) and **operators**:", ""]
    constructs = [*github.FUNCTIONS.values(), *github.OPERATORS.values()]
    out += table(["construct", "read as"], rows_of((c.name, c.modelled) for c in constructs))
    out += ["**Contexts** with the properties known before the run (any other context or property is known only at run "
            "time), and **steps**:", ""]  # fmt: skip
    out += table(["context or step", "read as"], rows_of((c.name, c.modelled) for c in [*github.CONTEXTS.values(),
                                                                                   *github.STEP_KINDS.values()]))  # fmt: skip
    out += ["**Events**, and the gate the jobs they start carry:", ""]
    rows = grouped((e.name, (e.gate.value, e.modelled)) for e in github.EVENTS.values())
    out += table(["event", "gate", "read as"], [(", ".join(code(n) for n in f), code(g), m) for f, (g, m) in rows])
    return out


def shell_tables() -> list[str]:
    out = ["**Statements** (tree-sitter-bash node types) the walk reads:", ""]
    out += table(["statement", "read as"], rows_of(shell.STATEMENTS.items()))
    out += ["**Builtins and wrappers**, and what each does to the state the reader tracks (any other program is an "
            "external command that changes none of it):", ""]  # fmt: skip
    rows = grouped((name, (b.effect.value, b.reading)) for name, b in shell.BUILTINS.items())
    out += table(["names", "effect", "read as"], [(", ".join(code(n) for n in found), e, r) for found, (e, r) in rows])
    out += ["**Options** of `set` and `shopt -s`/`-u` read (any other is outside):", ""]
    spelled = [(set_option(k), f"as set {v[3:]}" if v.startswith("as -") else v) for k, v in shell.SET_OPTIONS.items()]
    out += table(["option", "read as"], rows_of([*spelled, *((f"shopt {k}", v) for k, v in shell.SHOPT_OPTIONS.items())]))
    return out


def set_option(name: str) -> str:
    return f"set -{name}" if len(name) == 1 else f"set -o {name}"


def make_tables() -> list[str]:
    rows = grouped((c.name, (c.kind.value, c.support.value, c.how)) for c in make.CONSTRUCTS)
    return table(["construct", "kind", "support", "read as"], [(", ".join(code(n) for n in f), k, s, h) for f, (k, s, h) in rows])


def container_tables() -> list[str]:
    out = ["**Commands**, and what the command each runs sees:", ""]
    out += table(["command", "read as"], rows_of(containers.COMMANDS.items()))
    out += ["**Options** read (any other makes the rest of the command line unread, the option named):", ""]
    out += table(
        ["of", "taking a value", "flags"],
        [
            ("`docker run`, `podman run`", names(containers.RUN_VALUED), names(containers.RUN_FLAGS)),
            ("`docker exec`", names(containers.EXEC_VALUED), names(containers.EXEC_FLAGS)),
            ("`docker compose` (before the subcommand)", names(containers.COMPOSE_GLOBAL_VALUED), ""),
            ("`docker compose run` / `exec`", names(containers.COMPOSE_VALUED), names(containers.COMPOSE_FLAGS)),
            ("`docker build`", names(containers.BUILD_VALUED), ""),
        ],
    )
    out += ["**Dockerfile instructions**, and what each does to a container's starting environment:", ""]
    out += table(["instruction", "read as"], rows_of(containers.INSTRUCTIONS.items()))
    official = names(containers.OFFICIAL_IMAGES)
    out += [f"**Docker Official Images** taken as setting none of the project's variables: {official}.", ""]
    return out


def command_tables() -> list[str]:
    out = ["**Commands** that run pytest, or a file that may:", ""]
    out += table(["command", "read as"], rows_of(commands.COMMANDS.items()))
    out += table(
        ["programs", "which"],
        [
            ("pytest itself", names(commands.PYTEST)),
            ("launchers (run the command after their options)", names(commands.LAUNCHERS)),
            ("environment managers (`TOOL run COMMAND`)", names(commands.RUN_TOOLS)),
            ("`python -m` launchers", names(commands.PYTHON_LAUNCHERS)),
            ("pytest options that run no test", names(commands.NOT_RUNS)),
        ],
    )
    out += ["**Python programs** that start pytest themselves:", ""]
    out += table(["what", "read as"], [(code(k) if " " in k or "(" in k else k, v) for k, v in commands.PYTHON_PROGRAMS.items()])
    return out


WALK = "walks the table: each construct declared is read, each outside comes out unread with the construct named"
READERS = (
    Reader(
        title="GitHub Actions: expressions, events, steps",
        module=github,
        tables=github_tables,
        checks=(
            Check(path="tests/schedule/test_subset.py", tool="", what=WALK),
            Check(
                path="tests/schedule/test_step_writes.py",
                tool="bash",
                what="`$GITHUB_ENV` / `$GITHUB_OUTPUT` writes: bash runs each generated step and the files it writes must be "
                "what the reader predicts",
            ),
        ),
    ),
    Reader(
        title="Shell scripts: bash",
        module=shell,
        tables=shell_tables,
        checks=(
            Check(
                path="tests/schedule/test_shell_oracle.py",
                tool="bash",
                what="generated scripts inside the subset: bash runs them with stub commands, and the reader must agree on "
                "which pytest commands run, with which arguments, folder and variables; one construct outside leaves what "
                "follows unread",
            ),
            Check(path="tests/schedule/test_declared_subsets.py", tool="", what=WALK),
        ),
    ),
    Reader(
        title="Makefiles: GNU make 4.3",
        module=make,
        tables=make_tables,
        checks=(
            Check(
                path="tests/schedule/test_make_oracle.py",
                tool="GNU make",
                what="generated Makefiles inside the subset: `make -n` and a stubbed real run must give the commands the "
                "reader gives; one construct outside leaves the call unread",
            ),
            Check(
                path="tests/schedule/test_make_subset.py",
                tool="GNU make",
                what="every row above: its example agrees with make, or comes out unread with the construct named",
            ),
        ),
    ),
    Reader(
        title="Containers: docker, podman, compose, Dockerfiles",
        module=containers,
        tables=container_tables,
        checks=(
            Check(path="tests/schedule/test_declared_subsets.py", tool="", what=WALK),
            Check(
                path="tests/schedule/test_modelled_constructs.py",
                tool="",
                what="end to end through `pytest-audit`: a verdict the text decides is right, a construct not read leaves "
                "the test undetermined (no docker runs in the tests)",
            ),
        ),
    ),
    Reader(
        title="Launchers: what runs pytest",
        module=commands,
        tables=command_tables,
        checks=(
            Check(path="tests/schedule/test_declared_subsets.py", tool="", what=WALK),
            Check(
                path="tests/schedule/test_modelled_constructs.py",
                tool="",
                what="end to end through `pytest-audit`, as for containers",
            ),
        ),
    ),
)

INTRO = """\
# What each CI reader reads: the declared subsets

specmatrix reads a repository's CI files (workflows, the shell scripts and Makefiles their steps run, the containers
they start, the launchers that start pytest) without running them. Each reader models a declared part of its
language, and everything outside that part is **unread with the construct named**: a test only such a command may
run is `undetermined`, never given a verdict. This page lists each reader's part, drawn from the reader's own
table (`matrix/schedule/*/subset.py`), with the tests that hold the reader to it and, where the real tool runs in
the tests, the oracle that compares the two. What is read end to end (jobs, labels, environment):
[schedule.md](schedule.md); what is outside shows in `specmatrix schedule` under "not read".

This page is written by `python ci/subset_tables.py`; `tests/core/test_reader_subsets_page.py` fails when it is not
what the script writes (edit the tables, then run the script).
"""


def section(reader: Reader) -> list[str]:
    path = Path(reader.module.__file__ or "").resolve().relative_to(ROOT).as_posix()
    out = [f"## {reader.title}", "", *docstring(reader.module)]
    out += [f"The tables below are `{path}`'s. Checked by:", ""]
    for check in reader.checks:
        against = f" (against {check.tool} itself)" if check.tool else ""
        out.append(f"- `{check.path}`{against}: {check.what}.")
    return [*out, "", *reader.tables()]


def render() -> str:
    lines = INTRO.splitlines()
    for reader in READERS:
        while lines and not lines[-1]:
            lines.pop()
        lines += ["", *section(reader)]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(line.rstrip() for line in lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page", nargs="?", type=Path, default=PAGE)
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is not what this script writes")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.page.exists() or args.page.read_text(encoding="utf-8") != text:
            print(f"{args.page}: not what the subset tables give; run python ci/subset_tables.py", file=sys.stderr)
            return 1
        return 0
    from matrix.core.atomic import write_text_atomic

    write_text_atomic(args.page, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
