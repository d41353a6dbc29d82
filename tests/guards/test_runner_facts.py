"""CI facts of a runner profile (in_ci, amd_ci, cuda): validated by the loader, read by the guard predicates."""

from __future__ import annotations

import pytest

from matrix.core.errors import ConfigError
from matrix.core.loader import parse_runners
from matrix.guards.evaluate import evaluate_text
from matrix.guards.evaluation import Tri
from matrix.guards.predicates import RunnerFacts

T, F, U = Tri.TRUE, Tri.FALSE, Tri.UNKNOWN
BASE = {"gpus": 4, "capability": [10, 0]}


def profile(**extra):
    return parse_runners({"runner": {"box": {**BASE, **extra}}}, "r.toml")["box"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"in_ci": "yes"}, "in_ci must be true or false"),
        ({"amd_ci": 1}, "amd_ci must be true or false"),
        ({"cuda": 12.9}, "cuda must be a CUDA version string"),
        ({"cuda": "twelve"}, "cuda must be a CUDA version string"),
        ({"gpus": 0, "capability": None, "cuda": "12.9"}, "cuda given but gpus = 0"),
    ],
)
def test_bad_facts_are_one_config_error(extra, message):
    extra = {k: v for k, v in extra.items() if v is not None}
    data = {**BASE, **extra}
    if "capability" in extra or extra.get("gpus") == 0:
        data.pop("capability", None)
    with pytest.raises(ConfigError, match=message):
        parse_runners({"runner": {"box": data}}, "r.toml")


def test_facts_are_optional_and_read():
    assert (profile().in_ci, profile().amd_ci, profile().cuda) == (None, None, None)
    p = profile(in_ci=True, amd_ci=False, cuda="12.9")
    assert (p.in_ci, p.amd_ci, p.cuda) == (True, False, "12.9")


@pytest.mark.parametrize(
    ("expr", "facts", "expected"),
    [
        ("is_in_ci()", {}, U),
        ("is_in_ci()", {"in_ci": True}, T),
        ("is_in_ci()", {"in_ci": False}, F),
        ("is_in_amd_ci()", {}, F),
        ("is_in_amd_ci()", {"amd_ci": True}, T),
        ("torch.version.cuda is None", {}, U),
        ("torch.version.cuda != '12.9'", {"cuda": "12.9"}, F),
        ("min(4, torch.cuda.device_count()) < 4", {}, F),
        ("max(torch.cuda.device_count(), 8) > 4", {}, T),
    ],
)
def test_predicates_read_the_facts(expr, facts, expected):
    assert evaluate_text(expr, RunnerFacts(profile=profile(**facts))).skips is expected


@pytest.mark.parametrize(
    ("expr", "env", "expected"),
    [
        ("is_in_ci()", {"SGLANG_IS_IN_CI": "true"}, T),
        ("is_in_ci()", {"SGLANG_IS_IN_CI": "0"}, F),
        ("is_in_amd_ci()", {"SGLANG_IS_IN_CI_AMD": "1"}, T),
        ("os.environ.get('SGLANG_ENABLE_JIT_DEEPGEMM') == '0'", {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"}, T),
        ("os.getenv('OTHER') is None", {}, U),
        ("os.environ['X'] == 'a'", {"X": "a"}, T),
        ("get_bool_env_var('X')", {"X": "TRUE"}, T),
    ],
)
def test_workflow_env_wins_over_the_profile(expr, env, expected):
    facts = RunnerFacts(profile=profile(in_ci=False), env=env)
    assert evaluate_text(expr, facts).skips is expected
