"""Each reader's declared subset, walked table by table: what is declared is read, and a construct outside comes out
unread with the construct named (never a definite verdict)."""

from __future__ import annotations

import pytest

from matrix.schedule.commands.python_launch import launch
from matrix.schedule.commands.subset import LAUNCHERS, PYTHON_LAUNCHERS, RUN_TOOLS
from matrix.schedule.commands.wrapped import pytest_call
from matrix.schedule.containers.calls import container_call
from matrix.schedule.containers.docker import read_job
from matrix.schedule.containers.dockerfile import official, stage_env
from matrix.schedule.containers.subset import (
    BUILD_VALUED,
    COMMANDS,
    EXEC_FLAGS,
    EXEC_VALUED,
    INSTRUCTIONS,
    OFFICIAL_IMAGES,
    RUN_FLAGS,
    RUN_VALUED,
)
from matrix.schedule.shell import tree
from matrix.schedule.shell.commands import Command, commands
from matrix.schedule.shell.subset import BUILTINS, SET_OPTIONS, SHOPT_OPTIONS, STATEMENTS, Effect


def read(script: str) -> tuple[list[Command], list[Command]]:
    """(the pytest commands read, the unread commands) of a script, reading for pytest as the walker does."""
    found = commands(script, ".", ("pytest",))
    return [c for c in found if not c.unread and pytest_call(c.words)], [c for c in found if c.unread]


# --- the shell -------------------------------------------------------------------------------------------------


def test_every_statement_the_walk_reads_is_declared_and_every_declared_one_is_read():
    assert set(tree._HANDLERS) | {"comment"} == set(STATEMENTS)


_EXAMPLES = {
    Effect.FOLDER: "{name} sub",
    Effect.DECLARE: "{name} X=1",
    Effect.UNSET: "{name} X",
    Effect.SOURCE: "{name} /etc/profile.d/tool.sh",
    Effect.RUN_TIME: "{name} X",
    Effect.SET: "{name} -e",
    Effect.SHOPT: "{name} -s globstar",
    Effect.TRAP: "{name} 'rm -rf tmp' EXIT",
    Effect.NONE: "{name} x",
    Effect.OUTSIDE: "{name} x",
}


@pytest.mark.parametrize("name", sorted(n for n, b in BUILTINS.items() if b.effect is not Effect.WRAPPER))
def test_each_builtin_is_read_as_declared(name):
    effect = BUILTINS[name].effect
    line = {"popd": "popd", "shift": "shift", "exit": "exit 0", "exec": "exec true", "[": "[ x ]", "[[": "[[ x ]]"}.get(
        name, _EXAMPLES.get(effect, "{name} x").format(name=name)
    )
    if name == "select":
        line = "select x in a b; do pytest tests/k; done"
    ran, unread = read(f"{line}\npytest tests/k\n")
    if effect is Effect.OUTSIDE:
        assert not ran and unread and name in unread[0].unread
    elif effect in (Effect.STOP, Effect.EXEC) and name != "return":  # `return` outside a function: refused, goes on
        assert not ran and not unread  # the script ends there: the pytest after it never runs
    else:
        assert len(ran) == 1 and not unread, (line, ran, unread)


@pytest.mark.parametrize("name", sorted(n for n, b in BUILTINS.items() if b.effect is Effect.WRAPPER))
def test_each_wrapper_runs_the_command_after_it(name):
    prefix = {"timeout": "timeout 60", "env": "env -u X -i Y=1", "sudo": "sudo -E"}.get(name, name)
    ran, unread = read(f"{prefix} pytest tests/k\n")
    assert [c.words for c in ran] == [("pytest", "tests/k")] and not unread


@pytest.mark.parametrize("option", sorted(SET_OPTIONS))
def test_each_set_option_declared_is_read(option):
    line = f"set -{option}" if len(option) == 1 else f"set -o {option}"
    ran, unread = read(f"{line}\npytest tests/k\n")
    assert len(ran) == 1 and not unread


@pytest.mark.parametrize("option", sorted(SHOPT_OPTIONS))
def test_each_shopt_option_declared_is_read(option):
    ran, unread = read(f"shopt -s {option}\npytest tests/k\n")
    assert len(ran) == 1 and not unread


@pytest.mark.parametrize(
    ("construct", "named", "later"),
    [
        ("set -k", "set -k", True),
        ("set -o posix", "set -o posix", True),
        ("shopt -s expand_aliases", "expand_aliases", True),
        ("shopt -s lastpipe", "lastpipe", True),
        ("declare -n R=X", "declare -n", True),
        ("trap 'X=1' DEBUG", "DEBUG", True),
        ('eval "$CMD"', "eval", True),
        ('case "$A" in a) X=1 ;& b) Y=1 ;; esac', ";&", True),
        ("echo {a,b}; pytest tests/{a,b}", "brace expansion", False),  # that command only
        ("env -S 'pytest tests/k'", "env -S", False),
        ("docker run --made-up-flag img pytest tests/k", "--made-up-flag", False),
    ],
)
def test_a_construct_outside_the_subset_is_unread_and_named(construct, named, later):
    """Unread with the construct named; one that may change any state leaves what follows unread too."""
    ran, unread = read(f"{construct}\npytest tests/k\n")
    assert any(named in c.unread for c in unread), unread
    assert [c.line for c in ran if c.line > 1] == ([] if later else [2])


# --- containers -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_container_command_declared_is_read(command):
    words = command.split()
    if words[-1] == "build":
        job = read_job([(f"{command} -t img -f ci/x.Dockerfile --build-arg A=1 .", ".")])
        assert job.builds["img"].dockerfile == "ci/x.Dockerfile"
        return
    operand = "unit" if "compose" in command else "img" if words[-1] == "run" else "box"
    found = container_call([*words, "-e", "A=1", operand, "pytest", "tests/k"])
    assert found is not None and found[0] == ["pytest", "tests/k"] and found[2].name == operand


@pytest.mark.parametrize("option", sorted(RUN_VALUED | RUN_FLAGS))
def test_each_docker_run_option_is_read(option):
    valued = option in RUN_VALUED
    found = container_call(["docker", "run", option, *(["v"] if valued else []), "img", "pytest"])
    expected = ["v", "pytest"] if option == "--entrypoint" else ["pytest"]  # the entrypoint runs the words after it
    assert found is not None and found[0] == expected and not found[2].lost


@pytest.mark.parametrize("option", sorted(EXEC_VALUED | EXEC_FLAGS))
def test_each_docker_exec_option_is_read(option):
    valued = option in EXEC_VALUED
    found = container_call(["docker", "exec", option, *(["v"] if valued else []), "box", "pytest"])
    assert found is not None and found[0] == ["pytest"] and not found[2].lost


def test_an_option_outside_the_tables_loses_the_command_and_says_so():
    found = container_call(["docker", "exec", "--made-up", "box", "pytest"])
    assert found is not None and found[0] == [] and "--made-up" in found[2].lost


def test_each_build_option_takes_its_value():
    for option in sorted(BUILD_VALUED):
        job = read_job([(f"docker build {option} value -t img .", ".")])
        assert "img" in job.builds or option in ("-t", "--tag"), option


@pytest.mark.parametrize("instruction", sorted(INSTRUCTIONS))
def test_each_dockerfile_instruction_declared_is_read(instruction):
    found = stage_env(f"FROM debian:12\n{instruction} something\nENV A=1\n")
    assert found.env.get("A") == "1" and not found.unread


@pytest.mark.parametrize("instruction", ["ONBUILD ENV X=1", "FUTURE_ENV X=1"])
def test_an_instruction_that_may_change_the_environment_outside_the_table_is_unread(instruction):
    assert instruction.split()[0] not in INSTRUCTIONS or instruction.startswith("ONBUILD ENV")
    assert stage_env(f"FROM debian:12\n{instruction}\n").unread


@pytest.mark.parametrize("image", sorted(OFFICIAL_IMAGES))
def test_each_official_image_declared_counts_as_one(image):
    assert official(image) and official(f"{image}:latest") and not official(f"localhost:5000/{image}")


# --- launchers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("program", sorted(LAUNCHERS))
def test_each_launcher_declared_runs_pytest(program):
    call = pytest_call([program, "pytest", "tests/k"])
    assert call is not None and call.arguments == ["tests/k"] and not call.unread


@pytest.mark.parametrize("tool", sorted(RUN_TOOLS))
def test_each_environment_manager_runs_pytest(tool):
    call = pytest_call([tool, "run", "pytest", "tests/k"])
    assert call is not None and call.arguments == ["tests/k"]


@pytest.mark.parametrize("module", sorted(PYTHON_LAUNCHERS))
def test_each_python_launcher_runs_pytest(module):
    call = pytest_call(["python", "-m", module, "-m", "pytest", "tests/k"])
    assert call is not None and call.arguments == ["tests/k"]


def test_a_launcher_outside_the_table_is_unread_with_its_name():
    call = pytest_call(["my-launcher", "--gpus", "2", "-m", "pytest", "tests/k"])
    assert call is not None and "my-launcher" in call.unread


@pytest.mark.parametrize(
    ("program", "runs"),
    [
        ("import pytest\npytest.main(['tests/k'])", [("tests/k",)]),
        ("import pytest as pt\npt.main(['tests/k'])", [("tests/k",)]),
        ("from pytest import main\nmain(['tests/k'])", [("tests/k",)]),
        ("from pytest import main as go\ngo(('tests/k', '-q'))", [("tests/k", "-q")]),
        ("import sys, pytest\npytest.main(['-x', *sys.argv[1:]])", [("-x", "--gpu")]),
        ("import pytest\npytest.main()", [("--gpu",)]),
        ("import sys, pytest\nif '--gpu' in sys.argv:\n    pytest.main(['g'])\nelse:\n    pytest.main(['c'])", [("g",)]),
        ("import sys, pytest\nif len(sys.argv) > 5:\n    pytest.main(['g'])", []),
        ("import pytest\ndef run():\n    pytest.main(['f'])\nif __name__ == '__main__':\n    run()", [("f",)]),
        ("import pytest, sys\nsys.exit(pytest.main(['a']))\npytest.main(['b'])", [("a",)]),
    ],
)
def test_each_python_program_form_declared_is_read(program, runs):
    found = launch(program, "ci/run.py", ["--gpu"])
    assert not found.unread and [r.arguments for r in found.runs] == runs


@pytest.mark.parametrize(
    "program",
    [
        "import pytest, os\npytest.main(os.environ['ARGS'].split())",
        "import pytest\nrun = pytest.main\nrun(['x'])",
        "import pytest\npytest.main(['x'], plugins=[], extra=1)",
    ],
)
def test_a_python_program_outside_the_subset_is_unread(program):
    assert launch(program, "ci/run.py", []).unread


def test_a_failing_exit_is_a_path_the_reading_excludes_and_an_exit_0_one_it_keeps():
    failing = commands('if [ "$A" = 1 ]; then\n  exit 3\nfi\npytest tests/k\n', ".", ("pytest",))
    succeeding = commands('if [ "$A" = 1 ]; then\n  exit 0\nfi\npytest tests/k\n', ".", ("pytest",))
    assert [c.conditions for c in failing] == [()]
    assert [len(c.conditions) for c in succeeding] == [1] and "did not exit" in succeeding[0].conditions[0]


def test_an_assignment_in_an_if_condition_stays_in_the_shell():
    (command,) = commands('if ! K=$(make-filter); then\n  exit 1\nfi\npytest tests -k "$K"\n', ".", ("pytest",), {"K": "old"})
    assert command.words[-1] == "$K" and dict(command.env)["K"].startswith("${{ run time")
