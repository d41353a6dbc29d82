"""A CUDA registration plus other platforms' registrations, one disabled with an empty suite."""

import unittest

from sglang.test.ci.ci_register import register_cuda_ci, register_npu_ci, register_xpu_ci

register_cuda_ci(est_time=40, suite="base-b-test-1-gpu-large")
register_npu_ci(est_time=400, suite="", nightly=True, disabled="no NPU runner with this model yet")
register_xpu_ci(est_time=100, suite="per-commit-xpu")


class TestSampling(unittest.TestCase):
    def test_top_p(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
