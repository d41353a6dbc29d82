"""The same class after the fix: sm100 (trtllm-gen) is accepted too."""

import unittest

from sglang.srt.utils import is_sm90_supported, is_sm100_supported, is_sm120_supported
from sglang.test.ci.ci_register import register_cuda_ci
from sglang.test.test_utils import CustomTestCase

register_cuda_ci(est_time=120, stage="base-b", runner_config="4-gpu-b200")
register_cuda_ci(est_time=90, suite="stage-b-test-1-gpu-large")


@unittest.skipIf(
    not (is_sm90_supported() or is_sm100_supported() or is_sm120_supported()),
    "trtllm_mha needs sm90, sm100 or sm120",
)
class TestTRTLLMMHADecode(CustomTestCase):
    def test_decode_topk1(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
