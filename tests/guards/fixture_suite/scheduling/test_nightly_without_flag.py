"""A nightly suite registered without nightly=True: no workflow selects it."""

import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=900, suite="nightly-4-gpu-b200")


class TestLongDraftSweep(unittest.TestCase):
    def test_sweep(self):
        self.assertTrue(True)
