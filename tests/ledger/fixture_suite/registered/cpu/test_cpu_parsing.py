"""Clean, and registered for the CPU suite only: a 4-gpu-b200 ledger says nothing about it."""

import unittest

from ci_helpers import register_cpu_ci

register_cpu_ci(est_time=5, suite="base-a-test-cpu")


class TestParsing(unittest.TestCase):
    def test_split(self) -> None:
        self.assertEqual("a-b".partition("-")[2], "b")


if __name__ == "__main__":
    unittest.main()
