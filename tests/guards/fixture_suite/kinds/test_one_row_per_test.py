"""A Hopper-only class on three registrations: one silent-skip row listing both Blackwell runners."""

import unittest

from sglang.srt.utils import is_sm90_supported
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-test-1-gpu-large")
register_cuda_ci(est_time=30, suite="base-b-test-4-gpu-b200")
register_cuda_ci(est_time=30, suite="base-b-test-8-gpu-b200")


@unittest.skipUnless(is_sm90_supported(), "wgmma only")
class TestWgmmaDecode(unittest.TestCase):
    def test_a(self):
        self.assertTrue(True)

    def test_b(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
