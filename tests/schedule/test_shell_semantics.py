"""`run:` blocks and the scripts they call, read as bash reads them: comments, arrays, branches a known variable
decides (and the condition kept where it is not known), functions, `cd`, env prefixes, `bash -c`, `docker exec`,
pytest behind launchers, and what cannot be read listed rather than dropped. Every fixture is written here."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.commands.pytest_command import PytestCommandReader, read_script
from matrix.schedule.github.walk import read_github
from matrix.schedule.model import Origin, PytestSelection, Schedule, ScheduleEntry, StepContext
from matrix.schedule.shell.commands import commands

RUNNERS = load_runners()
READERS = (PytestCommandReader(),)
ORIGIN = Origin(file=".github/workflows/ci.yml", line=9, job="gpu")


def workflow(run: str, env: Mapping[str, str] | None = None) -> str:
    """One job on an sm86 runner whose only step runs `run`."""
    env_block = "".join(f"      {k}: {v!r}\n" for k, v in (env or {}).items())
    body = textwrap.indent(run, " " * 10)
    return (
        "on: [push]\njobs:\n  gpu:\n    runs-on: [self-hosted, sm86]\n"
        + ("    env:\n" + env_block if env_block else "")
        + "    steps:\n      - run: |\n"
        + body
        + "\n"
    )


def read(tmp_path: Path, run: str, env: Mapping[str, str] | None = None, scripts: Mapping[str, str] | None = None) -> Schedule:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(workflow(run, env), encoding="utf-8")
    for path, text in (scripts or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")

    def load(path: str) -> str | None:
        return (root / path).read_text(encoding="utf-8") if (root / path).is_file() else None

    return read_github(root, READERS, RUNNERS, scripts=load)


def paths(schedule: Schedule) -> list[tuple[str, ...]]:
    return [sel(e).paths for e in schedule.entries]


def sel(entry: ScheduleEntry) -> PytestSelection:
    assert isinstance(entry.selection, PytestSelection)
    return entry.selection


def test_a_commented_out_pytest_line_runs_nothing(tmp_path: Path) -> None:
    schedule = read(tmp_path, "# pytest tests/old\npytest tests/new  # pytest tests/trailing")
    assert paths(schedule) == [("tests/new",)]


def test_an_array_expands_to_its_words(tmp_path: Path) -> None:
    run = 'PYTEST=(python -m pytest -x --ignore=tests/slow)\n"${PYTEST[@]}" tests/kernels'
    (entry,) = read(tmp_path, run).entries
    assert sel(entry).paths == ("tests/kernels",)
    assert sel(entry).ignore == ("tests/slow",)


@pytest.mark.parametrize(("value", "runs"), [("0", False), ("1", True)])
def test_an_if_on_a_variable_the_job_sets_is_decided(tmp_path: Path, value: str, runs: bool) -> None:
    run = 'if [ "$RUN_GPU_TESTS" = "1" ]; then\n  pytest tests/gpu\nfi\npytest tests/cpu'
    schedule = read(tmp_path, run, env={"RUN_GPU_TESTS": value})
    assert (("tests/gpu",) in paths(schedule)) is runs
    gpu = [e for e in schedule.entries if sel(e).paths == ("tests/gpu",)]
    assert all(any("RUN_GPU_TESTS=1" in a for a in e.assumptions) for e in gpu)


def test_an_if_on_an_unknown_variable_is_conditional_and_says_so(tmp_path: Path) -> None:
    run = 'if [ "$RUN_GPU_TESTS" = "1" ]; then\n  pytest tests/gpu\nelse\n  pytest tests/cpu\nfi'
    schedule = read(tmp_path, run)
    by_path = {sel(e).paths: e.assumptions for e in schedule.entries}
    assert any('runs only if `[ "$RUN_GPU_TESTS" = "1" ]`' in a for a in by_path[("tests/gpu",)])
    assert any("runs only if not" in a for a in by_path[("tests/cpu",)])


def test_a_case_branch_that_cannot_match_runs_nothing(tmp_path: Path) -> None:
    run = 'case "$ARCH" in\n  b200|gb200) pytest tests/blackwell ;;\n  h*) pytest tests/hopper ;;\n  *) echo skip ;;\nesac'
    assert paths(read(tmp_path, run, env={"ARCH": "h100"})) == [("tests/hopper",)]
    unknown = read(tmp_path, run)
    assert sorted(paths(unknown)) == [("tests/blackwell",), ("tests/hopper",)]
    assert all(any("matches" in a for a in e.assumptions) for e in unknown.entries)


def test_a_test_and_a_list(tmp_path: Path) -> None:
    run = '[ "$SKIP" = "true" ] || pytest tests/a\n[ -n "$FAST" ] && pytest tests/b'
    assert paths(read(tmp_path, run, env={"SKIP": "true", "FAST": ""})) == []
    assert paths(read(tmp_path, run, env={"SKIP": "false", "FAST": "1"})) == [("tests/a",), ("tests/b",)]


def test_cd_in_a_subshell_stays_there_and_prefixes_and_wrappers_reach_the_reader(tmp_path: Path) -> None:
    run = textwrap.dedent(
        """\
        (cd sub && pytest one)
        CUDA_LAUNCH_BLOCKING=1 pytest two
        bash -c "cd deep && pytest three"
        docker exec -e MODE=fast box pytest four
        sudo -E env -u HOME timeout 60 pytest five
        """
    )
    schedule = read(tmp_path, run)
    assert paths(schedule) == [("sub/one",), ("two",), ("deep/three",), ("four",), ("five",)]
    env = {sel(e).paths: e.env_map for e in schedule.entries}
    assert env[("two",)]["CUDA_LAUNCH_BLOCKING"] == "1"
    assert env[("four",)]["MODE"] == "fast"


def test_a_function_runs_with_its_arguments_and_an_uncalled_one_is_listed(tmp_path: Path) -> None:
    run = 'run_tests() {\n  pytest "$@" -q\n}\nnever() {\n  pytest tests/never\n}\nrun_tests tests/a tests/b'
    schedule = read(tmp_path, run)
    assert paths(schedule) == [("tests/a", "tests/b")]
    assert any("never()" in u.reason for u in schedule.unread)


def test_a_folder_chosen_on_a_branch_is_unread_not_guessed(tmp_path: Path) -> None:
    run = 'if [ "$X" = 1 ]; then cd a; fi\npytest tests'
    schedule = read(tmp_path, run)
    assert schedule.entries == ()
    assert any("known only at run time" in u.reason for u in schedule.unread)


def test_a_statement_the_parser_cannot_read_is_listed(tmp_path: Path) -> None:
    schedule = read(tmp_path, 'pytest tests/ok\nif [ x ]; then pytest "tests/broken; fi')
    assert ("tests/ok",) in paths(schedule)
    assert any("parser cannot read" in u.reason for u in schedule.unread)


def test_a_parse_that_joins_two_lines_into_one_word_is_not_trusted() -> None:
    """The parser reads `cd ..` and a next line `\\;|` as one command in a pipeline, so the folder would stay `sub`;
    bash ends the command at the line break and runs the last line from the checkout's root."""
    found = commands("cd sub && cd ..\n\\;|\nbash scripts/run.sh\n", ".")
    assert [c.unread for c in found if c.unread] and not [c for c in found if c.words[:1] == ("bash",)]


def test_a_commented_out_env_write_sets_nothing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    text = textwrap.dedent(
        """\
        on: [push]
        jobs:
          gpu:
            runs-on: [self-hosted, sm86]
            steps:
              - run: |
                  # echo "GPU_SUITE=1" >> $GITHUB_ENV
                  echo "OTHER=1" >> $GITHUB_ENV
              - run: |
                  if [ "$GPU_SUITE" = "1" ]; then pytest tests/gpu; fi
        """
    )
    (root / ".github" / "workflows" / "ci.yml").write_text(text, encoding="utf-8")
    (entry,) = read_github(root, READERS, RUNNERS).entries
    assert "GPU_SUITE" not in entry.env_map
    assert any("runs only if" in a for a in entry.assumptions)


# --- scripts ----------------------------------------------------------------------------------------------------


def script_result(scripts: Mapping[str, str], env: Mapping[str, str] | None = None):  # type: ignore[no-untyped-def]
    context = StepContext(working_dir=".", env=dict(env or {}), origin=ORIGIN)
    return read_script("ci/run.sh", scripts.get, READERS, context)


def test_a_script_branch_is_decided_by_the_step_env_and_its_condition_kept() -> None:
    scripts = {"ci/run.sh": 'if [[ "$GPU" == "h100" ]]; then\n  pytest tests/h100\nfi\npytest tests/all\n'}
    decided = script_result(scripts, {"GPU": "a10"})
    assert [s.paths for s, _ in decided.selections] == [("tests/all",)]
    unknown = script_result(scripts)
    assert [s.paths for s, _ in unknown.selections] == [("tests/h100",), ("tests/all",)]
    conditions = dict(unknown.conditions)
    assert any("runs only if" in c for c in conditions[unknown.selections[0][0]])


def test_own_folder_idiom_and_a_latin1_comment() -> None:
    scripts = {"ci/run.sh": 'cd "$(dirname "$0")/.."\n# caf\ufffd\npytest tests/x\n'}
    assert [s.paths for s, _ in script_result(scripts).selections] == [("tests/x",)]


# --- pytest behind launchers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "coverage run -m pytest tests/k",
        "coverage run --source=pkg --rcfile .coveragerc -m pytest tests/k",
        "python3 -W error -m pytest tests/k",
        "python -X dev -m pytest tests/k",
        "python3.11 -u -m pytest tests/k",
        "poetry run pytest tests/k",
        "hatch run test:pytest tests/k",
        "pixi run -e gpu pytest tests/k",
        "conda run -n env python -m pytest tests/k",
        "uv run --with x pytest tests/k",
        "xvfb-run -a pytest tests/k",
        "sudo -E pytest tests/k",
        "torchrun --nproc-per-node 2 -m pytest tests/k",
        "python -m torch.distributed.run --nproc_per_node=2 -m pytest tests/k",
        "mpirun -np 2 python -m pytest tests/k",
        "srun --gres=gpu:1 pytest tests/k",
        "env -u CUDA_VISIBLE_DEVICES pytest tests/k",
        "$PYTHON -m pytest tests/k",
        "${PYTHON_BIN} -m pytest tests/k",
    ],
)
def test_a_wrapped_pytest_command_is_read(tmp_path: Path, command: str) -> None:
    schedule = read(tmp_path, command)
    assert paths(schedule) == [("tests/k",)], schedule.unread


def test_pytest_through_an_unknown_launcher_is_unread(tmp_path: Path) -> None:
    schedule = read(tmp_path, "my-launcher --gpus 2 -m pytest tests/k")
    assert schedule.entries == ()
    assert any("my-launcher" in u.reason for u in schedule.unread)


@pytest.mark.parametrize("flag", ["--collect-only", "--co", "--setup-plan", "--fixtures", "--version", "-h"])
def test_a_pytest_command_that_runs_no_test_selects_nothing(tmp_path: Path, flag: str) -> None:
    assert read(tmp_path, f"pytest {flag} tests/k").entries == ()


@pytest.mark.parametrize(
    "command",
    ["python3 -m pip install pytest httpx", "uv pip install pytest ray", "conda install -y pytest", "echo 'python -m pytest x'"],
)
def test_a_command_that_only_names_pytest_selects_nothing_and_is_not_unread(tmp_path: Path, command: str) -> None:
    schedule = read(tmp_path, command)
    assert (schedule.entries, schedule.unread) == ((), ())


def test_pytest_in_a_container_folder_is_unread_not_placed_at_the_root(tmp_path: Path) -> None:
    schedule = read(tmp_path, "docker exec -w /checkout/kernels/tests box python3 -m pytest test_a.py")
    assert schedule.entries == ()
    assert [u.reason for u in schedule.unread] == ["pytest runs in /checkout/kernels/tests, a folder outside the checkout"]


def test_the_last_k_wins_as_in_pytest(tmp_path: Path) -> None:
    (entry,) = read(tmp_path, "pytest tests/k -k fast -k 'not slow'").entries
    assert sel(entry).keyword == "not slow"


def test_commands_keep_their_line_and_conditions() -> None:
    found = commands('echo a\nif [ "$A" = 1 ]; then\n  pytest x\nfi\n', ".", ("pytest",), {"A": "1"})
    (only,) = found
    assert only.line == 3 and only.words == ("pytest", "x") and only.conditions == ('`[ "$A" = 1 ]` is true: A=1',)
