"""The launchers the command readers model, declared in one place; pure data.

How a command is read as running pytest (`commands.wrapped`), which files a command runs (`commands.run_files`,
`commands.pytest_command.called_scripts`), and what of a Python program that starts pytest itself is read
(`commands.python_launch`). A command that runs `-m pytest` through a program outside `LAUNCHERS` and
`RUN_TOOLS` is unread with the program named; a Python program that starts pytest in a way outside
`PYTHON_PROGRAMS` is unread (and may run any test). Sources: pytest docs, "How to invoke pytest"
(https://docs.pytest.org/en/stable/how-to/usage.html: `python -m pytest`, `pytest.main`); CPython "Command line
and environment" (https://docs.python.org/3/using/cmdline.html: `-c`, `-m`, option letters that combine); each
launcher's own manual for "runs the command after its options".
"""

from __future__ import annotations

from collections.abc import Mapping

# The programs that are pytest.
PYTEST = frozenset({"pytest", "py.test"})

# Programs that run the command (or the `-m` module) after their own options.
LAUNCHERS = frozenset(
    {
        "coverage",
        "torchrun",
        "mpirun",
        "mpiexec",
        "srun",
        "xvfb-run",
        "uvx",
        "catchsegv",
        "valgrind",
        "numactl",
        "taskset",
        "flock",
        "retry",
        "nsys",
        "ncu",
        "compute-sanitizer",
    }
)
# Programs that run a command named in their arguments with arguments (or a folder) known only at run time
# (`git ls-files | xargs pytest`, `find t -name 'test_*.py' -exec pytest {} +`, `parallel pytest ::: a b`): pytest
# run through one is unread, with the program named.
UNREAD_LAUNCHERS = frozenset({"xargs", "parallel", "find", "watch", "entr", "ssh", "su", "runuser", "setsid", "script"})
# Environment managers: `TOOL run CMD` (or `exec`) runs CMD; their other subcommands (`uv pip install pytest`) do not.
RUN_TOOLS = frozenset({"poetry", "hatch", "pixi", "conda", "mamba", "micromamba", "pdm", "pipenv", "rye", "uv"})
# `python -m MODULE` launchers whose own arguments end in the command they run.
PYTHON_LAUNCHERS = frozenset({"torch.distributed.run", "torch.distributed.launch", "coverage"})
# pytest options that print or list and run no test.
NOT_RUNS = frozenset(
    {
        "--collect-only",
        "--co",
        "--setup-plan",
        "--setup-only",
        "--fixtures",
        "--funcargs",
        "--fixtures-per-test",
        "--markers",
        "--version",
        "-V",
        "-h",
        "--help",
    }
)

# How each form of command that runs pytest, or a file that may, is read.
COMMANDS: Mapping[str, str] = {
    "pytest ARGS, py.test ARGS": "pytest's arguments",
    "python [options] -m pytest ARGS": "CPython's options read as CPython reads them: `-mpytest`, `-Bm pytest`, "
    "`-W error -m pytest`; also `$PYTHON -m pytest`",
    "python -c CODE ARGS": "CODE read as a Python program (PYTHON_PROGRAMS), `sys.argv` being ['-c', *ARGS]",
    "python FILE.py ARGS": "a test file: its `__main__` block (pytest.main, unittest.main, PyTorch's run_tests); any "
    "other file: read as a Python program (PYTHON_PROGRAMS)",
    "python -m unittest ARGS": "unread, bounded by the paths its arguments name",
    "UNREAD_LAUNCHERS program ... pytest ...": "unread, the program named (its arguments are known only at run time)",
    "LAUNCHER [options] COMMAND": "COMMAND, for a LAUNCHERS program; `TOOL run COMMAND` for a RUN_TOOLS one "
    "(`uv run --env-file F`: unread); "
    "`python -m torch.distributed.run ... -m pytest`",
    "bash FILE, sh FILE (dash, zsh, ksh)": "FILE read as a shell script whatever its name, after the shell's options "
    "(`bash -ex F`, `bash -eo pipefail F`; `-c` is read by the shell "
    "reader; `-s` reads stdin: not followed)",
    "./FILE, dir/FILE": "by its shebang: a shell (bash, sh, dash, zsh, ksh, through `env` too) reads it as a shell "
    "script, python as a Python program; none: bash runs it as a shell script; another interpreter: not followed",
    "make TARGET, tox -e ENV, nox -s SESSION, modal run": "their recipes, commands and functions (`matrix.schedule.follow`)",
    "blossom-ci (matrix/data/external_ci.toml [[command]])": "a hand-off to another CI service: unread, in a "
    "workflow step or a followed script alike",
}

# What of a Python program that starts pytest itself is read (`commands.python_launch`).
PYTHON_PROGRAMS: Mapping[str, str] = {
    "import pytest [as NAME]; NAME.main(...)": "a call of pytest.main",
    "from pytest import main [as NAME]; NAME(...)": "a call of pytest.main",
    "where": "module level, the `if __name__ == '__main__':` block, module-level functions called without "
    "arguments from there (4 deep); a loop's or an except clause's calls are conditional",
    "arguments": "a literal list or tuple of text, `__file__`, `sys.argv[1:]` (also spread or added); none: `sys.argv[1:]`",
    "conditions": "`if`/`elif`/`else` on `'--x' in sys.argv`, `len(sys.argv)`, `sys.argv[i]`, and argparse flags "
    "(`store_true`, `store_false`, `store` with a default) read as `args.x`, with `and`, `or`, `not`, `==`, "
    "`!=`, `in`: decided from the command's literal words, else kept as a condition",
    "ends": "`sys.exit(...)`, `exit(...)`, `raise SystemExit` end the block",
    "outside": "pytest.main with computed arguments, referred to other than by a call, or pytest started as a "
    "subprocess (`[sys.executable, '-m', 'pytest', ...]`): unread",
}
