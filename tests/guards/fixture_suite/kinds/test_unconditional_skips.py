"""Deliberate disables written as skips: a class skip, skipIf(True); not arch mismatches."""

import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-test-1-gpu-large")
register_cuda_ci(est_time=30, suite="base-b-test-4-gpu-b200")


@unittest.skip("flaky since the scheduler rewrite")
class TestOverlapScheduler(unittest.TestCase):
    def test_overlap(self):
        self.assertTrue(True)


@unittest.skipIf(True, "temporarily disabled")
class TestChunkedPrefill(unittest.TestCase):
    def test_chunked(self):
        self.assertTrue(True)


class TestStillRuns(unittest.TestCase):
    def test_runs(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
