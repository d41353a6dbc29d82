"""Write a set of cell ids as a short selector (brace products), exact by construction; pure."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from matrix.core.model import Cell, Matrix

_Product = tuple[frozenset[str], ...]


def _tokens(matrix: Matrix, cell: Cell) -> tuple[str, ...]:
    # One token per axis; later axes carry their '-' so an omitted part (dt1) is the empty token.
    out: list[str] = []
    for k, axis in enumerate(matrix.axes):
        value = cell.get(axis.name)
        part = axis.id_part(value) if value is not None else None
        out.append("" if part is None else (part if k == 0 else "-" + part))
    return tuple(out)


def _merge_on(products: set[_Product], position: int) -> set[_Product]:
    """Products equal everywhere but `position` become one product (their union there)."""
    buckets: defaultdict[_Product, set[str]] = defaultdict(set)
    for product in products:
        rest = (*product[:position], frozenset(), *product[position + 1 :])
        buckets[rest] |= product[position]
    return {(*rest[:position], frozenset(values), *rest[position + 1 :]) for rest, values in buckets.items()}


def _render_set(values: frozenset[str]) -> str:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    if all(v.startswith("-") for v in ordered):
        return "-{" + ",".join(v[1:] for v in ordered) + "}"
    return "{" + ",".join(ordered) + "}"


def compact_selector(matrix: Matrix, cell_ids: Iterable[str]) -> str:
    """Space-separated brace patterns matching exactly `cell_ids` among the matrix's cells."""
    wanted = set(cell_ids)
    cells = [c for c in matrix.cells if c.id in wanted]
    if len(cells) != len(wanted):
        missing = sorted(wanted - {c.id for c in cells})
        raise ValueError(f"not matrix cells: {', '.join(missing[:3])}")
    products: set[_Product] = {tuple(frozenset((t,)) for t in _tokens(matrix, c)) for c in cells}
    width = len(matrix.axes)
    while True:
        before = len(products)
        for position in reversed(range(width)):
            products = _merge_on(products, position)
        if len(products) == before:
            break
    return " ".join(sorted("".join(_render_set(s) for s in p) for p in products))
