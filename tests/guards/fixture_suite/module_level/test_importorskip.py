"""pytest.importorskip: runs only where flashinfer is installed (a profile does not say)."""

import pytest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-kernel-unit-test-1-gpu-large")

flashinfer = pytest.importorskip("flashinfer")


def test_decode_wrapper():
    assert flashinfer is not None
