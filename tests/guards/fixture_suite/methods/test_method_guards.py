"""Method-level guards: an unconditional unittest.skip and a pytest mark on a function."""

import unittest

import pytest

from sglang.srt.utils import is_sm100_supported
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="stage-b-test-1-gpu-large")
register_cuda_ci(est_time=60, suite="base-b-test-4-gpu-b200")


class TestMethodGuards(unittest.TestCase):
    @unittest.skip("flaky, disabled while investigating")
    def test_flaky(self):
        self.assertTrue(True)

    def test_stable(self):
        self.assertTrue(True)


@pytest.mark.skipif(not is_sm100_supported(), reason="trtllm-gen prefill is sm100 only")
def test_trtllm_gen_prefill():
    assert True
