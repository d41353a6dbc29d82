"""Edge: the coverage heatmap as PNG and SVG (matplotlib, Agg backend, imported only here)."""

from __future__ import annotations

from collections.abc import Sequence

from matrix.core.atomic import figure_bytes
from matrix.core.errors import UsageError
from matrix.coverage.merge import Coverage, CoverageResult
from matrix.coverage.views import Bucket, buckets, numeric_key

COLOURS = {
    Coverage.PASSED: "#4caf50",
    Coverage.FAILED: "#e53935",
    Coverage.SKIPPED_EXPECTED: "#cfd8dc",
    Coverage.SKIPPED_UNEXPECTED: "#ff9800",
    Coverage.CRASHED: "#6a1b9a",
    Coverage.NEVER_RAN: "#212121",
}
_ABSENT = "#ffffff"
_WORST_WORD = {
    Coverage.CRASHED: "crashed",
    Coverage.FAILED: "failed",
    Coverage.SKIPPED_UNEXPECTED: "unexp. skip",
    Coverage.NEVER_RAN: "never",
}


def _label(bucket: Bucket) -> str:
    """Ran/planned, or the count of the worst outcome when that is not a pass."""
    ran = bucket.counts[Coverage.PASSED]
    must = bucket.total - bucket.counts[Coverage.SKIPPED_EXPECTED]
    if must == 0:
        return "skip"
    worst = bucket.worst
    if worst in (Coverage.PASSED, Coverage.SKIPPED_EXPECTED):
        return f"{ran}/{must}"
    return f"{ran}/{must}\n{bucket.counts[worst]} {_WORST_WORD[worst]}"


MIN_WIDTH_INCHES = 5.0


class PlottingUnavailable(UsageError):
    """matplotlib is not installed: the caller leaves the picture out and says so."""


def render_heatmap(result: CoverageResult, formats: Sequence[str], *, stem: str) -> dict[str, bytes]:
    """`{stem.fmt: image bytes}`: rows arch x the layout's row axes, columns its column axes; colour = the worst outcome.

    Rendered in memory, so the caller writes every output (or none) through the atomic writer.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch, Rectangle
    except ImportError:
        raise PlottingUnavailable("the heatmap needs matplotlib: pip install 'specmatrix[plot]'") from None
    rows_data = buckets(result)
    if not rows_data:
        raise UsageError("nothing to draw: no runner counted")
    layout = result.layout
    rows = list(dict.fromkeys((b.arch, b.row) for b in rows_data))
    cols = list(dict.fromkeys(b.column for b in sorted(rows_data, key=lambda b: tuple(map(numeric_key, b.column)))))
    at = {(b.arch, b.row, b.column): b for b in rows_data}
    # At least as wide as the legend's three columns, so a matrix with few columns keeps it and its ticks readable.
    fig, ax = plt.subplots(figsize=(max(MIN_WIDTH_INCHES, 1.0 + 0.62 * len(cols)), 1.4 + 0.42 * len(rows)), dpi=110)
    for r, (arch, row) in enumerate(rows):
        for c, column in enumerate(cols):
            bucket = at.get((arch, row, column))
            colour = COLOURS[bucket.worst] if bucket else _ABSENT
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="white", linewidth=1.5))
            if bucket:
                dark = bucket.worst in (Coverage.NEVER_RAN, Coverage.CRASHED, Coverage.FAILED)
                ax.text(
                    c + 0.5, r + 0.5, _label(bucket), ha="center", va="center", fontsize=6.5, color="white" if dark else "black"
                )
    ax.set_xlim(0, len(cols))
    ax.set_ylim(len(rows), 0)
    ticks = ["\n".join(f"{axis} {value}" for axis, value in zip(layout.columns, column, strict=True)) for column in cols]
    ax.set_xticks([c + 0.5 for c in range(len(cols))], ticks, fontsize=7)
    ax.set_yticks([r + 0.5 for r in range(len(rows))], [" ".join((a, *row)) for a, row in rows], fontsize=8)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(f"specmatrix coverage: {', '.join(result.runners)}", fontsize=9)
    ax.legend(
        handles=[Patch(facecolor=COLOURS[c], label=c.value) for c in Coverage],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12 - 0.3 / max(1, len(rows))),
        ncol=3,
        fontsize=7,
        frameon=False,
    )
    fig.tight_layout()
    images = {f"{stem}.{fmt}": figure_bytes(fig, fmt, metadata={"Date": None} if fmt == "svg" else None) for fmt in formats}
    plt.close(fig)
    return images
