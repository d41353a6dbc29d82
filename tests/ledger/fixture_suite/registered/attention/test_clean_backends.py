"""Clean: a guard that holds on every runner of the suite, and plain tests."""

import unittest

from ci_helpers import is_sm90_supported, is_sm100_supported, register_cuda_ci

register_cuda_ci(est_time=20, suite="base-b-test-4-gpu-b200")


@unittest.skipUnless(is_sm90_supported() or is_sm100_supported(), "needs sm90 or sm100")
class TestTritonBackend(unittest.TestCase):
    def test_graph_buffers(self) -> None:
        self.assertEqual(len([0] * 4), 4)


class TestPages(unittest.TestCase):
    def test_page_rounding(self) -> None:
        self.assertEqual(-(-17 // 16) * 16, 32)

    def test_subtests(self) -> None:
        for topk in (1, 2, 4):
            with self.subTest(topk=topk):
                self.assertGreater(topk * 8, 0)


if __name__ == "__main__":
    unittest.main()
