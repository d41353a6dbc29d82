"""Guards that are false on every runner the file is registered for: no finding expected."""

import unittest

import pytest
import torch

from sglang.srt.utils import (
    get_device_sm,
    is_blackwell,
    is_hip,
    is_sm90_supported,
    is_sm100_supported,
    is_sm120_supported,
)
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="stage-b-test-1-gpu-large")
register_cuda_ci(est_time=60, stage="base-b", runner_config="4-gpu-b200")

major, minor = torch.cuda.get_device_capability()


@unittest.skipIf(is_hip(), "CUDA only")
@unittest.skipIf(not torch.cuda.is_available(), "needs CUDA")
class TestCleanGuards(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if torch.cuda.device_count() < 1:
            raise unittest.SkipTest("needs a GPU")

    def setUp(self):
        if is_sm90_supported() or is_sm100_supported():
            return
        self.skipTest("needs Hopper or Blackwell")

    @unittest.skipUnless(get_device_sm() >= 90, "needs sm90+")
    def test_decode(self):
        self.assertTrue(True)

    @unittest.skipIf(not (is_sm90_supported() or is_sm100_supported() or is_sm120_supported()), "unsupported arch")
    def test_trtllm_mha(self):
        self.assertTrue(True)

    def test_capability(self):
        if major * 10 + minor < 90:
            self.skipTest("pre-Hopper")
        self.assertTrue(True)


@pytest.mark.skipif("torch.version.hip is not None", reason="CUDA only")
@pytest.mark.skipif(is_blackwell() and torch.cuda.get_device_capability()[0] > 12, reason="unknown future arch")
def test_function_level():
    assert True
