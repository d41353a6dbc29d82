"""Evaluating a guard once per distinct answer to the facts it reads gives, runner by runner, what evaluating it
on every runner gives: on the benchmark's guards (every idiom) and on every profile."""

from __future__ import annotations

import random

import pytest

from matrix.core.loader import load_runners
from matrix.guards import evaluate as evaluate_module
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
