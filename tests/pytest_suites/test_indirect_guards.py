"""Skips that reach a test from elsewhere: conftest.py, fixtures, helpers, marker hooks, pack decorators.

Each case also runs with the support for its construct switched off (monkeypatched away): the finding must then
disappear, which is what the fixture showed before the support existed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites import collect, packs
from matrix.pytest_suites.audit import PytestAuditReport

Skipping = Callable[[PytestAuditReport], dict[str, str]]

ONE_GPU = (("sm86", "pytest tests/"), ("h100", "pytest tests/"))

AUTOUSE_CONFTEST = {
    "tests/conftest.py": "",
    "tests/ranks/conftest.py": """
        import pytest
        import torch
        @pytest.fixture(autouse=True)
        def _needs_two():
            if torch.cuda.device_count() < 2:
                pytest.skip("two GPUs")
        """,
    "tests/ranks/test_ring.py": "def test_ring():\n    pass\n",
    "tests/test_other.py": "def test_other():\n    pass\n",
}
REQUESTED_FIXTURE = {
    "tests/conftest.py": """
        import pytest
        import torch
        @pytest.fixture
        def blackwell_device():
            if torch.cuda.get_device_capability() != (10, 0):
                pytest.skip("blackwell only")
            return "cuda"
        @pytest.fixture
        def workspace(blackwell_device):
            return blackwell_device
        """,
    "tests/test_ws.py": "def test_uses(workspace):\n    pass\n\ndef test_plain():\n    pass\n",
}
IMPORTED_HELPER = {
    "tests/__init__.py": "",
    "tests/arch.py": """
        import pytest
        from flashinfer.utils import is_sm12x_supported
        def require_sm12x():
            if not is_sm12x_supported(None):
                pytest.skip("consumer blackwell")
        """,
    "tests/test_fp4.py": """
        from tests.arch import require_sm12x
        def test_fp4():
            require_sm12x()
            assert True
        """,
}
MARKER_HOOK = {
    "tests/conftest.py": """
        import pytest
        import torch
        def pytest_collection_modifyitems(config, items):
            cap = torch.cuda.get_device_capability(0) if torch.cuda.is_available() else (0, 0)
            for item in items:
                if "needs_blackwell" in item.keywords and cap < (10, 0):
                    item.add_marker(pytest.mark.skip(reason="sm100+"))
        """,
    "tests/test_marked.py": """
        import pytest
        @pytest.mark.needs_blackwell
        def test_marked():
            pass
        def test_unmarked():
            pass
        """,
}
DECLARED_MARKER = {
    "tests/test_ranks.py": """
        import pytest
        pytestmark = [pytest.mark.two_ranks]
        def test_ranks():
            pass
        """,
}
VLLM_STYLE = {
    "tests/__init__.py": "",
    "tests/utils.py": "",
    "tests/kernels/test_mla.py": """
        import pytest
        from vllm.platforms import current_platform
        from ..utils import multi_gpu_test
        @pytest.mark.skipif(not current_platform.is_device_capability(100), reason="sm100 only")
        def test_exact():
            pass
        @pytest.mark.skipif(not current_platform.has_device_capability(90), reason="sm90+")
        def test_at_least():
            pass
        @pytest.mark.skipif(not current_platform.is_device_capability_family(100), reason="sm10x")
        def test_family():
            pass
        @multi_gpu_test(num_gpus=2)
        def test_two():
            pass
        """,
}


def _off_autouse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect.Collector, "conftests", lambda self, path: [])


def _off_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect.Collector, "_fixture_guards", lambda self, *a, **k: [])


def _off_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect.Collector, "_helper_guards", lambda self, *a: [])


def _off_marker_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect, "read_marker_hooks", lambda tree, path: ())


def _off_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    original = collect.Collector.__init__

    def init(self: collect.Collector, load: object, config: object, pack: object, declared: object = None) -> None:
        original(self, load, config, pack, None)  # type: ignore[arg-type]

    monkeypatch.setattr(collect.Collector, "__init__", init)


def _off_flashinfer_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    packs.builtin_packs.cache_clear()
    original = packs.builtin_packs.__wrapped__
    monkeypatch.setattr("matrix.pytest_suites.run.builtin_packs", lambda: original(("torch", "vllm")))


def _off_vllm_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    original = packs.builtin_packs.__wrapped__
    monkeypatch.setattr("matrix.pytest_suites.run.builtin_packs", lambda: original(("torch", "flashinfer")))


CASES = {
    "conftest-autouse": (AUTOUSE_CONFTEST, {}, {"tests/ranks/test_ring.py::test_ring": "GPU count"}, _off_autouse),
    "requested-fixture": (REQUESTED_FIXTURE, {}, {"tests/test_ws.py::test_uses": "compute capability"}, _off_fixtures),
    "imported-helper": (IMPORTED_HELPER, {}, {"tests/test_fp4.py::test_fp4": "compute capability"}, _off_flashinfer_pack),
    "imported-helper-call": (IMPORTED_HELPER, {}, {"tests/test_fp4.py::test_fp4": "compute capability"}, _off_helpers),
    "marker-hook": (MARKER_HOOK, {}, {"tests/test_marked.py::test_marked": "compute capability"}, _off_marker_hooks),
    "declared-marker": (
        DECLARED_MARKER,
        {"two_ranks": "torch.cuda.device_count() < 2"},
        {"tests/test_ranks.py::test_ranks": "GPU count"},
        _off_declared,
    ),
    "vllm-platform": (
        VLLM_STYLE,
        {},
        {
            "tests/kernels/test_mla.py::test_exact": "compute capability",
            "tests/kernels/test_mla.py::test_at_least": "compute capability",
            "tests/kernels/test_mla.py::test_family": "compute capability",
            "tests/kernels/test_mla.py::test_two": "GPU count",
        },
        _off_vllm_pack,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_indirect_skip_found(
    case: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    files, markers, expected, _ = CASES[case]
    runners = ONE_GPU if case != "vllm-platform" else (("l4", "pytest tests/"),)
    assert skipping(audit(files, schedule(*runners, markers=markers))) == expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_indirect_skip_needs_its_support(
    case: str,
    audit: Callable[..., PytestAuditReport],
    skipping: Skipping,
    schedule: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files, markers, expected, switch_off = CASES[case]
    switch_off(monkeypatch)
    runners = ONE_GPU if case != "vllm-platform" else (("l4", "pytest tests/"),)
    found = skipping(audit(files, schedule(*runners, markers=markers)))
    assert not set(expected) <= set(found)
    packs.builtin_packs.cache_clear()


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("b200", {"test_two"}),  # sm100, one GPU: to_int() 100 == 100, >= 90, family 10
        ("h100", {"test_exact", "test_family", "test_two"}),  # sm90: only has_device_capability(90) holds
        ("h100x2", {"test_exact", "test_family"}),  # two GPUs: multi_gpu_test(num_gpus=2) runs
        ("l4", {"test_exact", "test_at_least", "test_family", "test_two"}),  # sm89
    ],
)
def test_vllm_capability_calls_per_runner(
    label: str, expected: set[str], audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    report = audit(VLLM_STYLE, schedule((label, "pytest tests/")))
    assert {nodeid.rpartition("::")[2] for nodeid in skipping(report)} == expected


def test_gpu_marker_with_torchrun_env(audit: Callable[..., PytestAuditReport], skipping: Skipping) -> None:
    # The declared gpu marker of a conftest that also wants WORLD_SIZE: two GPUs are not enough without it.
    condition = "torch.cuda.device_count() < 2 or os.environ.get('WORLD_SIZE') is None"
    files = {"tests/test_ranks.py": "import pytest\n\n@pytest.mark.two_ranks\ndef test_ranks():\n    pass\n"}
    plain = '[[entry]]\njob = "j"\nlabels = ["h100-2gpu-torchrun"]\npytest = "pytest tests/"\n'
    with_env = plain + 'env = { WORLD_SIZE = "2" }\n'
    markers = f"[markers]\ntwo_ranks = {condition!r}\n"
    # No CI file mentions WORLD_SIZE and the job does not set it: unset there, so the marker skips, and says why.
    unset = audit(files, plain + markers)
    assert set(skipping(unset)) == {"tests/test_ranks.py::test_ranks"}
    assert "needs WORLD_SIZE" in unset.findings[0].finding.message
    assert skipping(audit(files, with_env + markers)) == {}
    one_gpu = plain.replace("h100-2gpu-torchrun", "h100")
    assert skipping(audit(files, one_gpu + markers)) == {"tests/test_ranks.py::test_ranks": "GPU count"}
