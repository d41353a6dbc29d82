"""An sm120-only kernel whose guard goes through a helper of this file (tuple-unpacked capability)."""

import unittest

import torch

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=50, suite="base-b-test-1-gpu-small")
register_cuda_ci(est_time=50, suite="base-b-test-4-gpu-b200")


def _supported():
    major, _ = torch.cuda.get_device_capability()
    return major == 12


@unittest.skipUnless(_supported(), "consumer Blackwell only")
class TestFp4GemmSm120(unittest.TestCase):
    def test_gemm(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
