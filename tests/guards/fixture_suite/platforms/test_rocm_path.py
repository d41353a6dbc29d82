"""ROCm-only test class, registered for CUDA and for AMD: skipped on CUDA but the AMD job may run it."""

import unittest

from sglang.srt.utils import is_hip
from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-test-1-gpu-large")
register_amd_ci(est_time=30, suite="stage-b-test-1-gpu-small-amd")


@unittest.skipUnless(is_hip(), "aiter kernels are ROCm only")
class TestAiterPagedDecode(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
