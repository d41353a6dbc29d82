"""Planted: a guard on is_in_ci(); in CI it always skips, so on its registered runner it never runs."""

import unittest

from ci_helpers import is_in_ci, register_cuda_ci

register_cuda_ci(est_time=25, suite="base-b-test-4-gpu-b200")


class TestSpeculativeAcceptance(unittest.TestCase):
    @unittest.skipIf(is_in_ci(), "too slow for CI")
    def test_long_acceptance_sweep(self) -> None:
        self.assertEqual(sum(range(10)), 45)

    def test_short_acceptance(self) -> None:
        self.assertEqual(sum(range(4)), 6)


if __name__ == "__main__":
    unittest.main()
