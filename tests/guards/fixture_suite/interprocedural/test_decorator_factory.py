"""A decorator factory of this file returns unittest.skipUnless(...): Hopper only, registered on B200 only."""

import unittest

import torch

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=90, suite="base-c-test-4-gpu-b200")


def requires_major(major):
    return unittest.skipUnless(torch.cuda.get_device_capability()[0] == major, f"sm{major}x only")


def hopper_only(cls):
    return unittest.skipUnless(torch.cuda.get_device_capability() == (9, 0), "sm90 only")(cls)


@requires_major(9)
class TestWgmmaPath(unittest.TestCase):
    def test_wgmma(self):
        self.assertTrue(True)


@hopper_only
class TestFa3Path(unittest.TestCase):
    def test_fa3(self):
        self.assertTrue(True)


@requires_major(10)
class TestTcgen05Path(unittest.TestCase):
    def test_tcgen05(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
