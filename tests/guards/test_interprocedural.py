"""Guards through a module's own helpers, redefinitions, decorator factories and `__main__` blocks; bounded."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from matrix.guards.evaluate import evaluate_guard
from matrix.guards.evaluation import Tri
from matrix.guards.finder import analyse_source
from matrix.guards.model import GuardKind

T, F, U = Tri.TRUE, Tri.FALSE, Tri.UNKNOWN
ARCHS = ("sm90", "sm100", "sm120", "cpu")

HEAD = """
import sys
import unittest
import torch
from sglang.srt.utils import get_device_sm, is_sm90_supported, is_sm100_supported, is_blackwell
"""

# module body, skip condition, expected skip verdict on (sm90, sm100, sm120, cpu)
CASES = {
    "tuple-unpacked capability": (
        "def _ok():\n    major, _ = torch.cuda.get_device_capability()\n    return major == 12",
        "not _ok()",
        (T, T, F, U),
    ),
    "early returns": (
        "def _ok():\n    if not torch.cuda.is_available():\n        return False\n    sm = get_device_sm()\n"
        "    if sm >= 100:\n        return True\n    return False",
        "not _ok()",
        (T, F, F, T),
    ),
    "if/else assigns then returns": (
        "def _ok():\n    if get_device_sm() == 90:\n        x = 1\n    else:\n        x = 2\n    return x == 1",
        "_ok()",
        (T, F, F, F),
    ),
    # pytest.skip ends the test where the helper runs: nothing after it is what the helper returns there
    "a helper that skips before it returns": (
        "def _ok():\n    if get_device_sm() < 100:\n        pytest.skip('needs sm100')\n    return True",
        "not _ok()",
        (U, F, F, U),
    ),
    "a helper that exits the process": (
        "def _ok():\n    if not torch.cuda.is_available():\n        sys.exit(0)\n    return True",
        "not _ok()",
        (F, F, F, U),
    ),
    "helper calls helper": ("def _a():\n    return is_sm100_supported()\ndef _b():\n    return _a()", "_b()", (F, T, F, F)),
    "parameters and defaults": (
        "def _at_least(n, gpus=1):\n    return get_device_sm() >= n and torch.cuda.device_count() >= gpus",
        "not _at_least(100, gpus=4)",
        (T, F, T, T),
    ),
    "local redefinition shadows the import": (
        "def is_sm90_supported():\n    return get_device_sm() >= 90",
        "is_sm90_supported()",
        (T, T, T, F),
    ),
    "import after the def wins back": (
        "def is_blackwell():\n    return True\nfrom sglang.srt.utils import is_blackwell",
        "is_blackwell()",
        (F, T, T, F),
    ),
    "def inside try is ambiguous": (
        "try:\n    def is_blackwell():\n        return True\nexcept Exception:\n    pass",
        "is_blackwell()",
        (U, U, U, U),
    ),
    "import fallback is unknown, not None": (
        "try:\n    from flashinfer import plan\nexcept ImportError:\n    plan = None",
        "plan is None",
        (U, U, U, U),
    ),
    "two import sources are ambiguous": (
        "try:\n    from a import is_ok\nexcept ImportError:\n    from b import is_ok_fallback as is_ok",
        "is_ok()",
        (U, U, U, U),
    ),
    "recursion is past the call budget": ("def _r():\n    return _r()", "_r()", (U, U, U, U)),
    "a loop in a helper is unknown": ("def _x():\n    for i in range(3):\n        pass\n    return True", "_x()", (U, U, U, U)),
    "a try whose body cannot raise here": (
        "def _major():\n    cuda = getattr(torch.version, 'cuda', None)\n    try:\n"
        "        return int(cuda.split('.')[0]) if cuda else 0\n    except ValueError:\n        return 0",
        "_major() >= 13",
        (T, T, T, U),
    ),
    "a try whose branches agree": (
        "def _count():\n    try:\n        torch.cuda.init()\n        n = 0\n    except RuntimeError:\n        n = 0\n    return n",
        "_count() == 0",
        (T, T, T, T),
    ),
    "a try whose branches disagree": (
        "def _ok():\n    try:\n        torch.cuda.init()\n        return True\n    except RuntimeError:\n        return False",
        "not _ok()",
        (U, U, U, U),
    ),
    "min of the GPU count": ("TP = min(4, torch.cuda.device_count())", "TP < 4", (T, F, T, T)),
    "min shadowed by the module": ("def min(a, b):\n    return 0", "min(4, torch.cuda.device_count()) < 4", (T, T, T, T)),
}


def _verdicts(module: str, condition: str, facts_for) -> tuple[Tri, ...]:
    source = (
        HEAD + textwrap.dedent(module) + f"\n\n@unittest.skipIf({condition}, 'x')\nclass TestX(unittest.TestCase):\n    pass\n"
    )
    analysis = analyse_source("test_x.py", source)
    (guard,) = analysis.guards
    return tuple(evaluate_guard(guard, facts_for(arch), analysis.names).skips for arch in ARCHS)


@pytest.mark.parametrize("name", CASES)
def test_helper_idioms(facts_for, name):
    module, condition, expected = CASES[name]
    assert _verdicts(module, condition, facts_for) == expected


FACTORIES = {
    "factory with an argument": (
        "def requires(major):\n    return unittest.skipUnless(torch.cuda.get_device_capability()[0] == major, 'x')",
        "@requires(10)",
        (T, F, T, U),
    ),
    "factory with a keyword and a default": (
        "def requires(major=9, minor=0):\n    return unittest.skipUnless(torch.cuda.get_device_capability() == (major, minor), 'x')",
        "@requires(minor=0)",
        (F, T, T, U),
    ),
    "decorator applying the skip": (
        "def hopper_only(cls):\n    return unittest.skipUnless(is_sm90_supported(), 'x')(cls)",
        "@hopper_only",
        (F, T, T, T),
    ),
    "factory returning a pytest mark": (
        "import pytest\ndef blackwell():\n    return pytest.mark.skipif(not is_blackwell(), reason='x')",
        "@blackwell()",
        (T, F, F, T),
    ),
}


@pytest.mark.parametrize("name", FACTORIES)
def test_decorator_factories(facts_for, name):
    module, decorator, expected = FACTORIES[name]
    source = HEAD + textwrap.dedent(module) + f"\n\n{decorator}\nclass TestX(unittest.TestCase):\n    pass\n"
    analysis = analyse_source("test_x.py", source)
    (guard,) = analysis.guards
    assert guard.source.startswith(decorator[1:])
    assert tuple(evaluate_guard(guard, facts_for(a), analysis.names).skips for a in ARCHS) == expected


def test_a_factory_that_does_not_return_a_skip_is_not_a_guard():
    source = HEAD + "def timed(n):\n    return lambda f: f\n\n@timed(3)\nclass TestX(unittest.TestCase):\n    pass\n"
    assert analyse_source("test_x.py", source).guards == ()


MAIN_BLOCKS = {
    "print then sys.exit(0)": ("    if not is_sm100_supported():\n        print('Skipping: sm100')\n        sys.exit(0)\n", 1),
    "print then bare sys.exit()": ("    if get_device_sm() < 100:\n        print('skip')\n        sys.exit()\n", 1),
    "exit(1) is a failure, not a skip": ("    if not is_sm100_supported():\n        print('skip')\n        sys.exit(1)\n", 0),
    "no message printed": ("    if not is_sm100_supported():\n        sys.exit(0)\n", 0),
    "no main block": ("    pass\n", 0),
}


@pytest.mark.parametrize("name", MAIN_BLOCKS)
def test_main_block_exits(facts_for, name):
    body, count = MAIN_BLOCKS[name]
    source = HEAD + "\nif __name__ == '__main__':\n" + body + "    unittest.main()\n"
    analysis = analyse_source("bench_x.py", source)
    exits = [g for g in analysis.guards if g.kind is GuardKind.MAIN_EXIT]
    assert len(exits) == count
    for guard in exits:
        assert guard.scope == "bench_x.py"
        assert evaluate_guard(guard, facts_for("sm90"), analysis.names).skips is T
        assert evaluate_guard(guard, facts_for("sm100"), analysis.names).skips is F


HOSTILE = {
    "500-term sum": "X = get_device_sm() " + "+ 1 " * 499 + "\nG = X > 0",
    "500 stacked nots": "G = " + "not " * 500 + "get_device_sm()",
    "4,000-digit literal squared": "A = " + "9" * 4000 + "\nG = A * A > get_device_sm()",
    "squaring chain A1..A26": "A = 7\nA1 = A * A\n"
    + "".join(f"A{i} = A{i - 1} * A{i - 1}\n" for i in range(2, 27))
    + "G = A26 > 0",
    "2**255 times itself": f"A = {2**255}\nG = A * A > 0",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_guards_are_unknown_past_the_budget(facts_for, name):
    source = HEAD + HOSTILE[name] + "\n\n@unittest.skipIf(G, 'x')\nclass TestX(unittest.TestCase):\n    pass\n"
    analysis = analyse_source("test_x.py", source)
    (guard,) = analysis.guards
    result = evaluate_guard(guard, facts_for("sm90"), analysis.names)
    assert result.skips is U
    assert any("budget" in s or "beyond 256 bits" in s for s in result.steps), result.steps


def _hostile_file_name(name: str) -> str:
    return f"test_hostile_{list(HOSTILE).index(name)}.py"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """Every hostile file in one folder, audited by one fresh `specmatrix guards` process."""
    folder = tmp_path_factory.mktemp("hostile")
    for name, body in HOSTILE.items():
        source = HEAD + "from sglang.test.ci.ci_register import register_cuda_ci\n"
        source += 'register_cuda_ci(est_time=1, suite="base-b-test-1-gpu-large")\n' + body
        source += "\n\n@unittest.skipIf(G, 'x')\nclass TestX(unittest.TestCase):\n    pass\n"
        (folder / _hostile_file_name(name)).write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "matrix", "guards", str(folder), "--show", "info", "--no-cache"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_files_end_quickly_in_a_fresh_process(hostile_run, name):
    """A hang or a crash shows here (the limit is generous; ci/bench_guards.py measures the time)."""
    done = hostile_run
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"undetermined: {_hostile_file_name(name)}::TestX on " in done.stdout


def test_an_import_flag_is_whether_the_module_is_installed(facts_for):
    module = "try:\n    import mori.umbp\n    HAS_MORI = True\nexcept ImportError:\n    HAS_MORI = False\n"
    source = HEAD + module + "\n@unittest.skipUnless(HAS_MORI, 'x')\nclass TestX(unittest.TestCase):\n    pass\n"
    analysis = analyse_source("test_x.py", source)
    (guard,) = analysis.guards
    unknown = evaluate_guard(guard, facts_for("cpu"), analysis.names)
    assert unknown.skips is U
    assert "whether mori.umbp is installed" in "; ".join(unknown.steps)
    assert evaluate_guard(guard, facts_for("cpu", frozenset({"mori"})), analysis.names).skips is F
