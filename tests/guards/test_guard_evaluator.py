"""Evaluating a guard once per distinct answer to the facts it reads gives, runner by runner, what evaluating it
on every runner gives: on the benchmark's guards (every idiom) and on every profile."""

from __future__ import annotations

import ast
import keyword
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from matrix.core.loader import load_runners
from matrix.guards import evaluate as evaluate_module
from matrix.guards import predicates
from matrix.guards.evaluate import GuardEvaluator, evaluate_guard
from matrix.guards.finder import analyse_source
from matrix.guards.predicates import RunnerFacts

from .test_prefilter import bench_module


def _cases() -> list[tuple[str, str]]:
    bench = bench_module()
    rng = random.Random(11)
    return [(f"t/test_{i}.py", bench.test_file(rng, i * 37 + 7)) for i in range(12)]


def _facts() -> list[RunnerFacts]:
    return [RunnerFacts(profile=p, env={"SGLANG_IS_IN_CI": "true"}, env_closed=True) for p in load_runners().values()]


def test_shared_evaluations_equal_one_evaluation_per_runner() -> None:
    facts = _facts()
    compared = 0
    for path, text in _cases():
        analysis = analyse_source(path, text)
        shared = GuardEvaluator(analysis.names)
        for guard in analysis.guards:
            for runner in facts:
                assert shared(guard, runner) == evaluate_guard(guard, runner, analysis.names)
                compared += 1
    assert compared > 500


def test_a_runner_that_answers_differently_is_evaluated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: reuse the first evaluation whatever the runner answers. The sm90 and sm100 runners then agree
    on an arch guard, which they must not."""
    path, text = (
        "t/test_arch.py",
        (
            "import unittest\nfrom sglang.srt.utils import is_sm100_supported\n"
            "@unittest.skipUnless(is_sm100_supported(), 'sm100')\nclass TestA(unittest.TestCase):\n"
            "    def test_a(self):\n        pass\n"
        ),
    )
    analysis = analyse_source(path, text)
    runners = load_runners()
    h100 = RunnerFacts(profile=runners["1-gpu-h100"])
    b200 = RunnerFacts(profile=runners["4-gpu-b200"])
    guard = analysis.guards[0]
    shared = GuardEvaluator(analysis.names)
    assert shared(guard, h100).skips != shared(guard, b200).skips
    monkeypatch.setattr(evaluate_module, "_same", lambda a, b: True)
    planted = GuardEvaluator(analysis.names)
    assert planted(guard, h100).skips == planted(guard, b200).skips


# --- the text of a noted call -----------------------------------------------------------------------------------------

_IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s))


@given(st.lists(_IDENT, min_size=1, max_size=6), st.sampled_from(["", " ", "  "]))
def test_a_bare_call_is_written_as_unparse_writes_it(parts: list[str], space: str) -> None:
    text = (space + "." + space).join(parts) + space + "(" + space + ")"
    node = ast.parse(text, mode="eval").body
    assert predicates._bare_call(node) == ast.unparse(node)


@pytest.mark.parametrize(
    "text",
    ["f(1)", "f(x=1)", "f()()", "f()[0]", "(lambda: 1)()", "a[0].b()", "x.y", "not f()", "f(*a)", "'s'.upper()"],
)
def test_any_other_node_is_left_to_unparse(text: str) -> None:
    node = ast.parse(text, mode="eval").body
    assert predicates._bare_call(node) is None


def test_a_long_bare_call_is_cut_like_any_other_text() -> None:
    node = ast.parse(".".join(["segment"] * 40) + "()", mode="eval").body
    shown = predicates._node_text(node)
    assert shown == ast.unparse(node)[:157] + "..."


# --- only the evaluations a finding needs -----------------------------------------------------------------------------

_LAZY = """
import unittest
import torch
from sglang.srt.utils import is_sm100_supported, mystery
from sglang.test.ci.ci_register import register_cuda_ci
register_cuda_ci(est_time=60, suite="stage-b-test-1-gpu-large")
register_cuda_ci(est_time=60, suite="base-b-kernel-unit-test-4-gpu-b200")

@unittest.skipUnless(is_sm100_supported(), "sm100")
class TestBlackwell(unittest.TestCase):
    def test_a(self):
        if torch.cuda.device_count() < 8 and mystery():
            self.skipTest("judged on B200 only: on H100 the class guard decides")
"""


def test_a_guard_behind_a_skip_that_decides_is_not_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The class guard skips on the H100 runner, so there the method's guard decides nothing and is not evaluated;
    on the B200 runner the class runs, and the method's guard is evaluated and reported undetermined. Planted:
    evaluating before asking whether an outer guard decides (the eager order) evaluates it on H100 too."""
    from matrix.registered_suite.audit import AuditSettings, audit_file, load_suite_map

    analysis = analyse_source("t/test_lazy.py", _LAZY)
    seen: list[tuple[int, str]] = []
    real = evaluate_module.evaluate_guard

    def counted(guard: Any, facts: RunnerFacts, *args: Any, **kwargs: Any) -> Any:
        seen.append((guard.line, facts.profile.name))
        return real(guard, facts, *args, **kwargs)

    monkeypatch.setattr(evaluate_module, "evaluate_guard", counted)
    settings = AuditSettings(runners=load_runners(), suite_map=load_suite_map())
    findings = audit_file(analysis, settings).findings
    # The runners answer device_count differently, so sharing one evaluation between them (see GuardEvaluator)
    # cannot hide an evaluation on H100.
    method = next(g.line for g in analysis.guards if "mystery()" in g.source)
    assert (method, "4-gpu-b200") in seen
    assert (method, "1-gpu-h100") not in seen
    kinds = {(f.kind, f.subject, f.runners) for f in findings}
    assert ("skip-only-registration", "t/test_lazy.py::TestBlackwell", ("1-gpu-h100",)) in kinds
    assert ("undetermined", "t/test_lazy.py::TestBlackwell::test_a", ("4-gpu-b200",)) in kinds
