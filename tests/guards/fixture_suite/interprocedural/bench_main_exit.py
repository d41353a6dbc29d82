"""A registered benchmark script: its __main__ block prints a skip and exits 0 off sm100."""

import sys

from sglang.srt.utils import is_sm100_supported
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=300, suite="base-b-test-1-gpu-large")


def run_benchmark():
    return 0


if __name__ == "__main__":
    if not is_sm100_supported():
        print("Skipping benchmark: trtllm-gen kernels need sm100")
        sys.exit(0)
    sys.exit(run_benchmark())
