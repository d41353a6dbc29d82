"""A helper with early returns decides the guard; on the only registered runner (sm90) it says no."""

import unittest

import torch

from sglang.srt.utils import get_device_sm
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=70, suite="base-b-test-1-gpu-large")


def _arch_has_tma_multicast():
    if not torch.cuda.is_available():
        return False
    sm = get_device_sm()
    if sm >= 100:
        return True
    return False


def _check():
    return _arch_has_tma_multicast()


class TestTmaMulticast(unittest.TestCase):
    def setUp(self):
        if not _check():
            self.skipTest("TMA multicast needs sm100+")

    def test_copy(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
