"""Skips raised from setUpClass and setUp."""

import unittest

import torch

from sglang.srt.utils import get_device_sm, is_sm90_supported
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=80, suite="base-b-test-1-gpu-large")
register_cuda_ci(est_time=80, suite="base-b-test-4-gpu-b200")


class TestNeedsBlackwellSM(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if get_device_sm() < 100:
            raise unittest.SkipTest("needs sm100+")

    def test_fp8_kv(self):
        if torch.cuda.get_device_capability() < (10, 0):
            self.skipTest("fp8 KV path is sm100+")
        self.assertTrue(True)


class TestHopperOnlySetUp(unittest.TestCase):
    def setUp(self):
        if not is_sm90_supported():
            self.skipTest("wgmma path")

    def test_wgmma(self):
        self.assertTrue(True)
