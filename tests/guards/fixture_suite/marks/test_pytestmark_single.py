"""A single module mark: needs four GPUs, registered on a one-GPU suite too."""

import pytest
import torch

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=200, suite="base-c-test-4-gpu-b200")
register_cuda_ci(est_time=200, suite="base-b-test-1-gpu-small")

pytestmark = pytest.mark.skipif(torch.cuda.device_count() < 4, reason="needs tp=4")


def test_tp4_decode():
    assert True
