"""Planted: the `__main__` block prints a skip and exits 0 on anything but Hopper, so the runner counts a pass."""

import sys
import unittest

from ci_helpers import is_sm90_supported, register_cuda_ci

register_cuda_ci(est_time=40, suite="base-b-test-4-gpu-b200")


class TestDraftRunner(unittest.TestCase):
    def test_draft_tokens(self) -> None:
        self.assertEqual(max(1, 3), 3)


if __name__ == "__main__":
    if not is_sm90_supported():
        print("skipping test_main_exit_skip: needs sm90")
        sys.exit(0)
    unittest.main()
