"""Pure: bench rows -> headline ratios, markdown table and plot series."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Shape = tuple[int, int, int, str]  # page_size, head_dim, gqa, dtype


@dataclass(frozen=True, kw_only=True)
class BenchRow:
    """One timed draft decode: `impl` is how it ran (sglang backend, or a raw kernel)."""

    cell: str
    backend: str
    impl: str
    topk: int
    page_size: int
    head_dim: int
    gqa: int
    dtype: str
    rows: int
    median_us: float

    def shape_key(self) -> Shape:
        """Everything but backend and topk: what makes two cells comparable."""
        return (self.page_size, self.head_dim, self.gqa, self.dtype)


_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {"str": str, "int": int, "float": (int, float)}


def row_from_dict(doc: Mapping[str, Any]) -> BenchRow:
    """A saved timing; a missing field is a KeyError, a field of the wrong type a ValueError."""
    values = {name: doc[name] for name in BenchRow.__dataclass_fields__}
    for name, field in BenchRow.__dataclass_fields__.items():
        expected = _FIELD_TYPES[str(field.type)]
        if isinstance(values[name], bool) or not isinstance(values[name], expected):
            raise ValueError(f"field {name!r} is {values[name]!r}, not {field.type}")
    return BenchRow(**values)


def _paired(rows: Sequence[BenchRow], numerator: str, denominator: str) -> list[tuple[Shape, int, float]]:
    """(shape, topk, numerator / denominator) for every shape and topk timed with both, sorted by shape then topk."""
    by_key: dict[tuple[Shape, int], dict[str, float]] = defaultdict(dict)
    for row in rows:
        by_key[(row.shape_key(), row.topk)][row.impl] = row.median_us
    return [
        (shape, topk, impls[numerator] / impls[denominator])
        for (shape, topk), impls in sorted(by_key.items())
        if numerator in impls and impls.get(denominator, 0) > 0
    ]


def ratios(
    rows: Sequence[BenchRow], *, numerator: str = "sglang-trtllm_mha", denominator: str = "sglang-triton"
) -> dict[str, float]:
    """trtllm_mha / triton latency per cell shape (same topk, page, head_dim, gqa, dtype)."""
    return {
        f"topk{topk}-page{page}-hd{hd}-gqa{gqa}-{dtype}": ratio
        for (page, hd, gqa, dtype), topk, ratio in _paired(rows, numerator, denominator)
    }


def markdown_table(rows: Sequence[BenchRow]) -> str:
    """One line per cell shape and topk, one column per implementation (median microseconds)."""
    impls = sorted({r.impl for r in rows})
    grouped: dict[tuple[int, int, int, str, int], dict[str, float]] = defaultdict(dict)
    for r in rows:
        grouped[(r.page_size, r.head_dim, r.gqa, r.dtype, r.topk)][r.impl] = r.median_us
    ratio = ratios(rows)
    head = "| page | hd | gqa | dtype | topk | " + " | ".join(f"{i} (us)" for i in impls) + " | trtllm_mha/triton |"
    sep = "|" + "---|" * (6 + len(impls))
    lines = [head, sep]
    for (page, hd, gqa, dtype, topk), vals in sorted(grouped.items()):
        cells = " | ".join(f"{vals[i]:.1f}" if i in vals else "-" for i in impls)
        value = ratio.get(f"topk{topk}-page{page}-hd{hd}-gqa{gqa}-{dtype}")
        shown = f"{value:.2f}" if value is not None else "-"
        lines.append(f"| {page} | {hd} | {gqa} | {dtype} | {topk} | {cells} | {shown} |")
    return "\n".join(lines) + "\n"


Series = dict[int, dict[str, list[tuple[int, float]]]]


def plot_series(rows: Sequence[BenchRow], *, head_dim: int, gqa: int, dtype: str) -> Series:
    """page_size -> impl -> [(topk, us)] for one head_dim/gqa/dtype slice."""
    out: dict[int, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in sorted(rows, key=lambda r: r.topk):
        if (r.head_dim, r.gqa, r.dtype) == (head_dim, gqa, dtype):
            out[r.page_size][r.impl].append((r.topk, r.median_us))
    return {p: dict(v) for p, v in out.items()}


def ratio_groups(rows: Sequence[BenchRow]) -> dict[str, dict[int, float]]:
    """Shape label (`page16 hd128 gqa4 bf16`) -> topk -> trtllm_mha/triton, for every shape both backends ran."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for (page, hd, gqa, dtype), topk, ratio in _paired(rows, "sglang-trtllm_mha", "sglang-triton"):
        out[f"page{page} hd{hd} gqa{gqa} {dtype}"][topk] = ratio
    return dict(out)
