"""Differential test: the Makefile reader against GNU make itself, on generated Makefiles inside the declared subset
(`matrix/schedule/make/subset.py`): variables of every flavour and origin, conditionals with `else` and nesting,
a target defined twice, includes of generated files, prerequisites, target-specific variables, pattern rules,
canned recipes, `$(MAKE)` calls of another Makefile, command-line variables and an environment. The reader must
agree with make on every command's text (`make -n`) and on the pytest commands a real run starts, in order, with
their arguments, folder and environment (stub `pytest` and `python` record them); a program with one construct
outside the subset must come out unread.

`nox -s tests` runs a few examples; `SPECMATRIX_ORACLE_EXAMPLES=400` (any number) runs a deep pass. The tests need
GNU make (`/usr/bin/make`); they skip where it is missing, and fail instead when `CI` is set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.schedule.make_oracle import MAKE, MakeCase, check, reader_run, real_make, stub_folder, write

EXAMPLES = int(os.environ.get("SPECMATRIX_ORACLE_EXAMPLES", "12"))

needs_make = pytest.mark.skipif(MAKE is None, reason="GNU make is not installed")

VARIABLES = ["SUITE", "ARGS", "MODE", "EXTRA", "KIND", "FLAGS"]
TARGETS = ["all", "test", "unit", "gpu", "prep", "suite-a", "suite-b", "data.txt"]
WORDS = ["a", "b", "gpu", "tests/a", "x y", "", "  spaced  out ", "-k fast", "cpu"]
VALUES = [
    "a", "b c", "", "tests/a", "$(SUITE)", "$(MODE)x", "$(if $(KIND),k,n)", "  spaced  ", "$(ARGS) more",
    "$(filter tests/%,$(SUITE) tests/q)", "$(subst a,b,$(SUITE))", "$(patsubst %,t/%,$(MODE))", "$(strip  $(EXTRA) z )",
    "$(word 2,$(ARGS) p q)", "$(foreach s,$(SUITE) c,+$(s)+)", "$(call FN,$(MODE))", "$(or $(EXTRA),dflt)",
    "$(and $(MODE),yes)", "$(sort $(SUITE) b a)", "$(addprefix -k ,$(KIND))", "$(origin MODE)", "$(flavor ARGS)",
    "$$HOME", "$(firstword $(SUITE) w)", "$(lastword $(ARGS))", "$(words $(SUITE) $(MODE))", "$(findstring a,$(SUITE))",
    "$(SUITE:a=z)", "$(ARGS:%=+%+)", "$(dir t/u $(KIND))", "$(notdir t/u)", "$(basename a.b)", "$(suffix a.b c)",
    "$(addsuffix .py,$(KIND))", "$(join a b,1 2)", "$(wordlist 1,2,$(ARGS) r s)", "$(filter-out a,$(SUITE) a b)",
    "$(value FN)", "$(if $(MODE),$(MODE),none)", "$(MAKECMDGOALS)", "$(MAKELEVEL)",
]  # fmt: skip
ARGUMENTS = [
    "tests/$(SUITE)", "$(ARGS)", "-k $(KIND)", "$(if $(MODE),-m $(MODE),-m cpu)", "$@", "$<", "$^", "$*", "$(EXTRA)",
    "'$(SUITE)'", "$(FLAGS) x", "\"$(MODE) q\"", "$(foreach s,$(SUITE),t/$(s))", "$(call FN,$@)", "$$KIND",
]  # fmt: skip
CONDITIONS = [
    "ifdef {v}", "ifndef {v}", "ifeq ($({v}),{w})", "ifneq ($({v}),{w})", 'ifeq "$({v})" "{w}"', "ifeq ($({v}),)",
    "ifneq ($(strip $({v})),)", "ifeq ($(origin {v}),environment)", "ifeq ($(origin {v}),command line)",
]  # fmt: skip


@st.composite
def recipe_line(draw: st.DrawFn, level: int) -> str:
    kind = draw(
        st.sampled_from(["pytest", "pytest", "python", "echo", "env", "cd", "continued", "canned", "make", "make", "dollar"])
    )
    args = " ".join(draw(st.lists(st.sampled_from(ARGUMENTS), max_size=3)))
    prefix = draw(st.sampled_from(["", "", "@", "-", "@-", " @"]))
    if kind == "pytest":
        return f"{prefix}pytest {args}"
    if kind == "python":
        return f"{prefix}python -m pytest {args}"
    if kind == "echo":
        return f"{prefix}echo {args}"
    if kind == "env":
        return f"{prefix}{draw(st.sampled_from(VARIABLES))}=set pytest {args}"
    if kind == "cd":
        return f"{prefix}cd sub && pytest {args}"
    if kind == "continued":
        return f"{prefix}pytest {args} \\\n\t  -q \\\n\t{draw(st.sampled_from(ARGUMENTS))}"
    if kind == "canned":
        return "$(CANNED)"
    if kind == "make" and level == 0:
        how = draw(
            st.sampled_from(
                ["$(MAKE) -f sub.mk", "${MAKE} -C sub", "cd sub && $(MAKE)", "make -f sub.mk", "$(MAKE) -f sub.mk SUITE=cl"]
            )
        )
        # No `-` in front: a sub-make's own failure would then be ignored, which the reader lists as unread.
        return f"{prefix.replace('-', '')}{how} {draw(st.sampled_from(['s1', 's2', '']))}"
    return f"{prefix}echo $$$$ $$X done"


@st.composite
def block(draw: st.DrawFn, depth: int, level: int) -> str:
    kind = draw(
        st.sampled_from(
            [
                "assign",
                "assign",
                "assign",
                "rule",
                "rule",
                "rule",
                "cond",
                "target_var",
                "phony",
                "pattern",
                "define",
                "export",
                "goal",
                "include",
                "oneshell",
            ]
        )
    )
    variable = draw(st.sampled_from(VARIABLES))
    if kind == "assign":
        modifier = draw(st.sampled_from(["", "", "", "override ", "export "]))
        operator = draw(st.sampled_from(["=", ":=", "::=", "?=", "+="]))
        return f"{modifier}{variable} {operator} {draw(st.sampled_from(VALUES))}"
    if kind == "rule":
        targets = draw(st.lists(st.sampled_from(TARGETS), min_size=1, max_size=2, unique=True))
        names = [t for t in TARGETS if t not in targets]
        prerequisites = draw(st.lists(st.sampled_from(names), max_size=2, unique=True))
        order_only = draw(st.lists(st.sampled_from(names), max_size=1))
        head = f"{' '.join(targets)}: {' '.join(prerequisites)}" + (f" | {' '.join(order_only)}" if order_only else "")
        lines = draw(st.lists(recipe_line(level), max_size=3))
        if draw(st.booleans()) and lines:
            inner = draw(st.sampled_from(CONDITIONS)).format(v=draw(st.sampled_from(VARIABLES)), w=draw(st.sampled_from(WORDS)))
            return (
                head
                + "\n"
                + "\n".join("\t" + line for line in lines[:1])
                + f"\n{inner}\n"
                + "\n".join("\t" + line for line in lines[1:])
                + "\nelse\n\techo other\nendif"
            )
        if draw(st.booleans()) and draw(st.booleans()):
            return head + " ; " + (lines[0] if lines else "echo inline")
        return head + "".join("\n\t" + line for line in lines)
    if kind == "cond" and depth < 2:
        condition = draw(st.sampled_from(CONDITIONS)).format(v=variable, w=draw(st.sampled_from(WORDS)))
        body = draw(st.lists(block(depth + 1, level), min_size=1, max_size=3))
        text = condition + "\n" + "\n".join(body)
        if draw(st.booleans()):
            other = draw(st.lists(block(depth + 1, level), min_size=1, max_size=2))
            chained = draw(st.booleans())
            middle = "else " + draw(st.sampled_from(CONDITIONS)).format(v=variable, w="b") if chained else "else"
            text += f"\n{middle}\n" + "\n".join(other)
        return text + "\nendif"
    if kind == "target_var":
        target = draw(st.sampled_from(TARGETS[:-1]))
        modifier = draw(st.sampled_from(["", "", "export ", "override "]))
        operator = draw(st.sampled_from(["=", ":=", "?=", "+="]))
        return f"{target}: {modifier}{variable} {operator} {draw(st.sampled_from(VALUES))}"
    if kind == "phony":
        return ".PHONY: " + " ".join(draw(st.lists(st.sampled_from(TARGETS), min_size=1, max_size=4)))
    if kind == "pattern":
        return "suite-%: prep\n\tpytest tests/$* -k $@ $(SUITE)"
    if kind == "define":
        operator = draw(st.sampled_from(["", " =", " :="]))
        return f"define CANNED{operator}\n@pytest canned $(MODE)\n-echo second $@\nendef\nFN = tests/$(1)$(EXTRA)"
    if kind == "export":
        return draw(
            st.sampled_from(
                [f"export {variable}", f"unexport {variable}", "export", f"export {variable} MODE", ".EXPORT_ALL_VARIABLES:",
                 f"undefine {variable}", f"override undefine {variable}", f"$(error stop {variable})", f"$(info info: {variable})"]
            )
        )  # fmt: skip
    if kind == "goal":
        return f".DEFAULT_GOAL := {draw(st.sampled_from(TARGETS[:-1]))}"
    if kind == "include" and level == 0 and depth == 0:
        name = draw(st.sampled_from(["inc1.mk", "inc2.mk", "missing.mk"]))
        directive = draw(st.sampled_from(["include", "-include", "sinclude"]))
        return f"{directive} {name}" if name != "missing.mk" else f"-include {name}"
    if kind == "oneshell" and draw(st.booleans()):
        return ".ONESHELL:"
    return f"{variable} += {draw(st.sampled_from(VALUES))}"


@st.composite
def makefile(draw: st.DrawFn, level: int, size: int = 8) -> str:
    return "\n".join(draw(st.lists(block(0, level), min_size=1, max_size=size))) + "\n"


@st.composite
def base_rules(draw: st.DrawFn) -> str:
    """A rule for every target (most goals and prerequisites then exist), recipes drawn like any other."""
    out = []
    for target in TARGETS[:-1]:
        prerequisites = draw(st.lists(st.sampled_from([t for t in TARGETS if t != target]), max_size=2, unique=True))
        lines = draw(st.lists(recipe_line(0), min_size=1, max_size=2))
        out.append(f"{target}: {' '.join(prerequisites)}" + "".join("\n\t" + line for line in lines))
    return "\n".join(out) + "\n"


@st.composite
def cases(draw: st.DrawFn) -> MakeCase:
    case = MakeCase()
    case.files["Makefile"] = draw(base_rules()) + draw(makefile(0))
    for name in ("inc1.mk", "inc2.mk"):
        case.files[name] = draw(makefile(1, 3))
    sub = "s1:\n\tpytest sub-one $(SUITE) $(MAKELEVEL)\ns2: s1\n\tpython -m pytest sub-two $(MODE)\n"
    sub += draw(makefile(1, 3))
    case.files["sub.mk"] = sub
    case.files["sub/Makefile"] = sub
    case.files["data.txt"] = "data\n"
    case.env = {k: draw(st.sampled_from(WORDS)) for k in draw(st.lists(st.sampled_from(VARIABLES), max_size=3, unique=True))}
    goals = draw(st.lists(st.sampled_from(TARGETS), max_size=2))
    assignments = [
        f"{k}={draw(st.sampled_from(WORDS))}" for k in draw(st.lists(st.sampled_from(VARIABLES), max_size=2, unique=True))
    ]
    options = draw(st.sampled_from([[], [], [], ["-B"], ["-f", "Makefile"], ["-k"], ["-s"]]))
    case.arguments = [*options, *assignments, *goals]
    if "MAKE)" in "".join(case.files.values()) or "MAKE}" in "".join(case.files.values()) or "make -f" in case.files["Makefile"]:
        # A sub-make inside a several-line .ONESHELL script is outside the subset (subset.py).
        case.files = {k: v.replace(".ONESHELL:", "") for k, v in case.files.items()}
    return case


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stub_folder(tmp_path_factory.mktemp("stub"))


@needs_make
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 20,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases())
def test_the_reader_agrees_with_gnu_make(case: MakeCase, stub: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    check(case, tmp_path_factory.mktemp("case"), stub)


OUTSIDE = [
    "$(eval X = 1)", "vpath %.py tests", "t: private X = 1", "a:: b", "x.o: %.o: %.c", "a b &: c",
    ".SECONDEXPANSION:", "X := $(file < Makefile)", ".RECIPEPREFIX = >", "%-x: X = 1", ".c.o:\n\tcc $<",
    "load x.so", "unexport", "t: $(shell echo prep)",
]  # fmt: skip


@needs_make
@settings(max_examples=max(EXAMPLES // 3, 4), deadline=None, derandomize=EXAMPLES <= 20, suppress_health_check=list(HealthCheck))
@given(case=cases(), outside=st.sampled_from(OUTSIDE))
def test_a_program_with_a_construct_outside_the_subset_is_unread(
    case: MakeCase, outside: str, stub: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    case.files["Makefile"] = outside + "\n" + case.files["Makefile"]
    check(case, tmp_path_factory.mktemp("case"), stub, inside=False)


@needs_make
def test_the_oracle_fails_on_a_planted_reader_bug(monkeypatch: pytest.MonkeyPatch, stub: Path, tmp_path: Path) -> None:
    """A reader that keeps the first of two recipes for a target (GNU make runs the last) disagrees with make."""
    from matrix.schedule.make import run

    case = MakeCase(files={"Makefile": "test:\n\tpytest tests/first\ntest:\n\tpytest tests/second\n"}, arguments=["test"])
    check(case, tmp_path / "good", stub)
    monkeypatch.setattr(run, "_last", lambda items: items[0])
    with pytest.raises(AssertionError, match="pytest commands differ"):
        check(case, tmp_path / "planted", stub)


@needs_make
def test_the_oracle_fails_when_simple_and_recursive_flavours_are_confused(
    monkeypatch: pytest.MonkeyPatch, stub: Path, tmp_path: Path
) -> None:
    """`:=` expanded at use (as `=`) is caught: make ran `pytest one`."""
    from matrix.schedule.make import assign

    case = MakeCase(files={"Makefile": "A = one\nB := $(A)\nA = two\nt:\n\tpytest $(B)\n"}, arguments=["t"])
    check(case, tmp_path / "good", stub)
    monkeypatch.setattr(assign, "SIMPLE_OPERATORS", ())
    with pytest.raises(AssertionError, match="pytest commands differ"):
        check(case, tmp_path / "planted", stub)


def test_the_dry_run_and_stub_helpers_see_what_make_runs(stub: Path, tmp_path: Path) -> None:
    if MAKE is None:
        pytest.skip("GNU make is not installed")
    case = MakeCase(files={"Makefile": "t:\n\t@SUITE=x pytest a 'b c'\n"}, arguments=["t"], env={"MODE": "m"})
    root = tmp_path / "repo"
    write(root, case.files)
    real = real_make(root, stub, case)
    assert real.printed == ("SUITE=x pytest a 'b c'",)
    (call,) = real.calls
    assert call[:3] == ("pytest", ("a", "b c"), ".") and dict(call[3])["SUITE"] == "x" and dict(call[3])["MODE"] == "m"
    assert reader_run(root, stub, case).problems == ()


@needs_make
def test_an_export_of_a_variable_an_override_holds_marks_it(stub: Path, tmp_path: Path) -> None:
    """Found by the deep run (400 examples): `export X = b` after `override X = a` leaves a, exported."""
    case = MakeCase(files={"Makefile": "t:\n\tpytest\noverride SUITE = a\nexport SUITE = b\n"}, arguments=["t"])
    check(case, tmp_path / "case", stub)


@needs_make
def test_undefine_takes_a_variable_of_the_environment_out_of_recipes(stub: Path, tmp_path: Path) -> None:
    """Found by the deep run (400 examples): after `undefine SUITE` no recipe sees the SUITE make was started with."""
    case = MakeCase(files={"Makefile": "t:\n\tpytest\nSUITE = a\nundefine SUITE\n"}, arguments=["t"], env={"SUITE": "b"})
    check(case, tmp_path / "case", stub)


@needs_make
def test_a_recipe_that_expands_to_nothing_builds_no_environment(stub: Path, tmp_path: Path) -> None:
    """Found by the deep run: an empty recipe line runs nothing, so a self-referencing exported variable never stops
    make."""
    case = MakeCase(
        files={"Makefile": "all:\n\t$(CANNED)\nSUITE = $(foreach s,$(SUITE) c,+$(s)+)\n"}, arguments=[], env={"SUITE": "a"}
    )
    check(case, tmp_path / "case", stub)


@needs_make
def test_a_name_both_normal_and_order_only_stands_first_in_all_prerequisites(stub: Path, tmp_path: Path) -> None:
    """Found by the deep run: `$^` lists `unit` where its order-only mention stands; `$+` keeps the normal order."""
    text = "t: test unit\n\t@:\nt: | unit\n\t@:\nt:\n\tpytest $^ + $+\ntest unit:\n\t@:\n"
    check(MakeCase(files={"Makefile": text}, arguments=["t"]), tmp_path / "case", stub)


@needs_make
def test_wordlist_keeps_the_blanks_between_its_words(stub: Path, tmp_path: Path) -> None:
    """Found by the deep run: `$(wordlist 1,2,...)` is the text from the first word to the last, blanks kept."""
    case = MakeCase(
        files={"Makefile": "SUITE = $(wordlist 1,2,$(ARGS) r s)\nexport SUITE\nt:\n\tpytest\n"},
        arguments=["t"],
        env={"ARGS": "  spaced  out "},
    )
    check(case, tmp_path / "case", stub)


@needs_make
def test_one_shell_strips_the_prefixes_of_lines_a_variable_expands_to(stub: Path, tmp_path: Path) -> None:
    """Found by the deep run: under .ONESHELL, `-echo` on the second line of a canned recipe loses its `-`."""
    text = ".ONESHELL:\ndefine CANNED\n@pytest canned\n-pytest second $@\nendef\nt:\n\t$(CANNED)\n\techo x \\\n\t-y\n"
    check(MakeCase(files={"Makefile": text}, arguments=["t"]), tmp_path / "case", stub)
