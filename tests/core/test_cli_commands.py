"""The command table of `specmatrix`: each command is owned by the module the table names, and a run of one
command imports only that module (its start-up is part of the warm guard audit's time)."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from matrix.cli.main import COMMAND_MODULES, COMMANDS, build_parser


def registered_by(module_name: str) -> set[str]:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module_name).register(sub)
    return set(sub.choices)


def table_problems(table: dict[str, str], modules: tuple[str, ...]) -> list[str]:
    """Where the table and what the modules register disagree."""
    problems = []
    for module in modules:
        names = registered_by(module)
        listed = {c for c, m in table.items() if m == module}
        problems += [f"{c} is registered by {module} but not in COMMANDS" for c in sorted(names - listed)]
        problems += [f"{c} is in COMMANDS under {module}, which does not register it" for c in sorted(listed - names)]
    problems += [f"{c}: {m} is not a command module" for c, m in table.items() if m not in modules]
    return problems


def test_the_command_table_matches_what_each_module_registers():
    assert table_problems(COMMANDS, COMMAND_MODULES) == []


@pytest.mark.parametrize(
    ("planted", "expected"),
    [
        (
            {k: v for k, v in COMMANDS.items() if k != "timeline"},
            "timeline is registered by matrix.cli.audit but not in COMMANDS",
        ),
        ({**COMMANDS, "guards": "matrix.cli.core"}, "guards is in COMMANDS under matrix.cli.core, which does not register it"),
    ],
)
def test_the_table_check_catches_a_missing_or_misplaced_command(planted, expected):
    assert expected in table_problems(planted, COMMAND_MODULES)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_one_command_parser_helps_exactly_as_the_whole_one(command):
    def help_of(parser: argparse.ArgumentParser) -> str:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return sub.choices[command].format_help()

    assert help_of(build_parser(command)) == help_of(build_parser())


# What a `guards --no-workflows` run has no use for: the matrix file's version specifiers, the workflow readers and
# the schedule's records, the runner lookup by name (only `--only-runners` needs it) and `shutil` (argparse imports
# it to ask the terminal's width, which only written help needs).
NOT_FOR_A_GUARDS_RUN = (
    "packaging",
    "matrix.schedule.load",
    "matrix.schedule.github.walk",
    "matrix.schedule.model",
    "yaml",
    "matrix.core.machine",
    "shutil",
)


def needless_imports(loaded: list[str]) -> list[str]:
    """The modules a guards run imported that it does not need: other commands' modules, NOT_FOR_A_GUARDS_RUN."""
    others = [m for m in COMMAND_MODULES if m != "matrix.cli.guards" and m in loaded]
    return others + [m for m in loaded if m.split(".")[0] in NOT_FOR_A_GUARDS_RUN or m in NOT_FOR_A_GUARDS_RUN]


def modules_loaded_by(argv: list[str]) -> list[str]:
    """The modules a fresh interpreter holds after running one command."""
    code = f"import sys\nfrom matrix.cli.main import main\nmain({argv!r})\nprint(' '.join(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip(), done.stderr
    return done.stdout.strip().splitlines()[-1].split()


def test_a_guards_run_imports_no_other_command_module_and_nothing_it_does_not_use(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    loaded = modules_loaded_by(["guards", str(tmp_path), "--no-cache", "--no-workflows", "--json"])
    assert "matrix.cli.guards" in loaded
    assert needless_imports(loaded) == []


# With workflows the schedule's modules and PyYAML load too, but still not the matrix file's model (the runner
# profile record lives in matrix.core.profile): about 9 ms of a cold schedule read.
NOT_FOR_A_WORKFLOWS_RUN = ("packaging", "matrix.core.model", "matrix.core.loader", "matrix.core.machine", "shutil")


def test_a_guards_run_with_workflows_imports_no_matrix_model(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    flows = tmp_path / ".github" / "workflows"
    flows.mkdir(parents=True)
    (flows / "ci.yml").write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo hi\n")
    loaded = modules_loaded_by(["guards", str(tmp_path), "--no-cache", "--workflows", str(tmp_path), "--json"])
    assert "matrix.schedule.github.walk" in loaded and "yaml" in loaded
    assert [m for m in loaded if m in NOT_FOR_A_WORKFLOWS_RUN or m.split(".")[0] in NOT_FOR_A_WORKFLOWS_RUN] == []


@pytest.mark.parametrize("planted", ["matrix.cli.core", "packaging.specifiers", "matrix.schedule.load", "shutil"])
def test_the_import_check_sees_a_planted_import(planted):
    assert needless_imports(["matrix.cli.guards", "matrix.core.model", planted]) == [planted]


@pytest.mark.parametrize("command", [None, "guards"])
def test_help_is_written_to_the_terminals_width(monkeypatch, command):
    """The parser is built without asking the terminal's width; help written afterwards still fits it."""
    import argparse

    def help_at(columns: int) -> str:
        monkeypatch.setenv("COLUMNS", str(columns))
        parser = build_parser(command)
        if command is None:
            return parser.format_help()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return sub.choices[command].format_help()

    narrow, wide = help_at(60), help_at(200)
    assert len(narrow.splitlines()) > len(wide.splitlines())
    assert "".join(narrow.split()) == "".join(wide.split())


def test_a_command_runs_with_the_collector_tuned_and_main_restores_it(monkeypatch, tmp_path):
    import gc

    import matrix.cli.guards as guards_cli
    from matrix.cli.main import COLLECT_EVERY, main

    seen: list[tuple[int, ...]] = []

    def fake(args, options):
        seen.append(gc.get_threshold())
        raise KeyboardInterrupt  # a command that fails: the threshold is restored all the same

    monkeypatch.setattr(guards_cli, "cmd_guards", fake)
    before = gc.get_threshold()
    assert main(["guards", str(tmp_path)]) == 2
    assert seen == [(max(before[0], COLLECT_EVERY), *before[1:])]
    assert gc.get_threshold() == before
