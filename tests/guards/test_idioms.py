"""Guard idioms seen in sglang's registered tree, each planted in a fresh file and audited on a schedule."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.guards.model import GuardFindingKind
from matrix.registered_suite import audit_tree
from matrix.schedule.load import load_schedule

K = GuardFindingKind
RUNNERS = load_runners()
HEADER = (
    "import os\nimport unittest\nimport torch\n"
    "from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci\n"
    'register_cuda_ci(est_time=5, suite="base-b-test-4-gpu-b200")\n'
)
WORKFLOW = """on: pull_request
jobs:
  b200:
    runs-on: 4-gpu-b200
    env:
      SGLANG_IS_IN_CI: "true"
      RUN_SET_E2E: "1"
    steps:
      - run: cd test && python3 run_suite.py --hw cuda --suite base-b-test-4-gpu-b200
"""


def audit(tmp_path: Path, body: str, *, workflow: str = WORKFLOW):
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "ci.yml").write_text(workflow, encoding="utf-8")
    (repo / "test").mkdir()
    (repo / "test" / "test_case.py").write_text(HEADER + body, encoding="utf-8")
    return audit_tree(repo / "test", RUNNERS, schedule=load_schedule(repo, RUNNERS))


def kinds(report) -> dict[str, GuardFindingKind]:
    return {f.scope.split("::", 1)[-1]: f.kind for f in report.findings}


TUPLE_HELPER = """
def _capable():
    if not torch.cuda.is_available():
        return False, "no CUDA"
    major, _ = torch.cuda.get_device_capability()
    if major != {major}:
        return False, f"needs sm{major}0, got {{major}}"
    return True, ""


_OK, _WHY = _capable()


@unittest.skipIf(not _OK, _WHY)
class TestArch(unittest.TestCase):
    def test_a(self):
        pass
"""


@pytest.mark.parametrize(("major", "expected"), [(9, K.NEVER_RUNS), (10, None)], ids=["sm90-only", "sm100"])
def test_tuple_returning_helper_unpacked_at_module_level(tmp_path, major, expected):
    found = kinds(audit(tmp_path, TUPLE_HELPER.format(major=major)))
    assert found.get("TestArch") == expected


def test_decorator_applying_the_skip_with_a_local_import(tmp_path):
    body = '''
def needs_hopper(func):
    """Skip unless Hopper."""
    from sglang.srt.utils import is_sm90_supported

    return unittest.skipUnless(is_sm90_supported(), "hopper")(func)


class TestKernel(unittest.TestCase):
    @needs_hopper
    def test_kernel(self):
        pass

    def test_other(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
'''
    found = kinds(audit(tmp_path, body))
    assert found == {"TestKernel::test_kernel": K.NEVER_RUNS}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("is_in_ci()", K.SILENT_PASS),
        ("not is_in_ci()", None),
        ('os.environ.get("RUN_SET_E2E") == "1"', K.SILENT_PASS),
        ("not is_sm100_supported()", None),
    ],
)
def test_early_return_when_a_ci_fact_holds_is_a_silent_pass(tmp_path, condition, expected):
    body = f"""
from sglang.test.test_utils import is_in_ci
from sglang.srt.utils import is_sm100_supported


class TestLong(unittest.TestCase):
    def test_sweep(self):
        if {condition}:
            return
        self.assertTrue(True)
"""
    report = audit(tmp_path, body)
    assert kinds(report).get("TestLong::test_sweep") == expected
    if expected is not None:
        (finding,) = report.of_kind(expected)
        assert finding.runners == ("4-gpu-b200",)
        assert "returns early" in finding.message and finding.failing


@pytest.mark.parametrize(
    ("guard", "expected"),
    [
        ("unittest.skipIf(not is_blackwell_system(), 'B200')", None),
        ("unittest.skipIf(is_blackwell_system(), 'not on Blackwell')", K.NEVER_RUNS),
        ("unittest.skipIf(get_jit_cuda_arch().major != 9, 'hopper jit')", K.NEVER_RUNS),
        ("unittest.skipIf(get_jit_cuda_arch().major < 10, 'sm100 jit')", None),
        ("unittest.skipIf(get_gpu_count() < 8, '8 GPUs')", K.NEVER_RUNS),
        ("unittest.skipIf(get_gpu_count() < 4, '4 GPUs')", None),
        ("unittest.skipIf(_CUDA_MAJOR < 13, 'CUDA 13')", None),
        ("unittest.skipIf(_CUDA_MAJOR >= 13, 'CUDA 12 only')", K.NEVER_RUNS),
        ("unittest.skipUnless(_grace(), 'Grace-Blackwell')", K.NEVER_RUNS),
        ("unittest.skipIf(_grace(), 'not on Grace')", None),
    ],
)
def test_predicates_the_profiles_answer(tmp_path, guard, expected):
    body = f"""
import pynvml
from sglang.jit_kernel.utils import get_jit_cuda_arch
from sglang.test.test_utils import get_gpu_count, is_blackwell_system

_CUDA_MAJOR = int(torch.version.cuda.split(".")[0]) if torch.version.cuda else 0


def _grace():
    pynvml.nvmlInit()
    name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
    return "GB200" in name or "GB300" in name


class TestPredicate(unittest.TestCase):
    @{guard}
    def test_it(self):
        pass
"""
    found = kinds(audit(tmp_path, body))
    assert found.get("TestPredicate::test_it") == expected, found


def test_grace_blackwell_name_is_read_on_the_gb200_profile():
    from matrix.guards.evaluate import evaluate_text
    from matrix.guards.predicates import RunnerFacts

    facts = RunnerFacts(profile=RUNNERS["4-gpu-gb200"])
    text = '"GB200" in pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))'
    assert evaluate_text(text, facts).skips.value == "true"
    assert RUNNERS["4-gpu-gb200"].host_arch == "aarch64" and RUNNERS["4-gpu-gb200"].sm == 100


@pytest.mark.parametrize(
    ("variable", "expected", "said"),
    [
        ("RUN_NEVER_SET_E2E", K.NEVER_RUNS, "needs RUN_NEVER_SET_E2E, which no scheduled job sets"),
        ("RUN_SET_E2E", None, ""),
        ("HF_TOKEN_FROM_SECRETS", K.UNDETERMINED, "set at run time"),
    ],
)
def test_environment_opt_in_is_judged_against_the_schedule(tmp_path, variable, expected, said):
    workflow = WORKFLOW.replace('RUN_SET_E2E: "1"', 'RUN_SET_E2E: "1"\n      HF_TOKEN_FROM_SECRETS: ${{ secrets.HF }}')
    body = f'''
@unittest.skipUnless(os.environ.get("{variable}"), "opt-in")
class TestOptIn(unittest.TestCase):
    def test_a(self):
        pass
'''
    report = audit(tmp_path, body, workflow=workflow)
    assert kinds(report).get("TestOptIn") == expected
    if said:
        assert said in next(f for f in report.findings if f.scope.endswith("TestOptIn")).message


def test_a_variable_the_test_module_sets_itself_is_not_an_unset_opt_in(tmp_path):
    """`os.environ.setdefault(...)` at module level runs before the class decorator reads the variable."""
    body = """
os.environ.setdefault("RUN_NEVER_SET_E2E", "1")


@unittest.skipUnless(os.environ.get("RUN_NEVER_SET_E2E"), "opt-in")
class TestOptIn(unittest.TestCase):
    def test_a(self):
        pass
"""
    assert kinds(audit(tmp_path, body)).get("TestOptIn") == K.UNDETERMINED


@pytest.mark.parametrize(
    ("target", "expected"), [("$GITHUB_ENV", None), ("$GITHUB_ENV_FILE", K.UNDETERMINED)], ids=["github-env", "other-file"]
)
def test_a_variable_written_to_github_env_is_set_and_one_merely_mentioned_is_unknown(tmp_path, target, expected):
    workflow = WORKFLOW.replace("      - run:", f'      - run: echo RUN_EXPORTED_E2E=1 >> "{target}"\n      - run:')
    body = """
@unittest.skipUnless(os.environ.get("RUN_EXPORTED_E2E"), "opt-in")
class TestOptIn(unittest.TestCase):
    def test_a(self):
        pass
"""
    assert kinds(audit(tmp_path, body, workflow=workflow)).get("TestOptIn") == expected


@pytest.mark.parametrize(
    ("registers_amd", "expected"), [(True, K.OUT_OF_SCOPE), (False, K.NEVER_RUNS)], ids=["twin", "cuda-only-file"]
)
def test_platform_only_test_in_a_file_that_registers_the_platform(tmp_path, registers_amd, expected):
    body = (
        ('register_amd_ci(est_time=5, suite="stage-b-test-1-gpu-small-amd")\n' if registers_amd else "")
        + """
from sglang.srt.utils import is_hip


class TestCommon(unittest.TestCase):
    def test_everywhere(self):
        pass

    @unittest.skipUnless(is_hip(), "ROCm only")
    def test_rocm_path(self):
        pass
"""
    )
    report = audit(tmp_path, body)
    finding = next(f for f in report.findings if f.scope.endswith("test_rocm_path"))
    assert finding.kind == expected
    if registers_amd:
        assert "ROCm-only test" in finding.message and not finding.failing
