"""A suite name with a typo in its runner_config (b20 for b200)."""

import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-test-4-gpu-b20")


class TestTypo(unittest.TestCase):
    def test_one(self):
        self.assertTrue(True)
