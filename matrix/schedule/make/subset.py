"""The part of GNU make's language the Makefile reader models, in one place: every directive, assignment flavour,
function, special variable and target, rule form, recipe feature and command-line option it reads exactly, the
ones it reads as values known only at run time, and the ones outside, which leave the `make` call unread with
the construct named (never a guess). `tests/schedule/test_make_subset.py` walks this table: each construct outside
comes out unread, and each example of a modelled one agrees with GNU make 4.3 itself.

Semantics are GNU make 4.3's (GNU make manual, https://www.gnu.org/software/make/manual/make.html, and the 4.3
sources named in `read.py`, `expand.py`, `run.py`); the job's environment is what the workflow sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Support(StrEnum):
    """How the reader takes a construct."""

    MODELLED = "modelled"  # read exactly as GNU make does
    RUN_TIME = "run-time"  # its value is known only at run time: opaque text a recipe shows, both ways in a conditional
    UNREAD = "unread"  # the call is unread, the construct named


class Kind(StrEnum):
    DIRECTIVE = "directive"
    ASSIGNMENT = "assignment"
    FUNCTION = "function"
    VARIABLE = "variable"
    SPECIAL_TARGET = "special target"
    RULE = "rule"
    RECIPE = "recipe"
    OPTION = "option"


@dataclass(frozen=True, kw_only=True)
class Construct:
    """One construct: what the reader does with it, and a Makefile (goal `t`) that uses it; `named` is the text
    an unread reason holds (the construct's own name unless given)."""

    name: str
    kind: Kind
    support: Support
    how: str
    example: str = ""
    arguments: tuple[str, ...] = ("t",)
    named: str = ""

    @property
    def shown(self) -> str:
        return self.named or self.name


M, R, U = Support.MODELLED, Support.RUN_TIME, Support.UNREAD
_D, _A, _F, _V, _S, _RL, _RC, _O = (
    Kind.DIRECTIVE,
    Kind.ASSIGNMENT,
    Kind.FUNCTION,
    Kind.VARIABLE,
    Kind.SPECIAL_TARGET,
    Kind.RULE,
    Kind.RECIPE,
    Kind.OPTION,
)


def _fn(name: str, call: str) -> Construct:
    return Construct(name=name, kind=_F, support=M, how="expanded as make does", example=f"X = a b\nt:\n\tpytest [{call}]\n")


CONSTRUCTS: tuple[Construct, ...] = (
    # --- directives ---
    Construct(
        name="include",
        kind=_D,
        support=M,
        how="the file read in place; one not in the checkout is unread",
        example="include part.mk\nt:\n\tpytest $(P)\n",
    ),
    Construct(
        name="-include",
        kind=_D,
        support=M,
        how="as include; a missing file is skipped unless a rule makes it",
        example="-include none.mk\nt:\n\tpytest a\n",
    ),
    Construct(name="sinclude", kind=_D, support=M, how="as -include", example="sinclude part.mk\nt:\n\tpytest $(P)\n"),
    Construct(
        name="ifdef / ifndef",
        kind=_D,
        support=M,
        how="the variable's value tested unexpanded; nesting, else, else-if",
        example="X = $(E)\nifdef X\nY = set\nelse ifndef Z\nY = other\nendif\nt:\n\tpytest $(Y)\n",
    ),
    Construct(
        name="ifeq / ifneq",
        kind=_D,
        support=M,
        how="both forms, (a,b) and quoted; blanks as conditional_line cuts them",
        example="ifeq (a ,a)\nY = one\nendif\nifneq \"x\" 'y'\nY += two\nendif\nt:\n\tpytest $(Y)\n",
    ),
    Construct(
        name="define",
        kind=_D,
        support=M,
        how="a value of several lines, with =, :=, +=, ?=; a recipe line of one runs each line",
        example="define C\n@pytest a\n-pytest b\nendef\nt:\n\t$(C)\n",
    ),
    Construct(
        name="undefine",
        kind=_D,
        support=M,
        how="the variable removed unless its origin outranks",
        example="X = a\nundefine X\nt:\n\tpytest [$(X)]\n",
    ),
    Construct(
        name="override",
        kind=_D,
        support=M,
        how="beats the command line",
        example="override X = a\nt:\n\tpytest $(X)\n",
        arguments=("X=b", "t"),
    ),
    Construct(
        name="export / unexport",
        kind=_D,
        support=M,
        how="marks names for recipes' environment; a bare export exports all",
        example="export X = a\nY = b\nexport\nt:\n\tpytest $$X $$Y\n",
    ),
    Construct(
        name="vpath",
        kind=_D,
        support=U,
        how="prerequisite search paths are not modelled",
        example="vpath %.py tests\nt:\n\tpytest a\n",
    ),
    Construct(name="load", kind=_D, support=U, how="dynamic objects are not modelled", example="load x.so\nt:\n\tpytest a\n"),
    Construct(name="private", kind=_D, support=U, how="not modelled", example="private X = a\nt:\n\tpytest a\n"),
    Construct(
        name="bare unexport", kind=_D, support=U, how="not modelled", example="unexport\nt:\n\tpytest a\n", named="unexport"
    ),
    # --- assignments ---
    Construct(
        name="=", kind=_A, support=M, how="recursive: expanded at each use", example="A = $(B)\nB = late\nt:\n\tpytest $(A)\n"
    ),
    Construct(
        name=":=",
        kind=_A,
        support=M,
        how="simple: expanded once, when assigned",
        example="B = one\nA := $(B)\nB = two\nt:\n\tpytest $(A)\n",
    ),
    Construct(name="::=", kind=_A, support=M, how="as :=", example="B = one\nA ::= $(B)\nB = two\nt:\n\tpytest $(A)\n"),
    Construct(
        name="?=",
        kind=_A,
        support=M,
        how="only if not defined, the environment included",
        example="SUITE ?= a\nt:\n\tpytest $(SUITE)\n",
    ),
    Construct(
        name="+=",
        kind=_A,
        support=M,
        how="appends in the variable's own flavour; nothing appended adds no blank",
        example="A := a\nA +=\nB = b\nB += $(C)\nC = c\nt:\n\tpytest [$(A)][$(B)]\n",
    ),
    Construct(
        name="!=",
        kind=_A,
        support=R,
        how="the shell's output: a value known only at run time",
        example="X != echo a\nt:\n\tpytest a\n",
    ),
    Construct(
        name="command-line NAME=value",
        kind=_A,
        support=M,
        how="beats the Makefile; exported; handed to sub-makes in MAKEFLAGS",
        example="X = file\nt:\n\tpytest $(X) $$X\n",
        arguments=("X=line", "t"),
    ),
    Construct(
        name="environment",
        kind=_A,
        support=M,
        how="a variable of make's environment: recursive, exported, below the Makefile",
        example="t:\n\tpytest $(HOME)\n",
    ),
    Construct(
        name="target-specific variable",
        kind=_A,
        support=M,
        how="all flavours, override and export; in effect for the target and the prerequisites it makes",
        example="t: X = a\nt: X += b\nt: u\n\tpytest $(X)\nu:\n\tpytest u$(X)\n",
    ),
    Construct(
        name="pattern-specific variable",
        kind=_A,
        support=U,
        how="not modelled",
        example="%-x: X = 1\nt:\n\tpytest a\n",
        named="pattern-specific variables",
    ),
    # --- functions ---
    _fn("subst", "$(subst a,b,$(X))"),
    _fn("patsubst", "$(patsubst %,t/%,$(X))"),
    _fn("strip", "$(strip  $(X)  )"),
    _fn("findstring", "$(findstring b,$(X))"),
    _fn("filter", "$(filter a%,$(X))"),
    _fn("filter-out", "$(filter-out a,$(X))"),
    _fn("sort", "$(sort b $(X) a)"),
    _fn("word", "$(word 2,$(X))"),
    _fn("wordlist", "$(wordlist 1,2,$(X) c)"),
    _fn("words", "$(words $(X))"),
    _fn("firstword", "$(firstword $(X))"),
    _fn("lastword", "$(lastword $(X))"),
    _fn("dir", "$(dir t/a b)"),
    _fn("notdir", "$(notdir t/a b)"),
    _fn("suffix", "$(suffix a.py b)"),
    _fn("basename", "$(basename a.py b)"),
    _fn("addsuffix", "$(addsuffix .py,$(X))"),
    _fn("addprefix", "$(addprefix t/,$(X))"),
    _fn("join", "$(join $(X),1 2 3)"),
    _fn("if", "$(if $(X),yes,no)"),
    _fn("or", "$(or ,$(X))"),
    _fn("and", "$(and $(X),z)"),
    _fn("foreach", "$(foreach w,$(X),+$(w)+)"),
    _fn("call", "$(call F,$(X))"),
    _fn("value", "$(value X)"),
    _fn("origin", "$(origin X) $(origin HOME)"),
    _fn("flavor", "$(flavor X)"),
    _fn("info", "$(info info: shown)"),
    _fn("warning", "$(warning careful)"),
    Construct(name="error", kind=_F, support=M, how="make stops where it is expanded", example="t:\n\t$(error stop here)\n"),
    Construct(
        name="shell",
        kind=_F,
        support=R,
        how="its output is known only at run time; a recipe shows the command as $(...)",
        example="t:\n\tpytest $(shell echo a)\n",
    ),
    Construct(name="wildcard", kind=_F, support=R, how="the files are those of the run", example="t:\n\tpytest $(wildcard t*)\n"),
    Construct(name="realpath", kind=_F, support=R, how="an absolute path of the run", example="t:\n\tpytest a\n"),
    Construct(name="abspath", kind=_F, support=R, how="an absolute path of the run", example="t:\n\tpytest a\n"),
    Construct(
        name="eval",
        kind=_F,
        support=U,
        how="Makefile text made at expansion time is not modelled",
        example="$(eval X = 1)\nt:\n\tpytest a\n",
    ),
    Construct(name="file", kind=_F, support=U, how="not modelled", example="X = $(file < Makefile)\nt:\n\tpytest $(X)\n"),
    Construct(name="guile", kind=_F, support=U, how="not modelled", example="t:\n\tpytest $(guile 1)\n"),
    Construct(
        name="let",
        kind=_F,
        support=U,
        how="GNU make 4.4's; 4.3 reads it as a variable: not modelled",
        example="t:\n\tpytest $(let a,b,$(a))\n",
    ),
    Construct(name="intcmp", kind=_F, support=U, how="GNU make 4.4's: not modelled", example="t:\n\tpytest $(intcmp 1,2,a)\n"),
    # --- variables make sets ---
    Construct(
        name="automatic variables",
        kind=_V,
        support=M,
        how="$@ $< $^ $+ $| $* (and the D/F forms); $? is run-time, $% empty",
        example="t: a b a | c\n\tpytest $@ $< [$^] [$+] [$|] $(@D) $(<F)\na b c:\n\t@:\n",
    ),
    Construct(
        name="MAKE",
        kind=_V,
        support=M,
        how="the command that ran make; a recipe line of `[cd DIR &&] $(MAKE) ARGS` is followed",
        example="t:\n\t$(MAKE) -f part.mk p\n",
    ),
    Construct(name="MAKECMDGOALS", kind=_V, support=M, how="the goals given", example="t:\n\tpytest $(MAKECMDGOALS)\n"),
    Construct(
        name="MAKELEVEL", kind=_V, support=M, how="0 at the top, one more in each sub-make", example="t:\n\tpytest $(MAKELEVEL)\n"
    ),
    Construct(
        name="MAKEFILE_LIST", kind=_V, support=M, how="the Makefiles read so far", example="t:\n\tpytest $(MAKEFILE_LIST)\n"
    ),
    Construct(
        name=".DEFAULT_GOAL",
        kind=_V,
        support=M,
        how="the first target, or the value set",
        example="u:\n\tpytest u\n.DEFAULT_GOAL := t\nt:\n\tpytest t\n",
        arguments=(),
    ),
    Construct(name="CURDIR", kind=_V, support=R, how="an absolute path of the run", example="t:\n\tpytest a\n"),
    Construct(
        name="SHELL",
        kind=_V,
        support=M,
        how="/bin/sh or bash are read alike; another shell is unread",
        example="SHELL = /bin/csh\nt:\n\tpytest a\n",
        named="SHELL",
    ),
    Construct(name=".RECIPEPREFIX", kind=_V, support=U, how="not modelled", example=".RECIPEPREFIX = >\nt:\n>pytest a\n"),
    Construct(
        name="MAKEFLAGS assignment",
        kind=_V,
        support=U,
        how="not modelled",
        example="MAKEFLAGS += -k\nt:\n\tpytest a\n",
        named="MAKEFLAGS",
    ),
    # --- special targets ---
    Construct(
        name=".PHONY",
        kind=_S,
        support=M,
        how="always remade, never searched for an implicit rule",
        example=".PHONY: t\nt: Makefile\n\tpytest a\n",
    ),
    Construct(
        name=".ONESHELL",
        kind=_S,
        support=M,
        how="a recipe is one script (prefixes off each line)",
        example=".ONESHELL:\nt:\n\tcd sub\n\t@pytest a\n",
    ),
    Construct(
        name=".EXPORT_ALL_VARIABLES",
        kind=_S,
        support=M,
        how="every variable exported",
        example=".EXPORT_ALL_VARIABLES:\nX = a\nt:\n\tpytest $$X\n",
    ),
    Construct(
        name=".SUFFIXES", kind=_S, support=M, how="emptied only; suffix rules are unread", example=".SUFFIXES:\nt:\n\tpytest a\n"
    ),
    Construct(
        name="inert special targets",
        kind=_S,
        support=M,
        how=".SILENT .IGNORE .NOTPARALLEL .DELETE_ON_ERROR .PRECIOUS ... change nothing that runs",
        example=".NOTPARALLEL:\n.DELETE_ON_ERROR:\nt:\n\tpytest a\n",
    ),
    Construct(name=".SECONDEXPANSION", kind=_S, support=U, how="not modelled", example=".SECONDEXPANSION:\nt:\n\tpytest a\n"),
    Construct(name=".POSIX", kind=_S, support=U, how="not modelled", example=".POSIX:\nt:\n\tpytest a\n"),
    Construct(name=".DEFAULT", kind=_S, support=U, how="not modelled", example=".DEFAULT:\n\tpytest a\nt: u\n"),
    # --- rules ---
    Construct(
        name="explicit rule",
        kind=_RL,
        support=M,
        how="prerequisites first (depth first, each target once), then the recipe",
        example="t: b a\n\tpytest t\na:\n\tpytest a\nb: a\n\tpytest b\n",
    ),
    Construct(
        name="target defined twice",
        kind=_RL,
        support=M,
        how="the last recipe runs; prerequisites merge, the recipe rule's first",
        example="t: a\n\tpytest first\nt: b\n\tpytest second $^\na b:\n\t@:\n",
    ),
    Construct(
        name="order-only prerequisites",
        kind=_RL,
        support=M,
        how="made after the others, never in $^",
        example="t: a | b\n\tpytest $^\na b:\n\tpytest $@\n",
    ),
    Construct(
        name="inline recipe", kind=_RL, support=M, how="`t: ; cmd` keeps the command as written", example="t: ; pytest a # kept\n"
    ),
    Construct(
        name="pattern rule",
        kind=_RL,
        support=M,
        how="one target pattern, shortest stem first; needs its prerequisites to exist or ought to",
        example="s-%:\n\tpytest $* $@\nt: s-a\n",
    ),
    Construct(
        name="up-to-date file target",
        kind=_RL,
        support=M,
        how="a target that is a file of the checkout runs only if a prerequisite was remade; with none it does not run",
        example="Makefile:\n\tpytest never\nt: Makefile\n\tpytest t\n",
    ),
    Construct(
        name="built-in implicit rule",
        kind=_RL,
        support=U,
        how="GNU make's own rules (compiling) are not modelled",
        example="t: x\n\tpytest a\n",
        named="built-in rule",
    ),
    Construct(
        name="double-colon rule", kind=_RL, support=U, how="not modelled", example="t:: a\n\tpytest a\n", named="double-colon"
    ),
    Construct(
        name="static pattern rule",
        kind=_RL,
        support=U,
        how="not modelled",
        example="t: %: %.c\n\tpytest a\n",
        named="static pattern",
    ),
    Construct(
        name="grouped targets", kind=_RL, support=U, how="not modelled", example="t u &: a\n\tpytest a\n", named="grouped targets"
    ),
    Construct(
        name="suffix rule",
        kind=_RL,
        support=U,
        how="not modelled",
        example=".c.o:\n\tpytest a\nt:\n\tpytest a\n",
        named="suffix rule",
    ),
    Construct(
        name="pattern rule with several targets",
        kind=_RL,
        support=U,
        how="not modelled",
        example="%.a %.b: %.c\n\tpytest a\nt:\n\tpytest a\n",
        named="several targets",
    ),
    Construct(
        name="remade Makefile",
        kind=_RL,
        support=U,
        how="make would read it again after making it",
        example="Makefile: part.mk\n\ttouch Makefile\nt:\n\tpytest a\n",
        named="remake the Makefile",
    ),
    # --- recipes ---
    Construct(
        name="recipe prefixes",
        kind=_RC,
        support=M,
        how="@ - + taken off; + and $(MAKE) lines run under -n too",
        example="t:\n\t@pytest a\n\t-pytest b\n\t+pytest c\n",
    ),
    Construct(
        name="continuation",
        kind=_RC,
        support=M,
        how="backslash-newline kept for the shell, the next line's tab taken off",
        example="t:\n\tpytest a \\\n\t\tb\n",
    ),
    Construct(name="$$", kind=_RC, support=M, how="a $ for the shell", example="t:\n\tpytest $$HOME\n"),
    Construct(
        name="conditional inside a recipe",
        kind=_RC,
        support=M,
        how="directives at column 0 between recipe lines are make's",
        example="t:\nifdef HOME\n\tpytest home\nelse\n\tpytest none\nendif\n",
    ),
    Construct(
        name="sub-make",
        kind=_RC,
        support=M,
        how="`[cd DIR &&] $(MAKE)|make [-C DIR] [-f FILE] ARGS` read as the make it starts",
        example="t:\n\tcd sub && $(MAKE) s X=1\n\tmake -f part.mk p\n",
    ),
    Construct(
        name="sub-make in a several-line .ONESHELL recipe",
        kind=_RC,
        support=U,
        how="not modelled",
        example=".ONESHELL:\nt:\n\tcd sub\n\t$(MAKE) s\n",
        named=".ONESHELL",
    ),
    # --- options ---
    Construct(
        name="-C / -f / -j / -k / -s / -B / -R / -r / -w / -O / --no-print-directory",
        kind=_O,
        support=M,
        how="folder and Makefiles read; -B remakes everything; -j keeps the order a serial make gives",
        example="t:\n\tpytest a\n",
        arguments=("-k", "-s", "-j2", "t"),
    ),
    Construct(
        name="-n / -q / -t",
        kind=_O,
        support=U,
        how="make runs no recipe as written: not modelled",
        example="t:\n\tpytest a\n",
        arguments=("-n", "t"),
        named="-n",
    ),
    Construct(
        name="-e",
        kind=_O,
        support=U,
        how="environment overrides are not modelled",
        example="t:\n\tpytest a\n",
        arguments=("-e", "t"),
    ),
    Construct(name="--eval", kind=_O, support=U, how="not modelled", example="t:\n\tpytest a\n", arguments=("--eval=X=1", "t")),
    Construct(
        name="-o / -W",
        kind=_O,
        support=U,
        how="not modelled",
        example="t:\n\tpytest a\n",
        arguments=("-W", "Makefile", "t"),
        named="-W",
    ),
)

# Files every example's checkout holds beside its Makefile.
EXAMPLE_FILES = {
    "part.mk": "P = from-part\np:\n\tpytest part $(P) $(X)\n",
    "sub/Makefile": "s:\n\tpytest sub $(X) $(MAKELEVEL)\n",
    "x.c": "int main(void) { return 0; }\n",
}


def modelled(kind: Kind | None = None) -> tuple[Construct, ...]:
    return tuple(c for c in CONSTRUCTS if c.support is not Support.UNREAD and (kind is None or c.kind is kind))


def unread(kind: Kind | None = None) -> tuple[Construct, ...]:
    return tuple(c for c in CONSTRUCTS if c.support is Support.UNREAD and (kind is None or c.kind is kind))
