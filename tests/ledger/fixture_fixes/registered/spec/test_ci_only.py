"""Fixed: the sweep is cut to a size CI can afford, and the is_in_ci() guard is gone."""

import unittest

from ci_helpers import register_cuda_ci

register_cuda_ci(est_time=25, suite="base-b-test-4-gpu-b200")


class TestSpeculativeAcceptance(unittest.TestCase):
    def test_long_acceptance_sweep(self) -> None:
        self.assertEqual(sum(range(10)), 45)

    def test_short_acceptance(self) -> None:
        self.assertEqual(sum(range(4)), 6)


if __name__ == "__main__":
    unittest.main()
