"""An AMD-only registration: out of scope, its ROCm guard must not be read as a CUDA skip."""

import unittest

from sglang.srt.utils import is_hip
from sglang.test.ci.ci_register import register_amd_ci

register_amd_ci(est_time=30, suite="stage-b-test-1-gpu-small-amd")


@unittest.skipIf(not is_hip(), "ROCm only")
class TestAiterDecode(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)
