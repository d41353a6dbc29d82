"""The file imports is_blackwell, then redefines it more narrowly; the local definition is the one used."""

import unittest

from sglang.srt.utils import get_device_sm, is_blackwell
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=40, suite="base-b-test-4-gpu-b200")
register_cuda_ci(est_time=40, suite="base-b-test-1-gpu-small")


def is_blackwell():  # noqa: F811 - datacenter Blackwell only for this kernel
    return get_device_sm() in (100, 103)


@unittest.skipUnless(is_blackwell(), "datacenter Blackwell only")
class TestTmemAllocator(unittest.TestCase):
    def test_alloc(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
