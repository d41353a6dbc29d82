"""Registration forms: positional, keyword, stage/runner_config, attribute call; all clean."""

import unittest

from sglang.test.ci import ci_register
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(60, "stage-b-test-1-gpu-large", False, None)
register_cuda_ci(est_time=60, stage="base-b", runner_config="4-gpu-b200")
ci_register.register_cuda_ci(est_time=60, suite="base-b-test-1-gpu-small")


class TestForms(unittest.TestCase):
    def test_one(self):
        self.assertTrue(True)
