"""One draft cell's checks: eager and graph replay against the float32 reference (imports torch)."""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from matrix.gpu.cases import DraftCase, GraphRows, expanded_graph_rows, tolerance
from matrix.gpu.contract import check_contract, check_draft_backend, draft_rows
from matrix.gpu.graphs import capture_graph
from matrix.gpu.paged import DraftRows, PagedRequests, build_requests, expand_rows
from matrix.gpu.reference import max_error, reference_decode


class AccuracyError(AssertionError):
    """Output differs from the float32 reference (or eager from graph) beyond tolerance."""


@dataclass(kw_only=True)
class CheckReport:
    """What one check measured; errors are max |actual - reference| per replayed batch size."""

    level: str
    setup_seconds: float = 0.0
    compile_seconds: float = 0.0
    errors: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "setup_seconds": round(self.setup_seconds, 4),
            "compile_seconds": round(self.compile_seconds, 4),
            "errors": {k: round(v, 6) for k, v in self.errors.items()},
        }


def _sync() -> None:
    import torch

    if torch.cuda.is_available():  # a CPU wiring test runs the same checks without a device
        torch.cuda.synchronize()


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    _sync()
    start = time.perf_counter()
    value = fn()
    _sync()
    return value, time.perf_counter() - start


def _compare(report: CheckReport, label: str, actual: Any, expected: Any, case: DraftCase) -> None:
    tol = tolerance(case.dtype, case.head_dim)
    err = max_error(actual, expected)
    report.errors[label] = err
    bound = tol.atol + tol.rtol * float(expected.float().abs().max())
    if not err <= bound:  # also catches NaN
        report.problems.append(f"{label}: max error {err:.4g} > {bound:.4g}")


def _reference(paged: PagedRequests, rows: DraftRows) -> Any:
    return reference_decode(
        rows.query, paged.k_slots, paged.v_slots, token_slots=paged.token_slots, requests=rows.requests, seq_lens=rows.seq_lens
    )


def _run_modes(
    report: CheckReport,
    case: DraftCase,
    *,
    paged: PagedRequests,
    rows: DraftRows,
    eager: Callable[[DraftRows, int], Any],
    make_graph: Callable[[], Any],
) -> None:
    """Eager for every replay size (first call timed as compile), then graph replay vs eager and reference."""
    first = rows.head(case.replay_bs[0] * case.topk)
    _, cold = _timed(lambda: eager(first, case.replay_bs[0]))
    _, warm = _timed(lambda: eager(first, case.replay_bs[0]))
    report.compile_seconds += max(cold - warm, 0.0)
    eager_out: dict[int, Any] = {}
    for bs in case.replay_bs:
        sub = rows.head(bs * case.topk)
        eager_out[bs] = eager(sub, bs)
        _compare(report, f"eager-bs{bs}", eager_out[bs], _reference(paged, sub), case)
    if case.mode != "graph":
        return
    graph = make_graph()
    _, capture_seconds = _timed(graph.capture)
    report.setup_seconds += capture_seconds
    for bs in case.replay_bs:
        sub = rows.head(bs * case.topk)
        replayed = graph.replay(sub, bs)
        _compare(report, f"graph-bs{bs}", replayed, _reference(paged, sub), case)
        _compare(report, f"graph-vs-eager-bs{bs}", replayed, eager_out[bs], case)


PLANTS = ("illegal-address",)
FAR_SLOT = 1 << 30


def _fixture(case: DraftCase, device: str, plant: str | None) -> tuple[PagedRequests, DraftRows]:
    paged = build_requests(case, case.max_bs, device=device, seed=zlib.crc32(case.cell_id.encode()) & 0xFFFF)
    if plant == "illegal-address":
        # A slot (and page) far past the cache: the kernels read unmapped memory, CUDA error 700.
        paged.token_slots[0, :].fill_(FAR_SLOT)
        paged.page_ids[0, :].fill_(FAR_SLOT // case.page_size)
    return paged, expand_rows(paged)


@dataclass(kw_only=True)
class CellSetup:
    """What every check starts from: its report, the paged requests and their expanded draft rows."""

    case: DraftCase
    device: str
    report: CheckReport
    paged: PagedRequests
    rows: DraftRows
    started: float

    def ready(self) -> None:
        """Everything built: the time so far is the check's setup."""
        self.report.setup_seconds += time.perf_counter() - self.started


def begin(level: str, case: DraftCase, *, device: str, plant: str | None) -> CellSetup:
    """The shared prologue of every check."""
    started = time.perf_counter()
    paged, rows = _fixture(case, device, plant)
    return CellSetup(case=case, device=device, report=CheckReport(level=level), paged=paged, rows=rows, started=started)


def check_kernel(
    case: DraftCase,
    *,
    device: str = "cuda",
    graph_rows: GraphRows = expanded_graph_rows,
    enforce_contract: bool = True,
    plant: str | None = None,
) -> CheckReport:
    """flashinfer trtllm_batch_decode_with_kv_cache on the expanded rows, eager and graph."""
    from matrix.gpu.kernels import KERNEL_DRAFT_BUFFERS, FlashinferTrtllmDecode, KernelDraftGraph, device_impl

    cell = begin("kernel", case, device=device, plant=plant)
    kernel = FlashinferTrtllmDecode(cell.paged, max_rows=case.max_bs * case.topk, family=device_impl(case.backend, device))
    cell.ready()

    def eager(sub: DraftRows, bs: int) -> Any:
        import torch

        out = torch.empty_like(sub.query)
        kernel.decode(sub.query, sub.block_tables, sub.seq_lens, out)
        return out

    def make_graph() -> KernelDraftGraph:
        graph = KernelDraftGraph(kernel, case, device=device, graph_rows=graph_rows)
        if enforce_contract:
            rows, what = draft_rows(case.max_bs, case.topk)
            check_contract(graph.buffers.shapes(), KERNEL_DRAFT_BUFFERS, rows=rows, what=what)
        return graph

    _run_modes(cell.report, case, paged=cell.paged, rows=cell.rows, eager=eager, make_graph=make_graph)
    return cell.report


def check_sglang(
    case: DraftCase,
    *,
    device: str = "cuda",
    graph_rows: GraphRows = expanded_graph_rows,
    enforce_contract: bool = True,
    plant: str | None = None,
) -> CheckReport:
    """sglang's draft backend through the worker's metadata path, eager and graph (the runner's sizing reproduced)."""
    from matrix.gpu.sglang_draft import SglangDraftGraph, build_sglang_draft

    cell = begin("sglang", case, device=device, plant=plant)
    draft = build_sglang_draft(cell.paged, device=device)
    cell.ready()

    def make_graph() -> SglangDraftGraph:
        graph = SglangDraftGraph(draft, graph_rows=graph_rows)
        if enforce_contract:
            check_draft_backend(case.backend, draft.backend, max_bs=case.max_bs, topk=case.topk)
        return graph

    _run_modes(cell.report, case, paged=cell.paged, rows=cell.rows, eager=draft.eager, make_graph=make_graph)
    return cell.report


def check_runner(
    case: DraftCase,
    *,
    device: str = "cuda",
    graph_rows: GraphRows = expanded_graph_rows,
    enforce_contract: bool = True,
    plant: str | None = None,
) -> CheckReport:
    """sglang's FrozenKVMTPCudaGraphRunner: eager draft_forward, the runner's capture, can_run_graph and padded replay.

    Every draft step's attention output is compared with the float32 reference of the query it was given, and
    the seed step's replayed output with eager (later steps' queries depend on sampled tokens).
    """
    from matrix.gpu.sglang_runner import DRAFT_STEPS, build_runner_draft

    del graph_rows  # the runner sizes its backend itself: that call is what is under test
    cell = begin("runner", case, device=device, plant=plant)
    draft = build_runner_draft(cell.paged, device=device, seed=zlib.crc32(case.cell_id.encode()) & 0xFFFF)
    cell.ready()
    report = cell.report

    def against_reference(label: str, recorded: Any, bs: int) -> None:
        rows = cell.rows.head(bs * case.topk)
        for step in range(DRAFT_STEPS):
            expected = reference_decode(
                recorded.queries[step],
                cell.paged.k_slots,
                cell.paged.v_slots,
                token_slots=cell.paged.token_slots,
                requests=rows.requests,
                seq_lens=rows.seq_lens,
            )
            _compare(report, f"{label}-bs{bs}-step{step}", recorded.outputs[step], expected, case)

    try:
        _, cold = _timed(lambda: draft.eager(case.replay_bs[0]))
        _, warm = _timed(lambda: draft.eager(case.replay_bs[0]))
        report.compile_seconds += max(cold - warm, 0.0)
        eager: dict[int, Any] = {}
        for bs in case.replay_bs:
            eager[bs], _ = draft.eager(bs)
            against_reference("eager", eager[bs], bs)
        _, capture_seconds = _timed(lambda: draft.capture(enforce_contract=enforce_contract))
        report.setup_seconds += capture_seconds
        for bs in case.replay_bs:
            replayed, _ = draft.replay(bs)
            against_reference("graph", replayed, bs)
            _compare(report, f"graph-vs-eager-bs{bs}-step0", replayed.outputs[0], eager[bs].outputs[0], case)
    finally:
        draft.close()
    return report


def check_target_contract(case: DraftCase, *, device: str) -> None:
    """sglang's TRTLLMHAAttnBackend sized as the target's graph runner sizes it must hold max_bs verify requests."""
    from matrix.sglang_check.buffers import TRTLLM_MHA_TARGET_VERIFY
    from matrix.sglang_check.edge import target_verify_shapes

    pages = case.pages_per_seq + 1
    shapes = target_verify_shapes(max_bs=case.max_bs, num_draft_tokens=case.q_len, max_num_pages=pages, device=device)
    what = f"max_bs = {case.max_bs} verify requests of {case.q_len} tokens"
    check_contract(shapes, TRTLLM_MHA_TARGET_VERIFY, rows=case.max_bs, what=what)


def check_target(
    case: DraftCase,
    *,
    device: str = "cuda",
    graph_rows: GraphRows = expanded_graph_rows,
    enforce_contract: bool = True,
    plant: str | None = None,
) -> CheckReport:
    """Chain target verify: flashinfer's trtllm decode with q_len_per_req = num_draft_tokens, eager and graph."""
    import torch

    from matrix.gpu.kernels import FlashinferTrtllmDecode, device_impl
    from matrix.gpu.verify import VerifyRows, causal_spec_mask, kernel_needs_mask, verify_rows

    del graph_rows  # topk is 1 here: the expanded and unexpanded row counts agree
    if case.topk != 1:
        raise ValueError(f"{case.cell_id}: the kernel-level target verify is a chain (topk 1); tree verify is target-sglang")
    cell = begin("target", case, device=device, plant=plant)
    paged = cell.paged
    rows = verify_rows(paged)
    q_len = case.q_len
    kernel = FlashinferTrtllmDecode(paged, max_rows=case.max_bs * q_len, family=device_impl(case.backend, device))
    mask = causal_spec_mask(case.max_bs, q_len, device) if q_len > 1 and kernel_needs_mask(device) else None
    cell.ready()
    report = cell.report

    def run(sub: VerifyRows, out: Any) -> None:
        bs = int(sub.seq_lens.shape[0])
        kernel.verify(sub.query, sub.block_tables, sub.seq_lens, out, q_len=q_len, mask=None if mask is None else mask[:bs])

    def eager(sub: VerifyRows) -> Any:
        out = torch.empty_like(sub.query)
        run(sub, out)
        return out

    def reference(sub: VerifyRows) -> Any:
        return reference_decode(
            sub.query,
            paged.k_slots,
            paged.v_slots,
            token_slots=paged.token_slots,
            requests=sub.token_requests,
            seq_lens=sub.token_lens,
        )

    first = rows.head(case.replay_bs[0])
    _, cold = _timed(lambda: eager(first))
    _, warm = _timed(lambda: eager(first))
    report.compile_seconds += max(cold - warm, 0.0)
    for bs in case.replay_bs:
        sub = rows.head(bs)
        _compare(report, f"eager-bs{bs}", eager(sub), reference(sub), case)
    if case.mode != "graph":
        return report
    if enforce_contract:
        check_target_contract(case, device=device)
    full = rows.head(case.max_bs)
    static = VerifyRows(
        q_len=q_len,
        query=full.query.clone(),
        block_tables=full.block_tables.clone(),
        seq_lens=full.seq_lens.clone(),
        token_requests=full.token_requests,
        token_lens=full.token_lens,
    )
    out = torch.zeros_like(static.query)
    graph, capture_seconds = _timed(lambda: capture_graph(lambda: run(static, out)))
    report.setup_seconds += capture_seconds
    out.zero_()
    graph.replay()
    _sync()
    _compare(report, f"graph-bs{case.max_bs}", out, reference(full), case)
    _compare(report, f"graph-vs-eager-bs{case.max_bs}", out, eager(full), case)
    return report


def check_target_sglang(
    case: DraftCase,
    *,
    device: str = "cuda",
    graph_rows: GraphRows = expanded_graph_rows,
    enforce_contract: bool = True,
    plant: str | None = None,
) -> CheckReport:
    """Target verify (chain or tree) through sglang's backend, captured and replayed by sglang's test kit."""
    from matrix.gpu.sglang_verify import run_verify
    from matrix.sglang_check.identity import BackendMismatch

    del graph_rows, enforce_contract, plant  # the kit sizes and fills its own buffers
    report = CheckReport(level="target-sglang")
    start = time.perf_counter()
    try:
        run_verify(case, device=device)
    except BackendMismatch:
        raise
    except AssertionError as exc:  # the kit's comparison with its masked float32 reference
        report.problems.append(f"differs from the masked reference: {str(exc).strip()[:600]}")
    report.setup_seconds = time.perf_counter() - start
    return report


CHECKS: dict[str, Callable[..., CheckReport]] = {
    "kernel": check_kernel,
    "sglang": check_sglang,
    "runner": check_runner,
    "target": check_target,
    "target-sglang": check_target_sglang,
}


def raise_on_problems(report: CheckReport, case: DraftCase) -> None:
    if report.problems:
        raise AccuracyError(f"{case.cell_id} [{report.level}]: " + "; ".join(report.problems))
