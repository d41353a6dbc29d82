"""A CPU-suite file whose guard is false without a GPU: no finding expected."""

import unittest

import torch

from sglang.test.ci.ci_register import register_cpu_ci

register_cpu_ci(est_time=3, suite="base-a-test-cpu")


@unittest.skipIf(torch.cuda.is_available(), "CPU path only")
class TestCpuOnly(unittest.TestCase):
    def test_parse(self):
        self.assertTrue(True)
