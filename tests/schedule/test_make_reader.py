"""The Makefile reader through the whole schedule: each class of Makefile a CI step hands work to, read as GNU make
runs it (a target given twice, variable flavours, the job's environment, includes, conditionals, sub-makes) or
unread with the construct named. Every fixture is written here, for this test."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.model import PytestSelection, Schedule

RUNNERS = load_runners()


def repo(tmp_path: Path, run: str, files: Mapping[str, str], env: Mapping[str, str] | None = None) -> Path:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    step_env = "".join(f"          {k}: {v}\n" for k, v in (env or {}).items())
    flow = (
        "on: [push]\njobs:\n  t:\n    runs-on: [self-hosted, sm86]\n    steps:\n"
        + (f"      - env:\n{step_env}        run: |\n" if env else "      - run: |\n")
        + textwrap.indent(run, " " * 10)
        + "\n"
    )
    (root / ".github" / "workflows" / "ci.yml").write_text(flow, encoding="utf-8")
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(content), encoding="utf-8")
    return root


def schedule_of(root: Path) -> Schedule:
    return load_schedule(root, RUNNERS, all_readers(), follow_scripts=True)


def paths(schedule: Schedule) -> list[tuple[str, ...]]:
    out = []
    for entry in schedule.entries:
        assert isinstance(entry.selection, PytestSelection)
        out.append(entry.selection.paths)
    return out


def reasons(schedule: Schedule) -> list[str]:
    return [u.reason for u in schedule.unread]


def test_a_target_given_twice_runs_its_last_recipe(tmp_path: Path) -> None:
    makefile = """\
        check:
        \tpytest tests/old_suite
        check:
        \tpytest tests/new_suite
        """
    schedule = schedule_of(repo(tmp_path, "make check", {"Makefile": makefile}))
    assert paths(schedule) == [("tests/new_suite",)]
    assert schedule.entries[0].origin.line == 4


@pytest.mark.parametrize(("operator", "expected"), [(":=", "tests/early"), ("=", "tests/late"), ("::=", "tests/early")])
def test_simple_variables_expand_when_assigned_recursive_ones_when_used(tmp_path: Path, operator: str, expected: str) -> None:
    makefile = f"""\
        WHERE = early
        TARGET {operator} tests/$(WHERE)
        WHERE = late
        check:
        \tpytest $(TARGET)
        """
    assert paths(schedule_of(repo(tmp_path, "make check", {"Makefile": makefile}))) == [(expected,)]


def test_a_conditional_assignment_yields_to_the_jobs_environment(tmp_path: Path) -> None:
    makefile = """\
        SUITE ?= tests/cpu
        check:
        \tpytest $(SUITE)
        """
    schedule = schedule_of(repo(tmp_path, "make check", {"Makefile": makefile}, env={"SUITE": "tests/gpu"}))
    assert paths(schedule) == [("tests/gpu",)]


def test_append_override_and_the_command_line(tmp_path: Path) -> None:
    makefile = """\
        PATHS = tests/unit
        PATHS += tests/more
        override EXTRA += tests/always
        KEEP = tests/file_value
        check:
        \tpytest $(PATHS) $(EXTRA) $(KEEP)
        """
    run = "make check EXTRA=tests/given KEEP=tests/line_value"
    assert paths(schedule_of(repo(tmp_path, run, {"Makefile": makefile}))) == [
        ("tests/unit", "tests/more", "tests/given", "tests/always", "tests/line_value")
    ]


def test_an_exported_variable_reaches_the_recipes_shell(tmp_path: Path) -> None:
    makefile = """\
        export SUITE = tests/exported
        check:
        \tpytest $$SUITE
        """
    assert paths(schedule_of(repo(tmp_path, "make check", {"Makefile": makefile}))) == [("tests/exported",)]


def test_an_included_file_redefines_a_target_and_a_variable(tmp_path: Path) -> None:
    files = {
        "Makefile": """\
            SUITE = tests/base
            check:
            \tpytest $(SUITE) -k first
            include ci/overrides.mk
            """,
        "ci/overrides.mk": """\
            SUITE = tests/included
            check:
            \tpytest $(SUITE) -k second
            """,
    }
    schedule = schedule_of(repo(tmp_path, "make check", files))
    assert paths(schedule) == [("tests/included",)]
    assert schedule.entries[0].origin.file == "ci/overrides.mk"
    assert "ci/overrides.mk" in schedule.sources


def test_a_missing_include_is_unread_a_missing_optional_one_skipped(tmp_path: Path) -> None:
    files = {
        "Makefile": "-include local.mk\ncheck:\n\tpytest tests/a\n",
        "ci.mk": "include generated.mk\nrun:\n\tpytest tests/b\n",
    }
    schedule = schedule_of(repo(tmp_path, "make check\nmake -f ci.mk run", files))
    assert paths(schedule) == [("tests/a",)]
    assert any("include generated.mk: not in the checkout" in r for r in reasons(schedule))


def test_conditionals_with_else_and_nesting_follow_the_environment(tmp_path: Path) -> None:
    makefile = """\
        ifndef ON_GPU
        SUITE = tests/cpu
        else
          ifeq ($(ON_GPU),hopper)
          SUITE = tests/hopper
          else ifeq ($(ON_GPU),ampere)
          SUITE = tests/ampere
          else
          SUITE = tests/other_gpu
          endif
        endif
        check:
        \tpytest $(SUITE)
        """
    for value, expected in (("hopper", "tests/hopper"), ("ampere", "tests/ampere"), ("volta", "tests/other_gpu")):
        where = tmp_path / value
        schedule = schedule_of(repo(where, "make check", {"Makefile": makefile}, env={"ON_GPU": value}))
        assert paths(schedule) == [(expected,)], value


def test_a_condition_on_a_variable_nothing_sets_is_read_both_ways(tmp_path: Path) -> None:
    makefile = """\
        ifdef FULL
        SUITE = tests
        else
        SUITE = tests/quick
        endif
        check:
        \tpytest $(SUITE)
        """
    schedule = schedule_of(repo(tmp_path, "make check", {"Makefile": makefile}))
    assert sorted(paths(schedule)) == [("tests",), ("tests/quick",)]
    assumptions = {e.selection.paths: e.assumptions for e in schedule.entries}  # type: ignore[union-attr]
    assert assumptions[("tests",)] == ("runs only if the environment sets FULL (Makefile:1), not known before the run",)
    assert assumptions[("tests/quick",)] == (
        "runs only if the environment does not set FULL (Makefile:1), not known before the run",
    )


def test_recursive_make_calls_are_followed(tmp_path: Path) -> None:
    files = {
        "Makefile": """\
            all:
            \t$(MAKE) unit
            \t${MAKE} -C kernels gpu SUITE=tests/kernels
            \tmake -f extra.mk slow
            unit:
            \tpytest tests/unit
            """,
        "kernels/Makefile": "gpu:\n\tpytest $(SUITE) -m gpu\n",
        "extra.mk": "slow:\n\tpython -m pytest tests/slow\n",
    }
    schedule = schedule_of(repo(tmp_path, "make", files))
    assert paths(schedule) == [("tests/unit",), ("kernels/tests/kernels",), ("tests/slow",)]
    assert {"Makefile", "kernels/Makefile", "extra.mk"} <= set(schedule.sources)


def test_a_prerequisite_runs_before_and_a_file_target_is_up_to_date(tmp_path: Path) -> None:
    files = {
        "Makefile": """\
            check: prepare docs
            \tpytest tests/main
            prepare:
            \tpytest tests/prepare
            docs:
            \tpytest tests/docs_never
            """,
        "docs/index.md": "# docs\n",
    }
    schedule = schedule_of(repo(tmp_path, "make check", files))
    # `docs` is a folder of the checkout and not .PHONY: it is up to date, its recipe never runs.
    assert paths(schedule) == [("tests/prepare",), ("tests/main",)]


def test_target_specific_variables_reach_the_prerequisites_they_make(tmp_path: Path) -> None:
    makefile = """\
        MARK = cpu
        gpu-check: MARK = gpu
        gpu-check: inner
        inner:
        \tpytest tests -m $(MARK)
        """
    schedule = schedule_of(repo(tmp_path, "make gpu-check", {"Makefile": makefile}))
    (entry,) = schedule.entries
    assert isinstance(entry.selection, PytestSelection) and entry.selection.markexpr == "gpu"


def test_variables_nested_past_the_bound_are_unread_not_expanded(tmp_path: Path) -> None:
    """Six levels of a variable naming the one below ten times: a million words. The read stops at its bound and
    says so; it never hands the shell reader a command of that size."""
    lines = ["L0 = " + " ".join(["word"] * 10)]
    lines += [f"L{i} = " + " ".join([f"$(L{i - 1})"] * 10) for i in range(1, 7)]
    makefile = "\n".join(lines) + "\ncheck:\n\tpytest tests $(L6)\n"
    schedule = schedule_of(repo(tmp_path, "make check\npytest tests/other", {"Makefile": makefile}))
    assert paths(schedule) == [("tests/other",)]
    assert any("passes the bound" in r for r in reasons(schedule)), reasons(schedule)


@pytest.mark.parametrize(
    ("makefile", "named"),
    [
        ("$(eval SUITE = tests/x)\ncheck:\n\tpytest $(SUITE)\n", "the function eval"),
        ("check:: prep\n\tpytest tests\n", "double-colon"),
        ("vpath %.py tests\ncheck:\n\tpytest tests\n", "'vpath'"),
        ("check: private X = 1\ncheck:\n\tpytest tests\n", "private"),
    ],
)
def test_a_construct_outside_the_subset_is_unread_never_guessed(tmp_path: Path, makefile: str, named: str) -> None:
    schedule = schedule_of(repo(tmp_path, "make check", {"Makefile": makefile}))
    assert paths(schedule) == []
    assert any(named in r for r in reasons(schedule)), reasons(schedule)


def test_make_error_stops_what_follows_and_is_listed(tmp_path: Path) -> None:
    makefile = """\
        check: first second
        first:
        \tpytest tests/first
        second:
        \t$(error no second suite here)
        """
    schedule = schedule_of(repo(tmp_path, "make check", {"Makefile": makefile}))
    assert paths(schedule) == [("tests/first",)]
    assert any("make stops" in r and "no second suite here" in r for r in reasons(schedule))
