"""The three-valued evaluator: known predicates on each architecture, Kleene logic, aliases."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import pytest

from matrix.guards.evaluate import evaluate_guard, evaluate_text
from matrix.guards.evaluation import Tri
from matrix.guards.finder import analyse_source
from matrix.guards.predicates import PREDICATES, Predicate, RunnerFacts, Unknown

T, F, U = Tri.TRUE, Tri.FALSE, Tri.UNKNOWN
ARCHS = ("sm90", "sm100", "sm120", "cpu")

# expression -> expected value on (sm90, sm100, sm120, cpu); sglang 0.5.23 sglang/srt/utils/common.py (docs/sources.md#guard-helpers).
PREDICATE_TABLE: dict[str, tuple[Tri, Tri, Tri, Tri]] = {
    "is_sm90_supported()": (T, F, F, F),
    "is_sm100_supported()": (F, T, F, F),
    "is_sm120_supported()": (F, F, T, F),
    "is_blackwell()": (F, T, T, F),
    "is_blackwell_supported()": (F, T, T, F),
    "get_device_sm() >= 100": (F, T, T, F),
    "get_device_sm() == 90": (T, F, F, F),
    "get_device_sm() < 90": (F, F, F, T),
    "torch.cuda.get_device_capability() >= (10, 0)": (F, T, T, U),
    "torch.cuda.get_device_capability() < (12, 0)": (T, T, F, U),
    "torch.cuda.get_device_capability()[0] == 12": (F, F, T, U),
    "torch.cuda.is_available()": (T, T, T, F),
    "torch.cuda.device_count() >= 4": (F, T, F, F),
    "torch.cuda.device_count() == 0": (F, F, F, T),
    "is_hip()": (F, F, F, F),
    "is_cuda()": (T, T, T, F),
    "is_flashinfer_available()": (U, U, U, F),
    "utils.is_sm100_supported()": (F, T, F, F),
    "sglang.srt.utils.common.is_sm120_supported()": (F, F, T, F),
    "'B200' in torch.cuda.get_device_name()": (F, T, F, U),
    "torch.version.hip is None": (T, T, T, T),
    "some_unknown_helper()": (U, U, U, U),
}
CASES = [(expr, arch, row[i]) for expr, row in PREDICATE_TABLE.items() for i, arch in enumerate(ARCHS)]


def mismatch(expr: str, facts: RunnerFacts, expected: Tri, table: Mapping[str, Predicate] = PREDICATES) -> str | None:
    """None when the evaluator agrees with the table; else what went wrong."""
    got = evaluate_text(expr, facts, table=table).skips
    return None if got is expected else f"{expr} on {facts.profile.name}: expected {expected.value}, got {got.value}"


@pytest.mark.parametrize(("expr", "arch", "expected"), CASES, ids=[f"{a}:{e}" for e, a, _ in CASES])
def test_predicate_on_each_architecture(facts_for, expr, arch, expected):
    assert mismatch(expr, facts_for(arch), expected) is None


def _major_at_least(n: int) -> Predicate:
    return lambda facts: facts.profile.capability is not None and facts.profile.capability[0] >= n


PLANTED_BUGS: dict[str, Mapping[str, Predicate]] = {
    # The classic: "sm90 or newer" instead of "major 9 only" hides the sm100 case.
    "sm90-means-at-least-9": {**PREDICATES, "is_sm90_supported": _major_at_least(9)},
    "blackwell-without-sm120": {
        **PREDICATES,
        "is_blackwell": lambda f: f.profile.capability is not None and f.profile.capability[0] in (10, 11),
    },
    "device-sm-is-major-only": {**PREDICATES, "get_device_sm": lambda f: f.profile.capability[0] if f.profile.capability else 0},
    "cuda-always-available": {**PREDICATES, "torch.cuda.is_available": lambda f: True},
    "flashinfer-guessed-installed": {**PREDICATES, "is_flashinfer_available": lambda f: f.profile.gpus > 0},
    "hip-unknown": {**PREDICATES, "is_hip": lambda f: Unknown(why="planted")},
}


@pytest.mark.parametrize("bug", sorted(PLANTED_BUGS))
def test_planted_predicate_bug_turns_the_table_red(facts_for, bug):
    failures = [m for expr, arch, exp in CASES if (m := mismatch(expr, facts_for(arch), exp, PLANTED_BUGS[bug]))]
    assert failures, f"planted bug {bug} went unnoticed"


# --- Kleene logic with short-circuit -------------------------------------------------------------

LOGIC: dict[str, Predicate] = {"t": lambda f: True, "f": lambda f: False, "u": lambda f: Unknown(why="test")}
VALUES = {"t()": T, "f()": F, "u()": U}


def kleene_and(a: Tri, b: Tri) -> Tri:
    return F if F in (a, b) else U if U in (a, b) else T


def kleene_or(a: Tri, b: Tri) -> Tri:
    return T if T in (a, b) else U if U in (a, b) else F


LOGIC_CASES = [
    (f"{a} {op} {b}", (kleene_and if op == "and" else kleene_or)(VALUES[a], VALUES[b]))
    for a in VALUES
    for b in VALUES
    for op in ("and", "or")
] + [(f"not {a}", negated) for a, negated in {"t()": F, "f()": T, "u()": U}.items()]  # Kleene's not, written out


@pytest.mark.parametrize(("expr", "expected"), LOGIC_CASES, ids=[e for e, _ in LOGIC_CASES])
def test_kleene_truth_tables(facts_for, expr, expected):
    assert mismatch(expr, facts_for("sm100"), expected, LOGIC) is None


def test_guessing_unknown_as_false_turns_the_truth_table_red(facts_for):
    guessing = {**LOGIC, "u": LOGIC["f"]}
    assert [e for e, x in LOGIC_CASES if mismatch(e, facts_for("sm100"), x, guessing)]


@pytest.mark.parametrize(
    ("expr", "evaluated"),
    [
        ("f() and probe()", False),
        ("t() or probe()", False),
        ("u() and probe()", True),
        ("t() and probe()", True),
        ("1 < f() < probe()", False),
    ],
)
def test_short_circuit_skips_operands_python_would_not_evaluate(facts_for, expr, evaluated):
    calls: list[str] = []

    def probe(facts: RunnerFacts) -> object:
        calls.append("probe")
        return True

    evaluate_text(expr, facts_for("sm100"), table={**LOGIC, "probe": probe})
    assert bool(calls) is evaluated


# --- module-level names ---------------------------------------------------------------------------

ALIAS_CASES = [
    ("from sglang.srt.utils import is_sm100_supported\n_is_sm100 = is_sm100_supported()", "not _is_sm100", (T, F, T, T)),
    ("from sglang.srt.utils import get_device_sm\nSM = get_device_sm()", "SM < 100", (T, F, F, T)),
    ("import torch\nmajor, minor = torch.cuda.get_device_capability()", "major != 9", (F, T, T, U)),
    ("import torch\nCAP = torch.cuda.get_device_capability()", "CAP < (9, 0) or CAP[0] == 12", (F, F, T, U)),
    ("from sglang.srt.utils import is_sm90_supported as sm90\ncheck = sm90", "not check()", (F, T, T, T)),
    ("import torch.cuda as tc", "not tc.is_available()", (F, F, F, T)),
    ("from torch.cuda import device_count", "device_count() < 2", (T, F, T, T)),
    ("from sglang.srt import utils\nOK = utils.is_sm90_supported() or utils.is_sm100_supported()", "not OK", (F, F, T, T)),
    ("X = is_sm90_supported()\nX = is_sm100_supported()", "X", (U, U, U, U)),
    # A module's own definition is followed (it shadows any import of the same name).
    ("def is_sm90_supported():\n    return True", "is_sm90_supported()", (T, T, T, T)),
    ("A = B\nB = A", "A", (U, U, U, U)),
]


def _guard_of(module: str, condition: str):
    source = textwrap.dedent(module) + f"\n\n@unittest.skipIf({condition}, 'x')\nclass TestX:\n    pass\n"
    analysis = analyse_source("test_alias.py", source)
    (guard,) = analysis.guards
    return guard, analysis.names


@pytest.mark.parametrize(("module", "condition", "expected"), ALIAS_CASES, ids=[c for _, c, _ in ALIAS_CASES])
@pytest.mark.parametrize("arch_index", range(4), ids=ARCHS)
def test_module_names_resolve_to_their_guard_expressions(facts_for, module, condition, expected, arch_index):
    guard, names = _guard_of(module, condition)
    assert evaluate_guard(guard, facts_for(ARCHS[arch_index]), names).skips is expected[arch_index]


def test_ignoring_module_names_turns_the_alias_cases_red(facts_for):
    from matrix.guards.model import ModuleNames

    wrong = []
    for module, condition, expected in ALIAS_CASES[:8]:
        guard, _ = _guard_of(module, condition)
        got = evaluate_guard(guard, facts_for("sm100"), ModuleNames()).skips
        wrong.append(got is not expected[1])
    assert all(wrong)


def test_reason_names_each_fact_in_evaluation_order(facts_for):
    result = evaluate_text("not (is_sm90_supported() or is_sm120_supported())", facts_for("sm100"))
    assert result.skips is T
    assert result.steps == ("is_sm90_supported() is False", "is_sm120_supported() is False")
    assert "4-gpu-b200: sm100" in result.explain(facts_for("sm100"))


@pytest.mark.parametrize(
    ("installed", "expected"),
    [(frozenset(), U), (frozenset({"flashinfer"}), F)],
)
def test_flashinfer_is_unknown_unless_assumed_installed(facts_for, installed, expected):
    assert evaluate_text("not is_flashinfer_available()", facts_for("sm100", installed)).skips is expected


def test_evaluator_never_executes_code(facts_for, tmp_path):
    marker = tmp_path / "ran"
    expr = f"__import__('pathlib').Path({str(marker)!r}).write_text('x') or open({str(marker)!r}, 'w')"
    assert evaluate_text(expr, facts_for("sm100")).skips is U
    assert not marker.exists()
