"""A file cut off mid-edit; the audit reports it instead of crashing."""

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-test-1-gpu-large")


class TestBroken(
    def test_one(self):
        pass
