"""`nox -s bench`: time the draft-decode attention of every RUN cell (graph replay, CUDA events).

Writes bench.json, bench.md and (when matplotlib is there) bench.png into --out.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matrix.gpu.benchtable import BenchRow, markdown_table, plot_series, ratios
from matrix.gpu.cases import DraftCase, draft_case
from matrix.selectors import select

# Long enough that the kernels, not launch overhead, dominate (kept on page boundaries).
BENCH_PREFIX_TOKENS = 2048
DEFAULT_SELECT = "draft-{triton,trtllm_mha}-*-graph"


def bench_case(case: DraftCase) -> DraftCase:
    return dataclasses.replace(case, seq_lens=tuple(n + BENCH_PREFIX_TOKENS for n in case.seq_lens))


def _row(case: DraftCase, impl: str, us: float) -> BenchRow:
    gqa = case.num_q_heads // case.num_kv_heads
    return BenchRow(
        cell=case.cell_id,
        backend=case.backend,
        impl=impl,
        topk=case.topk,
        page_size=case.page_size,
        head_dim=case.head_dim,
        gqa=gqa,
        dtype=case.dtype,
        rows=case.max_bs * case.topk,
        median_us=us,
    )


def time_cell(case: DraftCase, *, with_flashinfer: bool) -> list[BenchRow]:
    """sglang backend graph; for trtllm_mha cells also the raw kernels (XQA via flashinfer, and fa2)."""
    from matrix.gpu.kernels import FlashinferPagedDecode, FlashinferTrtllmDecode, KernelDraftGraph
    from matrix.gpu.paged import build_requests, expand_rows
    from matrix.gpu.sglang_draft import SglangDraftGraph, build_sglang_draft
    from matrix.gpu.timing import time_replays

    paged = build_requests(case, case.max_bs, device="cuda")
    rows = expand_rows(paged)
    out: list[BenchRow] = []
    draft = build_sglang_draft(paged, device="cuda")
    graph = SglangDraftGraph(draft)
    graph.capture()
    graph.replay(rows, case.max_bs)
    out.append(_row(case, f"sglang-{case.backend}", time_replays(graph.graphs[case.max_bs].replay).median_us))
    if case.backend == "trtllm_mha":
        kernel = FlashinferTrtllmDecode(paged, max_rows=case.max_bs * case.topk)
        kgraph = KernelDraftGraph(kernel, case, device="cuda")
        kgraph.capture()
        kgraph.replay(rows, case.max_bs)
        out.append(_row(case, "flashinfer-trtllm", time_replays(kgraph.graphs[case.max_bs].replay).median_us))
        if with_flashinfer:
            import torch

            from matrix.gpu.graphs import capture_graph

            fa2 = FlashinferPagedDecode(paged, rows, use_cuda_graph=True)
            buf = torch.empty_like(rows.query)
            g = capture_graph(lambda: fa2.decode(rows.query, rows.block_tables, rows.seq_lens, buf))
            out.append(_row(case, "flashinfer-fa2", time_replays(g.replay).median_us))
    return out


def _plot(rows: Sequence[BenchRow], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    series = plot_series(rows, head_dim=128, gqa=4, dtype="bf16")
    pages = sorted(series)
    if not pages:
        return False
    fig, axes = plt.subplots(1, len(pages), figsize=(5 * len(pages), 4), squeeze=False)
    for ax, page in zip(axes[0], pages, strict=True):
        for impl, points in sorted(series[page].items()):
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=impl)
        ax.set_title(f"draft decode, page {page}, hd128 gqa4 bf16, 8 requests")
        ax.set_xlabel("topk (rows = 8 * topk)")
        ax.set_ylabel("median graph replay (us)")
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_kernels")
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    parser.add_argument("--runner", default="auto")
    parser.add_argument("--select", default=DEFAULT_SELECT)
    parser.add_argument(
        "--flashinfer-select",
        default="draft-trtllm_mha-*-hd128-gqa4-bf16-graph",
        help="cells whose shape is also timed with flashinfer's paged decode (fa2); '' for none",
    )
    args = parser.parse_args(argv)

    from matrix.options import CliOverrides, load, resolve_options
    from matrix.planning import plan_for

    loaded = load(resolve_options(cli=CliOverrides(), env=os.environ, cwd=Path.cwd()))
    plan = plan_for(loaded, args.runner, os.environ)
    chosen = select(list(loaded.matrix.cells), [args.select])
    fa2_ids = {c.id for c in select(list(loaded.matrix.cells), [args.flashinfer_select])} if args.flashinfer_select else set()
    run_cells = [c for c in chosen if plan.expectations[c.id].outcome.value == "run"]
    rows: list[BenchRow] = []
    failures: dict[str, str] = {}
    started = time.perf_counter()
    for cell in run_cells:
        case = bench_case(draft_case(cell))
        try:
            rows.extend(time_cell(case, with_flashinfer=cell.id in fa2_ids))
        except Exception as exc:  # a failing cell is reported, the bench goes on
            failures[cell.id] = f"{type(exc).__name__}: {exc}"[:400]
        print(f"bench {cell.id}: {[round(r.median_us, 1) for r in rows if r.cell == cell.id]}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "runner": plan.runner.name,
        "device": _device_name(),
        "host": platform.node(),
        "prefix_tokens": BENCH_PREFIX_TOKENS,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "rows": [dataclasses.asdict(r) for r in rows],
        "ratio_trtllm_mha_over_triton": ratios(rows),
        "failures": failures,
    }
    (args.out / "bench.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (args.out / "bench.md").write_text(markdown_table(rows), encoding="utf-8")
    plotted = _plot(rows, args.out / "bench.png")
    print(f"bench: {len(rows)} timings, {len(failures)} failures, plot={'yes' if plotted else 'no'} -> {args.out}")
    return 0


def _device_name() -> str:
    import torch

    return str(torch.cuda.get_device_name(0))


if __name__ == "__main__":
    sys.exit(main())
