"""nightly=True on a suite that the workflows only run without --nightly: no job ever selects it."""

import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="base-b-test-4-gpu-b200", nightly=True)


class TestLongDecode(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
