"""A1 = A*A ... A26: a CPU and memory bomb if evaluated."""

import unittest

from sglang.srt.utils import get_device_sm
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=10, suite="base-b-test-1-gpu-large")

A = 7
A1 = A * A
A2 = A1 * A1
A3 = A2 * A2
A4 = A3 * A3
A5 = A4 * A4
A6 = A5 * A5
A7 = A6 * A6
A8 = A7 * A7
A9 = A8 * A8
A10 = A9 * A9
A11 = A10 * A10
A12 = A11 * A11
A13 = A12 * A12
A14 = A13 * A13
A15 = A14 * A14
A16 = A15 * A15
A17 = A16 * A16
A18 = A17 * A17
A19 = A18 * A18
A20 = A19 * A19
A21 = A20 * A20
A22 = A21 * A21
A23 = A22 * A22
A24 = A23 * A23
A25 = A24 * A24
A26 = A25 * A25


@unittest.skipIf(A26 > get_device_sm(), "hostile guard")
class TestHostile(unittest.TestCase):
    def test_x(self):
        self.assertTrue(True)
