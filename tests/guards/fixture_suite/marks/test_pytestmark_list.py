"""Module marks as a list: one skip condition among other marks."""

import pytest

from sglang.srt.utils import is_blackwell
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="base-b-test-4-gpu-b200")
register_cuda_ci(est_time=60, suite="base-b-test-1-gpu-large")

pytestmark = [
    pytest.mark.skipif(not is_blackwell(), reason="trtllm-gen cubins are Blackwell only"),
    pytest.mark.timeout(600),
]


def test_trtllm_gen_decode():
    assert True
