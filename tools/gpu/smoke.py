"""`python -m tools.gpu.smoke [CELL:LEVEL ...]`: run a few cell checks in one process, no pytest.

For bringing up a new GPU host: each check prints its errors and timings or its traceback.
"""

from __future__ import annotations

import json
import sys
import time
import traceback

from matrix.core.loader import load_matrix
from matrix.gpu.cases import draft_case

DEFAULT_CHECKS = (
    "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph:kernel",
    "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph:sglang",
    "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph:runner",
    "draft-triton-topk4-page16-hd128-gqa4-bf16-graph:runner",
    "draft-triton-topk8-page64-hd128-gqa4-bf16-graph:runner",
    "draft-trtllm_mha-topk1-page64-hd256-gqa4-bf16-graph:runner",
    "draft-flashinfer-topk1-page16-hd128-gqa4-bf16-graph:sglang",
    "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph:sglang",
    "target-trtllm_mha-topk1-page64-hd128-dt4-gqa4-bf16-graph:target",
    "target-triton-topk1-page16-hd128-dt4-gqa4-bf16-graph:target-sglang",
    "target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph:target-sglang",
    "target-flashinfer-topk1-page1-hd128-dt4-gqa4-bf16-graph:target-sglang",
    "target-flashinfer-topk4-page16-hd128-dt4-gqa4-bf16-graph:target-sglang",
    "target-fa3-topk1-page16-hd128-dt4-gqa4-bf16-graph:target-sglang",
)


def main(argv: list[str]) -> int:
    from matrix.gpu.checks import CHECKS

    matrix = load_matrix()
    failed = 0
    checks = list(argv or DEFAULT_CHECKS)
    for spec in checks:
        cell_id, level = spec.rsplit(":", 1)
        start = time.perf_counter()
        try:
            report = CHECKS[level](draft_case(matrix.cell(cell_id)))
            status = "FAIL " + "; ".join(report.problems) if report.problems else "ok"
            detail = json.dumps(report.as_dict())
        except Exception:
            status, detail = "ERROR", traceback.format_exc()
        failed += status != "ok"
        print(smoke_line(time.perf_counter() - start, status, spec, detail), flush=True)
    print(f"smoke: {len(checks) - failed} ok, {failed} failed of {len(checks)}", flush=True)
    return 1 if failed else 0


def smoke_line(seconds: float, status: str, spec: str, detail: str) -> str:
    """One check's line: the whole status (a failure keeps its problems), then the details indented."""
    return f"[{seconds:6.1f}s] {spec}: {status}\n    {detail}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
