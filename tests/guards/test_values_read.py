"""Values a guard computes that its text decides: set literals, `torch.device`, records a helper binds, import flags
whose handler catches more than ImportError; and values known only at run time, which stay unknown and say so."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from matrix.guards.evaluate import evaluate_guard
from matrix.guards.evaluation import Tri
from matrix.guards.finder import analyse_source
from matrix.pytest_suites.undetermined import guard_reason
from matrix.schedule.environment.model import Base, JobEnvironment

T, F, U = Tri.TRUE, Tri.FALSE, Tri.UNKNOWN


def _verdict(facts, module: str, condition: str) -> tuple[Tri, tuple[str, ...]]:
    source = textwrap.dedent(module) + f"\n\n@pytest.mark.skipif({condition}, reason='r')\ndef test_case():\n    pass\n"
    analysis = analyse_source("test_values.py", source)
    (guard,) = analysis.guards
    result = evaluate_guard(guard, facts, analysis.names)
    return result.skips, result.steps


# (module text, skipif condition, expected on sm90, on sm100, on cpu)
CASES = [
    # A set literal of capabilities: membership decided where the capability is known.
    (
        "import torch\nALLOWED_CAPS = {(8, 0), (9, 0), (12, 1)}",
        "torch.cuda.get_device_capability() not in ALLOWED_CAPS",
        (F, T, U),
    ),
    ("KNOWN_SM = {80, 90}\nfrom sglang.srt.utils import get_device_sm", "get_device_sm() not in KNOWN_SM", (F, T, T)),
    # A record a helper binds and reads by attribute.
    (
        """
        import torch
        def compute_level():
            info = torch.cuda.get_device_properties(0)
            return info.major * 10 + info.minor
        """,
        "compute_level() < 100",
        (T, F, U),
    ),
    # `torch.device` as an argument a helper inspects.
    (
        """
        import torch
        def arch_of(dev):
            if dev.type != "cuda":
                raise ValueError("no")
            p = torch.cuda.get_device_properties(dev)
            return (p.major, p.minor)
        def blackwell_only():
            return arch_of(torch.device("cuda:0"))[0] == 10
        """,
        "not blackwell_only()",
        (T, F, U),
    ),
    # torch's dtypes compare as the objects do (an alias is the same dtype) and carry their size.
    ("import torch\nWIDE = torch.half", "WIDE == torch.float16 and torch.cuda.is_available()", (T, T, F)),
    ("import torch\nKIND = torch.float8_e5m2", "KIND in (torch.float8_e4m3fn, torch.bfloat16)", (F, F, F)),
    ("import torch\nKIND = torch.float8_e5m2", "KIND.itemsize == 1", (T, T, T)),
    # A module imported inside a helper keeps its meaning.
    (
        """
        def gpu_there():
            import torch
            return torch.cuda.is_available()
        """,
        "not gpu_there()",
        (F, F, T),
    ),
]


@pytest.mark.parametrize(("module", "condition", "expected"), CASES, ids=[c for _, c, _ in CASES])
@pytest.mark.parametrize("arch", ["sm90", "sm100", "cpu"])
def test_values_the_text_decides(facts_for, module, condition, expected, arch):
    got, steps = _verdict(facts_for(arch), module, condition)
    assert got is expected[["sm90", "sm100", "cpu"].index(arch)], steps


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('torch.device("cuda")', "torch.device(type='cuda', index=None)"),
        ('torch.device("cuda:3")', "torch.device(type='cuda', index=3)"),
        ('torch.device("cpu", 0)', "torch.device(type='cpu', index=0)"),
        ('torch.device(type="cuda")', "torch.device(type='cuda', index=None)"),
        ('torch.device("quantum")', "unknown"),
        ('torch.device("cuda:x")', "unknown"),
        ('torch.device("cuda:1", 2)', "unknown"),
    ],
)
def test_torch_device_record(facts_for, text, expected):
    _, steps = _verdict(facts_for("sm90"), "import torch\nDEV = " + text, "DEV is None")
    assert any(expected in s for s in steps), steps


def _flag_module(handler: str) -> str:
    return f"""
    try:
        import fancy_kernels
        FANCY_OK = True
    {handler}:
        fancy_kernels = None
        FANCY_OK = False
    """


FRESH = JobEnvironment(base=Base.FRESH, base_note="a slim image", installed=(), maybe=())


@pytest.mark.parametrize("handler", ["except Exception", "except (ImportError, OSError)", "except", "except BaseException"])
@pytest.mark.parametrize(("installed", "expected"), [(frozenset({"fancy_kernels"}), F), (None, T)])
def test_import_flag_with_a_wider_handler(facts_for, handler, installed, expected):
    facts = facts_for("sm90", installed) if installed is not None else replace(facts_for("sm90"), environment=FRESH)
    got, steps = _verdict(facts, _flag_module(handler), "not FANCY_OK")
    assert got is expected, steps


def test_a_handler_that_cannot_see_a_missing_module_leaves_the_flag_unread(facts_for):
    got, steps = _verdict(facts_for("sm90", frozenset({"fancy_kernels"})), _flag_module("except OSError"), "not FANCY_OK")
    assert got is U
    assert "bound more than once" in " ".join(steps)


@pytest.mark.parametrize(
    ("module", "condition", "said"),
    [
        ("import torch\nFREE = torch.cuda.mem_get_info()[0]", "FREE < 2**30", "reads GPU memory"),
        ("import torch\nN = torch.randint(1, 9, (1,))", "N is None", "draws a random value"),
        (
            """
            import subprocess
            def tool_works():
                done = subprocess.run(["sometool", "--version"], capture_output=True)
                return done.returncode == 0
            """,
            "not tool_works()",
            "runs a program",
        ),
        ("import glob\nFOUND = glob.glob('/opt/x/*')", "not FOUND", "reads the file system"),
    ],
)
def test_run_time_values_stay_unknown_and_say_why(facts_for, module, condition, said):
    got, steps = _verdict(facts_for("sm90"), module, condition)
    assert got is U
    reason = guard_reason(condition, "", steps)
    assert said in reason and "known only at run time" in reason, reason


def test_the_run_time_reason_comes_before_an_earlier_unknown():
    steps = (
        "torch.bfloat16 is unknown (not a known attribute)",
        "subprocess.run(['x']) is unknown (subprocess.run() runs a program: its value is known only at run time)",
    )
    assert "runs a program" in guard_reason("g", "", steps)


MORE_CASES = [
    # `__import__("torch")` is the torch package.
    ("", "not __import__('torch').cuda.is_available()", (F, F, T)),
]


@pytest.mark.parametrize("arch", ["sm90", "sm100", "cpu"])
def test_dunder_import_is_the_package(facts_for, arch):
    module, condition, expected = MORE_CASES[0]
    assert expected is not None
    got, steps = _verdict(facts_for(arch), module, condition)
    assert got is expected[["sm90", "sm100", "cpu"].index(arch)], steps


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "import torch\ntry:\n    LEVEL = torch.cuda.get_device_capability()[0]\nexcept RuntimeError:\n    LEVEL = None",
            (T, F, U),
        ),
        ("try:\n    LEVEL = mystery_level()\nexcept Exception:\n    LEVEL = None", (U, U, U)),
        ("try:\n    LEVEL = int('x9')\nexcept ValueError:\n    LEVEL = None", (U, U, U)),
    ],
)
@pytest.mark.parametrize("arch", ["sm90", "sm100", "cpu"])
def test_a_value_a_try_assigns(facts_for, text, expected, arch):
    got, steps = _verdict(facts_for(arch), text, "LEVEL is not None and LEVEL < 10")
    assert got is expected[["sm90", "sm100", "cpu"].index(arch)], steps


@pytest.mark.parametrize(("os", "expected"), [("linux", F), ("darwin", U), ("win32", U), ("", U)])
def test_socket_attributes_by_the_runners_system(facts_for, os, expected):
    from matrix.schedule.model import RunnerPlatform

    facts = replace(facts_for("sm90"), platform=RunnerPlatform(os=os))
    got, steps = _verdict(facts, "import socket", 'not hasattr(socket, "AF_UNIX") or not hasattr(socket, "CMSG_SPACE")')
    assert got is expected, steps
