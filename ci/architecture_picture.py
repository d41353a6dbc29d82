"""Draw docs/architecture.png: the layers of [tool.importlinter] and the imports that really cross them.

The rows come from the layers contract in pyproject.toml, the arrows from grimp's import graph of the source
(the graph lint-imports checks), so the picture cannot drift from what `nox -s lint` enforces.
Usage: python ci/architecture_picture.py [--out docs/architecture.png]
"""

from __future__ import annotations

import argparse
import io
import sys
import tomllib
from pathlib import Path
from typing import Any

import grimp

from matrix.core.atomic import write_bytes_atomic

ROOT = Path(__file__).resolve().parent.parent
EXTERNAL = ("torch", "sglang", "flashinfer")
ROW_TITLES = ("entry point", "entry points", "composed features", "base features", "planning core")
COMPOSED = ROW_TITLES.index("composed features")
EXT_W = 1.6
LABEL_BOX = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}


def layer_rows(pyproject: Path) -> list[list[str]]:
    """The layers contract's rows, highest first, as top-level module names (`cli`, `core`, ...)."""
    config: Any = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "layers":
            return [[name.strip() for name in row.split("|")] for row in contract["layers"]]
    raise SystemExit(f"{pyproject}: no layers contract in [tool.importlinter]")


def package_edges(root_package: str = "matrix") -> set[tuple[str, str]]:
    """(importer, imported) between the package's top-level modules and the three heavy externals."""
    graph = grimp.build_graph(root_package, include_external_packages=True, cache_dir=None)

    def top(module: str) -> str:
        parts = module.split(".")
        return parts[1] if parts[0] == root_package and len(parts) > 1 else parts[0]

    edges = set()
    for module in graph.modules:
        if not module.startswith(f"{root_package}."):
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = top(module), top(imported)
            if a != b and (imported.startswith(f"{root_package}.") or b in EXTERNAL):
                edges.add((a, b))
    return edges


# The importers of torch outside matrix.gpu are single modules; the picture names them on their arrows.
EXCEPTION_LABELS = {("core", "torch"): "core.detect", ("sglang_check", "torch"): "sglang_check.edge"}


def draw(rows: list[list[str]], edges: set[tuple[str, str]]) -> bytes:
    """A PNG: one band per layer, the externals in a column on the right, one arrow per package-level import."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    width, box_w, box_h, gap, ext_x = 12.6, 2.3, 0.55, 1.45, 15.4
    pos: dict[str, tuple[float, float]] = {}
    fig, ax = plt.subplots(figsize=(14.5, 7.4))
    ax.set_xlim(-2.0, ext_x + 1.4)
    ax.set_ylim(-gap * (len(rows) - 1) - 1.0, 0.7)
    ax.axis("off")
    for r, row in enumerate(rows):
        y = -r * gap
        title = ROW_TITLES[r] if len(rows) == len(ROW_TITLES) else f"layer {r}"
        ax.text(-1.9, y, title, va="center", fontsize=10, style="italic")
        step = width / len(row)
        for c, name in enumerate(row):
            pos[name] = (step * (c + 0.5), y)
    # flashinfer level with the composed features, sglang half a band lower, torch level with the core.
    for name, y in zip(EXTERNAL, (-(len(rows) - 1) * gap, -2.5 * gap, -2 * gap), strict=True):
        pos[name] = (ext_x, y)
    core = rows[-1][0] if len(rows[-1]) == 1 else None
    for a, b in sorted((a, b) for a, b in edges if a in pos and b in pos):
        if b == core and _band(rows, a) < len(rows) - 2:
            continue  # every layer imports the core; only the arrows from the band above it are drawn
        (xa, ya), (xb, yb) = pos[a], pos[b]
        heavy = b in EXTERNAL
        # The feature-to-feature imports: the reason the features are two layers, not one.
        base_use = not heavy and _band(rows, a) == COMPOSED and _band(rows, b) == COMPOSED + 1
        color = "#c0392b" if heavy else "#2e86c1" if base_use else "#95a5a6"
        start = (xa + box_w / 2, ya) if heavy else (xa, ya - box_h / 2)
        end = (xb - EXT_W / 2, yb) if heavy else (xb, yb + box_h / 2)
        ax.annotate(
            "",
            xy=end,
            xytext=start,
            arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.7 if heavy or base_use else 0.9, "shrinkA": 0, "shrinkB": 0},
            zorder=5,  # above the boxes: an arrow that passes a box is seen to pass it, not to end there
        )
        if (a, b) in EXCEPTION_LABELS:
            mx, my = start[0] + 0.62 * (end[0] - start[0]), start[1] + 0.62 * (end[1] - start[1])
            ax.text(mx, my + 0.12, EXCEPTION_LABELS[(a, b)], fontsize=8.5, color="#c0392b", ha="center", family="monospace")
    for name, (x, y) in pos.items():
        external = name in EXTERNAL
        label = name if external or name == "__main__" else f"matrix.{name}"
        w = EXT_W if external else box_w
        ax.add_patch(
            FancyBboxPatch(
                (x - w / 2, y - box_h / 2),
                w,
                box_h,
                boxstyle="round,pad=0.03",
                facecolor="#fdebd0" if external else "#eaf2f8",
                edgecolor="#34495e",
                zorder=3,
            )
        )
        ax.text(x, y, label, ha="center", va="center", fontsize=9.5, zorder=6, family="monospace", bbox=LABEL_BOX)
    if core is not None:
        x, y = pos[core]
        note = "also imported directly by every layer above\n(those arrows are left out)"
        ax.text(x, y - box_h / 2 - 0.12, note, ha="center", va="top", fontsize=8.5, color="#566573")
    ax.set_title(
        "specmatrix: every import points down a layer (grey); a composed feature may use a base feature (blue);\n"
        "red: every import of torch, sglang and flashinfer (pyproject.toml [tool.importlinter], checked by nox -s lint)",
        fontsize=10,
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _band(rows: list[list[str]], name: str) -> int:
    return next(r for r, row in enumerate(rows) if name in row)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "architecture.png")
    args = parser.parse_args(argv)
    rows = layer_rows(ROOT / "pyproject.toml")
    edges = package_edges()
    write_bytes_atomic(args.out, draw(rows, edges))
    print(f"{args.out}: {len(rows)} layers, {len(edges)} package-level imports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
