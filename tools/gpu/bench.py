"""`nox -s bench`: time the draft-decode attention of every RUN cell (graph replay, CUDA events).

Writes bench.json, bench.md and (when matplotlib is there) bench.png (latency vs topk) and bench-ratio.png
(trtllm_mha / triton for every shape) into --out. `--replot bench.json` rebuilds the table and pictures
from saved timings, without a GPU.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from matrix.core.atomic import save_figure, write_text_atomic
from matrix.core.selectors import select
from matrix.gpu.cases import DraftCase, draft_case
from tools.gpu.benchtable import BenchRow, markdown_table, plot_series, ratio_groups, ratios, row_from_dict

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


def time_cell(case: DraftCase, *, with_flashinfer: bool) -> tuple[list[BenchRow], dict[str, str]]:
    """sglang backend graph; for trtllm_mha cells also the raw kernels (XQA via flashinfer, and fa2).

    Each implementation is timed on its own: one that fails is recorded by name and the others still run.
    """
    from matrix.gpu.paged import build_requests, expand_rows

    paged = build_requests(case, case.max_bs, device="cuda")
    rows = expand_rows(paged)
    out: list[BenchRow] = []
    failures: dict[str, str] = {}
    timers: list[tuple[str, Callable[[], float]]] = [(f"sglang-{case.backend}", lambda: _sglang_us(case, paged, rows))]
    if case.backend == "trtllm_mha":
        timers.append(("flashinfer-trtllm", lambda: _trtllm_us(case, paged, rows)))
        if with_flashinfer:
            timers.append(("flashinfer-fa2", lambda: _fa2_us(paged, rows)))
    for impl, timer in timers:
        try:
            out.append(_row(case, impl, timer()))
        except Exception as exc:  # reported per implementation; the bench goes on
            failures[impl] = f"{type(exc).__name__}: {exc}"[:400]
    return out, failures


def _sglang_us(case: DraftCase, paged: Any, rows: Any) -> float:
    from matrix.gpu.sglang_draft import SglangDraftGraph, build_sglang_draft
    from matrix.gpu.timing import time_replays

    graph = SglangDraftGraph(build_sglang_draft(paged, device="cuda"))
    graph.capture()
    graph.replay(rows, case.max_bs)
    return time_replays(graph.graphs[case.max_bs].replay).median_us


def _trtllm_us(case: DraftCase, paged: Any, rows: Any) -> float:
    from matrix.gpu.kernels import FlashinferTrtllmDecode, KernelDraftGraph
    from matrix.gpu.timing import time_replays

    kgraph = KernelDraftGraph(FlashinferTrtllmDecode(paged, max_rows=case.max_bs * case.topk), case, device="cuda")
    kgraph.capture()
    kgraph.replay(rows, case.max_bs)
    return time_replays(kgraph.graphs[case.max_bs].replay).median_us


def _fa2_us(paged: Any, rows: Any) -> float:
    import torch

    from matrix.gpu.graphs import capture_graph
    from matrix.gpu.kernels import FlashinferPagedDecode
    from matrix.gpu.timing import time_replays

    fa2 = FlashinferPagedDecode(paged, rows, use_cuda_graph=True)
    buf = torch.empty_like(rows.query)
    g = capture_graph(lambda: fa2.decode(rows.query, rows.block_tables, rows.seq_lens, buf))
    return time_replays(g.replay).median_us


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _plot(rows: Sequence[BenchRow], path: Path) -> bool:
    plt = _pyplot()
    series = plot_series(rows, head_dim=128, gqa=4, dtype="bf16")
    pages = sorted(series)
    if plt is None or not pages:
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
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return True


def _plot_ratios(rows: Sequence[BenchRow], path: Path) -> bool:
    """One group of bars per cell shape, one bar per topk: below 1.0 trtllm_mha is faster."""
    plt = _pyplot()
    groups = ratio_groups(rows)
    if plt is None or not groups:
        return False
    topks = sorted({k for pairs in groups.values() for k in pairs})
    width = 0.8 / len(topks)
    fig, ax = plt.subplots(figsize=(max(8.0, 0.6 * len(groups) + 2), 4.5))
    for i, topk in enumerate(topks):
        xs = [g + (i - (len(topks) - 1) / 2) * width for g, pairs in enumerate(groups.values()) if topk in pairs]
        ys = [pairs[topk] for pairs in groups.values() if topk in pairs]
        ax.bar(xs, ys, width=width, label=f"topk {topk}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(groups)), list(groups), rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("trtllm_mha / triton latency")
    ax.set_ylim(0, 1.2 * max(v for pairs in groups.values() for v in pairs.values()))
    ax.set_title("draft decode, every RUN shape: below 1.0 trtllm_mha (XQA on sm90) is faster")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(ncol=len(topks), loc="upper left", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return True


def write_outputs(doc: dict[str, Any], rows: Sequence[BenchRow], out: Path) -> str:
    """bench.json, bench.md and the pictures; returns what was plotted."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "bench.json", json.dumps(doc, indent=1) + "\n")
    write_text_atomic(out / "bench.md", markdown_table(rows))
    plotted = [
        name
        for name, ok in (
            ("bench.png", _plot(rows, out / "bench.png")),
            ("bench-ratio.png", _plot_ratios(rows, out / "bench-ratio.png")),
        )
        if ok
    ]
    return ", ".join(plotted) or "no plot (matplotlib missing)"


def replot(source: Path, out: Path) -> int:
    from matrix.core.errors import ReportError
    from matrix.core.jsonio import loads_untrusted
    from matrix.core.textfiles import read_text

    # The core's bounded reader: a huge integer, NaN, deep nesting or bad JSON is one line, never a traceback.
    doc = loads_untrusted(read_text(source, ReportError), str(source), ReportError, what="bench.json", malformed="not a")
    try:
        rows = [row_from_dict(r) for r in doc["rows"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ReportError(f"{source}: not a bench.json ({type(exc).__name__}: {exc})") from None
    doc["ratio_trtllm_mha_over_triton"] = ratios(rows)
    print(f"bench: {len(rows)} timings from {source}: {write_outputs(doc, rows, out)} -> {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_kernels")
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    parser.add_argument("--runner", default="auto")
    parser.add_argument("--replot", type=Path, metavar="BENCH_JSON", help="rebuild table and pictures from saved timings; no GPU")
    parser.add_argument("--select", default=DEFAULT_SELECT)
    parser.add_argument(
        "--flashinfer-select",
        default="draft-trtllm_mha-*-hd128-gqa4-bf16-graph",
        help="cells whose shape is also timed with flashinfer's paged decode (fa2); '' for none",
    )
    args = parser.parse_args(argv)
    from matrix.core.errors import SpecmatrixError

    try:
        if args.replot is not None:
            return replot(args.replot, args.out)
        return _bench(args)
    except SpecmatrixError as exc:
        print(f"bench_kernels: error: {exc}", file=sys.stderr)
        return exc.exit_code


def cannot_run(runner: str, selected: int, select_text: str) -> str | None:
    """Why nothing can be timed here (one line), or None: no selected cell runs on the runner, or no CUDA torch."""
    if not selected:
        return f"runner {runner} runs none of the cells {select_text!r} selects (on a host with no GPU none runs)"
    try:
        import torch
    except ImportError as exc:
        return f"needs torch with CUDA ({exc}); `nox -s bench` installs it on a GPU host"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def _bench(args: argparse.Namespace) -> int:
    from matrix.core.options import CliOverrides, load, resolve_options
    from matrix.core.planning import plan_for

    loaded = load(resolve_options(cli=CliOverrides(), env=os.environ, cwd=Path.cwd()))
    plan = plan_for(loaded, args.runner, os.environ)
    chosen = select(list(loaded.matrix.cells), [args.select])
    fa2_ids = {c.id for c in select(list(loaded.matrix.cells), [args.flashinfer_select])} if args.flashinfer_select else set()
    run_cells = [c for c in chosen if plan.expectations[c.id].outcome.value == "run"]
    why = cannot_run(plan.runner.name, len(run_cells), args.select)
    if why is not None:
        print(f"bench_kernels: cannot run: {why}; nothing timed", file=sys.stderr)
        return 2
    rows: list[BenchRow] = []
    failures: dict[str, str] = {}
    started = time.perf_counter()
    for cell in run_cells:
        case = bench_case(draft_case(cell))
        try:
            timed, failed = time_cell(case, with_flashinfer=cell.id in fa2_ids)
        except Exception as exc:  # the shared fixture itself failed: the whole cell is reported
            timed, failed = [], {"fixture": f"{type(exc).__name__}: {exc}"[:400]}
        rows.extend(timed)
        failures.update({f"{cell.id} {impl}": text for impl, text in failed.items()})
        print(f"bench {cell.id}: {[round(r.median_us, 1) for r in rows if r.cell == cell.id]}", flush=True)
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
    plotted = write_outputs(doc, rows, args.out)
    return bench_verdict(len(rows), failures, f"{plotted} -> {args.out}")


def bench_verdict(timings: int, failures: dict[str, str], where: str) -> int:
    """Print every failure and the summary; exit 1 when any timing failed (the outputs are still written)."""
    for name, text in sorted(failures.items()):
        print(f"bench FAILED {name}: {text}", file=sys.stderr)
    print(f"bench: {timings} timings, {len(failures)} failures, {where}")
    return 1 if failures else 0


def _device_name() -> str:
    import torch

    return str(torch.cuda.get_device_name(0))


if __name__ == "__main__":
    sys.exit(main())
