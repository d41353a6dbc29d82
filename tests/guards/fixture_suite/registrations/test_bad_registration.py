"""A registration whose suite is computed: CI tooling reads literals only."""

import unittest

from sglang.test.ci.ci_register import register_cuda_ci

SUITE = "base-b-test-1-gpu-large"
register_cuda_ci(est_time=10, suite=SUITE)


class TestComputedSuite(unittest.TestCase):
    def test_one(self):
        self.assertTrue(True)
