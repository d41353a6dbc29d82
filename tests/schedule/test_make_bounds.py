"""Hostile Makefiles: every bound of the Makefile reader holds across calls (variables nested to expand to
gigabytes, a Makefile that includes itself, sub-makes calling each other, long prerequisite chains, many
run-time conditionals), and the call is then unread with the bound named, never a traceback nor a verdict.
The work each case costs is checked through the reader's own count (`MakeRun.spent`); its time and memory are
measured by `ci/make_bounds.py`. Every fixture is written here."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from matrix.schedule.make.outcome import MakeRun
from matrix.schedule.make.targets import make_call
from matrix.schedule.make.variables import MAX_CHARS, MAX_STEPS, STEP_CHARS
from matrix.schedule.make.worlds import read_make
from tests.schedule.make_oracle import SandboxFiles, write
from tests.schedule.test_make_reader import paths, reasons, repo, schedule_of

WORST = MAX_CHARS + STEP_CHARS * MAX_STEPS + 10_000_000  # what one read may cost, with slack for one last piece


def nested(levels: int, fan: int) -> str:
    """Variables each naming the one below `fan` times: about fan**levels characters, in a small file."""
    lines = ["L0 = " + " ".join(["word"] * fan)]
    lines += [f"L{i} = " + " ".join([f"$(L{i - 1})"] * fan) for i in range(1, levels + 1)]
    return "\n".join(lines) + f"\ncheck:\n\tpytest tests $(L{levels})\n"


CASES: dict[str, tuple[Mapping[str, str], str]] = {
    "nested-recursive": ({"Makefile": nested(9, 10)}, "passes the bound"),
    "nested-simple": ({"Makefile": nested(9, 10).replace(" = ", " := ")}, "passes the bound"),
    "self-include": ({"Makefile": "include Makefile\ncheck:\n\tpytest tests\n"}, "includes nested deeper"),
    "make-cycle": ({"Makefile": "check:\n\t$(MAKE) check\n\tpytest tests\n"}, "make calls itself again"),
    "make-spiral": ({"Makefile": "X ?= a\ncheck:\n\t$(MAKE) check X=$(X)x\n"}, "sub-makes nested deeper"),
    "long-chain": (
        {"Makefile": "check: t0\n" + "".join(f"t{i}: t{i + 1}\n" for i in range(400)) + "t400:\n\tpytest tests\n"},
        "prerequisites nested deeper",
    ),
    "foreach-square": (
        {
            "Makefile": "W := "
            + " ".join(f"w{i}" for i in range(800))
            + "\ncheck:\n\tpytest $(foreach a,$(W),$(foreach b,$(W),$(a)$(b)))\n"
        },
        "passes the bound",
    ),
    "many-conditions": (
        {"Makefile": "".join(f"ifdef UNSET_{i}\nX{i} = 1\nendif\n" for i in range(12)) + "check:\n\tpytest tests\n"},
        "more than 5 conditionals on values known only at run time",
    ),
    "call-recursion": ({"Makefile": "F = $(call F,$(1)x)\ncheck:\n\tpytest $(call F,a)\n"}, "nested deeper than"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_makefile_is_bounded_and_unread(name: str, tmp_path: Path) -> None:
    files, named = CASES[name]
    write(tmp_path, files)
    call = make_call(["make", "check"], ".")
    assert call is not None
    run: MakeRun = read_make(call, SandboxFiles(root=tmp_path), {}, open_world=True)
    assert run.spent <= WORST
    assert any(named in p.reason for p in run.problems), [p.reason for p in run.problems]


def test_the_bound_holds_across_calls_of_one_step(tmp_path: Path) -> None:
    """Forty `make` calls of the same hostile Makefile in one step share the step's budget (each spends what the
    ones before left): the calls are unread, not the step's other commands."""
    run = "\n".join(["make check"] * 40 + ["pytest tests/plain"])
    schedule = schedule_of(repo(tmp_path, run, {"Makefile": textwrap.dedent(nested(9, 10))}))
    assert paths(schedule) == [("tests/plain",)]
    assert reasons(schedule) and all("bound" in r or "budget" in r for r in reasons(schedule)), reasons(schedule)
