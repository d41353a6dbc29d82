"""Fixed: the import names the module the suite ships."""

import unittest

from ci_helpers import register_cuda_ci

register_cuda_ci(est_time=15, suite="base-b-test-4-gpu-b200")

try:
    import fixture_kernels as kernels

    HAVE_KERNELS = True
except ImportError:
    HAVE_KERNELS = False


@unittest.skipUnless(HAVE_KERNELS, "fixture_kernels is not installed")
class TestFusedAdd(unittest.TestCase):
    def test_fused_add(self) -> None:
        self.assertEqual(kernels.fused_add([1.0], [2.0]), [3.0])


if __name__ == "__main__":
    unittest.main()
