"""A whole registered module disabled with a module-level skip mark."""

import pytest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-test-1-gpu-large")

pytestmark = pytest.mark.skip(reason="waiting for the new allocator")


def test_alloc():
    assert True
