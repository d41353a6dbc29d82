"""Where sglang's target verify departs from the kit's masked reference: one request at a time.

Usage (GPU host with sglang): python3 ci/probe_target_verify.py [--backend triton --backend flashinfer] [--out F.json]
Exit 1 when an eager or graph+fix row is over the kit's tolerance; the kit's graph case as shipped is shown only.

Runs sglang's attention test kit (sglang/test/kits/attention_unittest, runner_modes/
speculative_target_verify_runner.py: run_dense_spec_verify_case, the eager path, and
run_dense_spec_verify_cuda_graph_case, capture and padded replay, as shipped and with the prefix written where
the batch reads, matrix.gpu.sglang_verify.prefix_where_the_batch_reads) for a chain of 4 draft tokens over a grid
of backend x page size x request-prefix set x KV layout, and prints the largest error of each request in each of
the kit's comparisons instead of stopping at the first failed one. The kit's own comparison is replaced for the
duration of a run by one that records (torch.testing.assert_close); nothing else of the kit is changed.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
import unittest
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from matrix.core.atomic import write_text_atomic  # noqa: E402

DRAFT_TOKENS = 4
PREFIX_SETS: dict[str, tuple[int, ...]] = {  # in the order they run: the most telling first
    "page-edges": (1, 15, 16, 17, 32, 47),  # what the page-16 cells use
    "one-32": (32,),
    "short": (1, 2, 3, 4, 5, 6),  # every request shorter than a page of 16
}
LAYOUTS = ("shuffled_pages", "contiguous")
PATHS = ("eager", "graph", "graph+fix")


@contextmanager
def recording(errors: list[dict[str, Any]]) -> Iterator[None]:
    """torch.testing.assert_close records per-request errors instead of raising."""
    import torch

    def record(actual: Any, expected: Any, **kwargs: Any) -> None:
        diff = (actual.detach().float() - expected.detach().float()).abs()
        rows = diff.reshape(diff.shape[0], -1).amax(dim=1)
        per_request = rows.reshape(-1, DRAFT_TOKENS).amax(dim=1) if rows.numel() % DRAFT_TOKENS == 0 else rows
        per_token = rows.tolist()
        errors.append(
            {
                "leg": len(errors),
                "max": float(diff.max()) if diff.numel() else 0.0,
                "per_request": [round(float(x), 4) for x in per_request.tolist()],
                "per_token": [round(float(x), 4) for x in per_token],
                "atol": kwargs.get("atol"),
            }
        )

    with mock.patch.object(torch.testing, "assert_close", record):
        yield


def run_one(backend: str, page: int, prefixes: tuple[int, ...], layout: str, path: str) -> dict[str, Any]:
    import torch
    from sglang.srt.model_executor.forward_batch_info import ForwardMode
    from sglang.test.kits.attention_unittest.attention_methods.dense_attention import DenseAttentionCase
    from sglang.test.kits.attention_unittest.runner_modes import speculative_target_verify_runner as kit

    from matrix.gpu.sglang_verify import prefix_where_the_batch_reads, verify_context_len

    case = DenseAttentionCase(
        name=f"probe-{backend}-p{page}-{len(prefixes)}",
        backend=backend,
        forward_mode=ForwardMode.TARGET_VERIFY,
        num_heads=8,
        num_kv_heads=2,
        page_size=page,
        prefix_lens=prefixes,
        extend_lens=(DRAFT_TOKENS,) * len(prefixes),
    )
    context = verify_context_len(max(prefixes) + DRAFT_TOKENS)
    errors: list[dict[str, Any]] = []
    started = time.perf_counter()
    build = functools.partial(kit.build_dense_attention_fixture, loc_layout=layout)
    outcome = "compared"
    try:
        with recording(errors), mock.patch.object(kit, "build_dense_attention_fixture", build):
            common: dict[str, Any] = {
                "topk": 1,
                "spec_kind": "frozen_kv_mtp",
                "head_dim": 128,
                "max_context_len": context,
                "dtype": torch.bfloat16,
                "device": "cuda",
            }
            if path == "eager":
                kit.run_dense_spec_verify_case(unittest.TestCase(), case, **common)
            elif path == "graph":
                kit.run_dense_spec_verify_cuda_graph_case(unittest.TestCase(), case, cuda_graph_capture_batch_size=8, **common)
            else:  # the graph case with the prefix written where the batch reads (what the GPU cells run)
                with mock.patch.object(kit, "prepare_dense_runner_inputs", prefix_where_the_batch_reads):
                    kit.run_dense_spec_verify_cuda_graph_case(
                        unittest.TestCase(), case, cuda_graph_capture_batch_size=8, **common
                    )
    except Exception as exc:  # a probe reports every failure and goes on
        outcome = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    return {
        "backend": backend,
        "page": page,
        "prefixes": list(prefixes),
        "layout": layout,
        "path": path,
        "context": context,
        "outcome": outcome,
        "legs": errors,
        "seconds": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", action="append", help="backends (default: triton, flashinfer)")
    parser.add_argument("--page", action="append", type=int, help="page sizes (default: 1, 16)")
    parser.add_argument("--out", type=Path, default=None, help="write every row as JSON here (default: none)")
    args = parser.parse_args(argv)
    rows = []
    bad = 0
    for name, prefixes in PREFIX_SETS.items():
        for backend in args.backend or ["triton", "flashinfer"]:
            for page in args.page or [1, 16]:
                for layout in LAYOUTS:
                    for path in PATHS:
                        row = run_one(backend, page, prefixes, layout, path)
                        row["set"] = name
                        rows.append(row)
                        worst = max((leg["max"] for leg in row["legs"]), default=float("nan"))
                        flag = "BAD" if not worst <= 0.03 or row["outcome"] != "compared" else "ok"
                        bad += flag == "BAD" and path != "graph"  # the kit as shipped: shown, not judged
                        legs = " | ".join(",".join(f"{e:.3f}" for e in leg["per_request"]) for leg in row["legs"])
                        print(
                            f"{flag:3} {backend:10} page{page:<3} {name:10} {layout:14} {path:5} "
                            f"worst {worst:.4f} [{legs}] {row['outcome'] if row['outcome'] != 'compared' else ''}",
                            flush=True,
                        )
    if args.out is not None:
        write_text_atomic(args.out, json.dumps(rows, indent=1) + "\n")
    for path in PATHS:
        mine = [r for r in rows if r["path"] == path]
        over = sum(1 for r in mine if r["outcome"] != "compared" or not max((g["max"] for g in r["legs"]), default=1) <= 0.03)
        print(f"probe {path}: {len(mine) - over} within 0.03, {over} not, of {len(mine)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
