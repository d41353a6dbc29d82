"""Guards that depend on facts no runner profile gives: listed as undetermined, never guessed."""

import os
import unittest

from sglang.srt.utils import is_flashinfer_available
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=20, suite="base-b-test-1-gpu-large")


def is_sm90_supported():
    """A local helper with the same name as sglang's; the audit must not assume its meaning."""
    return os.environ.get("FAKE_ARCH") == "sm90"


class TestUnknowns(unittest.TestCase):
    @unittest.skipIf(os.environ.get("SGLANG_CI_SMALL") == "1", "small CI")
    def test_env(self):
        self.assertTrue(True)

    @unittest.skipUnless(is_flashinfer_available(), "needs flashinfer")
    def test_flashinfer(self):
        self.assertTrue(True)

    @unittest.skipUnless(is_sm90_supported(), "local helper")
    def test_local_helper(self):
        self.assertTrue(True)
