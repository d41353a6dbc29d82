"""Files a step hands work to: `make TARGET` recipes, Modal functions and their GPU, and the scripts a step runs
told apart when they cannot be read (too big, not UTF-8, outside the tree), with the files read listed. Every
fixture is written here."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

from matrix.core.loader import load_runners
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.make.targets import make_call
from matrix.schedule.make.worlds import read_make
from matrix.schedule.model import PytestSelection, Schedule

RUNNERS = load_runners()

MAKEFILE = textwrap.dedent(
    """\
    .PHONY: all unit gpu lint
    PYTEST ?= python -m pytest
    FLAGS := -q

    all: lint unit

    # unit tests
    unit:
    \t$(PYTEST) $(FLAGS) \\
    \t\t--ignore=tests/gpu \\
    \t\ttests/

    gpu: prepare
    \t@cd tests && KERNELS=1 $(PYTEST) gpu/
    \tpytest tests/other

    prepare:
    \t-echo preparing

    lint:
    \truff check .
    """
)

MODAL_APP = textwrap.dedent(
    """\
    import subprocess
    import modal

    import os

    app = modal.App("suite")
    VERSION = os.environ.get("SUITE_VERSION", "1.0")  # known only at run time


    @app.function(gpu="A100-80GB:2", timeout=600)
    def gpu_suite():
        subprocess.run(["pip install -e ."], check=True, shell=True)
        subprocess.run("make gpu", shell=True, check=True)


    @app.function(gpu="L4")
    def pinned():
        subprocess.run([f"pytest tests/pinned_{VERSION}"], shell=True, check=True)


    @app.function()
    def on_cpu():
        subprocess.run(["python", "-m", "pytest", "tests/cpu"], check=True)
    """
)


def repo(tmp_path: Path, run: str, files: Mapping[str, str | bytes]) -> Path:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    flow = "on: [push]\njobs:\n  t:\n    runs-on: [self-hosted, sm86]\n    steps:\n      - run: |\n" + textwrap.indent(
        run, " " * 10
    )
    (root / ".github" / "workflows" / "ci.yml").write_text(flow + "\n", encoding="utf-8")
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (root / path).write_bytes(content)
        else:
            (root / path).write_text(content, encoding="utf-8")
    return root


def schedule_of(root: Path) -> Schedule:
    return load_schedule(root, RUNNERS, all_readers(), follow_scripts=True)


def selected(schedule: Schedule) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    out = []
    for entry in schedule.entries:
        assert isinstance(entry.selection, PytestSelection)
        out.append((entry.selection.paths, entry.labels))
    return out


def test_a_make_target_runs_its_recipe_and_its_prerequisites(tmp_path: Path) -> None:
    schedule = schedule_of(repo(tmp_path, "make gpu\nmake\nmake nowhere", {"Makefile": MAKEFILE}))
    paths = [p for p, _ in selected(schedule)]
    assert paths == [("tests/gpu",), ("tests/other",), ("tests",)]
    (unit,) = [e for e in schedule.entries if e.selection.paths == ("tests",)]  # type: ignore[union-attr]
    assert isinstance(unit.selection, PytestSelection) and unit.selection.ignore == ("tests/gpu",)
    assert unit.origin.file == "Makefile" and unit.origin.line == 9
    assert any("make target nowhere is not a rule of Makefile" in u.reason for u in schedule.unread)
    assert "Makefile" in schedule.sources


class _Files:
    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files

    def text(self, path: str) -> str | None:
        return self.files.get(path)

    def exists(self, path: str) -> bool:
        return path in self.files

    def names(self, folder: str) -> frozenset[str]:
        return frozenset(p.rpartition("/")[2] for p in self.files if (p.rpartition("/")[0] or ".") == folder)


def test_make_call_reads_directory_file_and_variables() -> None:
    call = make_call(["make", "-C", "sub", "-f", "ci.mk", "N=2", "gpu"], ".")
    assert call is not None
    assert (call.folder, call.makefiles, call.goals, call.variables) == ("sub", ("ci.mk",), ("gpu",), (("N", "=", "2"),))
    run = read_make(make_call(["make", "gpu"], ".") or call, _Files({"Makefile": MAKEFILE}), {})
    assert run.problems == () and [c.text for c in run.commands][1] == "cd tests && KERNELS=1 python -m pytest gpu/"


def test_a_modal_function_runs_on_its_own_gpu(tmp_path: Path) -> None:
    files = {"Makefile": MAKEFILE, "dev/modal_app.py": MODAL_APP}
    run = "modal run -m dev.modal_app::gpu_suite\nmodal run dev/modal_app.py::on_cpu\nmodal run -m dev.modal_app::pinned"
    schedule = schedule_of(repo(tmp_path, run, files))
    assert selected(schedule) == [
        (("tests/gpu",), ("modal-a100-80gb-x2",)),
        (("tests/other",), ("modal-a100-80gb-x2",)),
        (("tests/cpu",), ("modal-cpu",)),
    ]
    assert all(any("Modal" in a for a in e.assumptions) for e in schedule.entries)
    assert any("built at run time in the Modal function pinned" in u.reason for u in schedule.unread)
    assert "dev/modal_app.py" in schedule.sources


def test_a_modal_function_that_is_not_there_is_unread(tmp_path: Path) -> None:
    schedule = schedule_of(repo(tmp_path, "modal run -m dev.modal_app::gone", {"dev/modal_app.py": MODAL_APP}))
    assert schedule.entries == ()
    assert any("no Modal function gone" in u.reason for u in schedule.unread)


def test_a_pattern_rule_makes_a_target_no_rule_names() -> None:
    makefile = "suite-%:\n\tpytest tests/$*  # $@\n\nlint:\n\truff check .\n"
    run = read_make(make_call(["make", "suite-gpu"], ".") or make_call(["make"], "."), _Files({"Makefile": makefile}), {})  # type: ignore[arg-type]
    assert run.problems == ()
    assert [c.text for c in run.commands] == ["pytest tests/gpu  # suite-gpu"]


def test_a_script_named_in_a_run_time_folder_is_unread_as_such(tmp_path: Path) -> None:
    run = 'WORK="$(mktemp -d)"\n(cd "$WORK" && bash scripts/part1.sh)'
    schedule = schedule_of(repo(tmp_path, run, {"scripts/part1.sh": "pytest tests/a\n"}))
    assert schedule.entries == ()
    assert [u.reason for u in schedule.unread] == ["the script's path is known only at run time"]


TOX_INI = textwrap.dedent(
    """\
    [tox]
    envlist = unit

    [testenv]
    commands =
        pytest {posargs:tests/unit}

    [testenv:gpu]
    setenv = KERNELS=1
    commands =
        python -m pytest tests/gpu -m "not slow"
        py311: pytest tests/only_py311
    """
)

NOXFILE = textwrap.dedent(
    """\
    import nox


    @nox.session(python="3.11")
    def unit(session):
        session.install("-e", ".")
        session.run("pytest", "tests/unit", *session.posargs)


    @nox.session(name="gpu-tests")
    def gpu(session):
        session.run("pytest", "tests/gpu")
        session.run("pytest", f"tests/{session.python}")
    """
)


def test_tox_environments_run_their_commands(tmp_path: Path) -> None:
    run = "tox -e gpu\ntox -- tests/picked\ntox -e missing"
    schedule = schedule_of(repo(tmp_path, run, {"tox.ini": TOX_INI}))
    assert [p for p, _ in selected(schedule)] == [("tests/gpu",), ("tests/picked",)]
    reasons = [u.reason for u in schedule.unread]
    assert any("py311: pytest tests/only_py311" in r for r in reasons)
    assert any("tox environment missing is not in tox.ini" in r for r in reasons)
    assert "tox.ini" in schedule.sources


def test_nox_sessions_run_their_session_run_calls(tmp_path: Path) -> None:
    run = "nox -s unit -- -k fast\npython -m nox -s gpu-tests"
    schedule = schedule_of(repo(tmp_path, run, {"noxfile.py": NOXFILE}))
    assert [p for p, _ in selected(schedule)] == [("tests/unit",), ("tests/gpu",)]
    unit = schedule.entries[0].selection
    assert isinstance(unit, PytestSelection) and unit.keyword == "fast"
    assert any("known only at run time" in u.reason and "gpu-tests" in u.reason for u in schedule.unread)


CONDITIONAL = textwrap.dedent(
    """\
    KIND = gpu

    test:
    \tpython -m pytest tests/unit $(if $(REPORT),--report-log "$(REPORT)",)
    gpu:
    \tpytest $(if $(KIND),tests/$(KIND),tests/cpu)
    odd:
    \tpytest $(if $(shell ls tests),tests/a,tests/b)
    """
)


def test_a_make_conditional_is_read_both_ways_or_decided(tmp_path: Path) -> None:
    """`$(if COND,THEN,ELSE)`: decided when COND is text (KIND is set in the Makefile); read both ways, each under
    its condition, when COND is known only at run time (a variable nothing sets, which the runner's environment
    may; a `$(shell ...)`)."""
    schedule = schedule_of(repo(tmp_path, "make test\nmake gpu\nmake odd", {"Makefile": CONDITIONAL}))
    assert sorted(p for p, _ in selected(schedule)) == [("tests/a",), ("tests/b",), ("tests/gpu",), ("tests/unit",)]
    (unit,) = [e for e in schedule.entries if e.selection.paths == ("tests/unit",)]  # type: ignore[union-attr]
    assert unit.assumptions == ("runs only if `${REPORT}` is empty (Makefile:4), not known before the run",)
    # The other branch names the report file only at run time: unread, bounded to what it selects.
    assert any("${REPORT}` is not empty" in u.reason and u.reach == ("tests/unit",) for u in schedule.unread)
    (odd,) = [e for e in schedule.entries if e.selection.paths == ("tests/a",)]  # type: ignore[union-attr]
    assert odd.assumptions == ("runs only if `$(ls tests)` is not empty (Makefile:8), not known before the run",)


def test_an_env_value_with_run_time_parts_is_unknown_where_a_step_uses_it(tmp_path: Path) -> None:
    """`LOG_DIR: /logs/${{ github.run_id }}` is known only at run time; a step writing `> ${{ env.LOG_DIR }}/x.log`
    still runs the pytest command before it (the expression text was put into the script, which no shell reads)."""
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(
        "on: [push]\nenv:\n  LOG_DIR: /logs/${{ github.run_id }}\njobs:\n  t:\n    runs-on: [self-hosted, sm86]\n"
        "    steps:\n      - run: |\n          python -m pytest tests/gpu > ${{ env.LOG_DIR }}/out.log 2>&1\n",
        encoding="utf-8",
    )
    schedule = schedule_of(root)
    assert [p for p, _ in selected(schedule)] == [("tests/gpu",)]
    assert not any("cannot read" in u.reason for u in schedule.unread)


FSTRING_APP = """
import modal

PINNED = "2.3.1"
LATER = "9.9"
LATER = "10.0"
app = modal.App("suite")


@app.function(gpu="L4")
def oldest():
    import subprocess

    subprocess.run([f"pip install 'lensmaker=={PINNED}'"], shell=True, check=True)
    subprocess.run([f"pip install 'prism=={LATER}'"], shell=True, check=True)
    subprocess.run(f"pip install 'beam=={PINNED!r}'", shell=True, check=True)
"""


def test_an_f_string_of_module_constants_is_read_in_a_modal_function() -> None:
    from matrix.schedule.commands.modal_functions import read_function

    found = read_function(FSTRING_APP, "oldest")
    assert not isinstance(found, str)
    lines = [line for line in found.script.splitlines() if line]
    # A constant bound once is put in; one bound twice, or a conversion (`!r`), leaves the install unread.
    assert lines == ["pip install 'lensmaker==2.3.1'", "pip install --built-at-run-time", "pip install --built-at-run-time"]
