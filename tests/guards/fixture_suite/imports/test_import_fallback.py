"""An optional import with a None fallback: whether it is None depends on the install, not always None."""

import unittest

from sglang.test.ci.ci_register import register_cuda_ci

try:
    from flashinfer.decode import fast_decode_plan
except ImportError:
    fast_decode_plan = None

register_cuda_ci(est_time=30, suite="base-b-test-1-gpu-large")


@unittest.skipIf(fast_decode_plan is None, "flashinfer without fast_decode_plan")
class TestFastDecodePlan(unittest.TestCase):
    def test_plan(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
