"""The page size sglang should end up with for a target/draft backend pair, from the matrix's [[page_promotion]] table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from matrix.core.model import Matrix, PagePromotion
from matrix.sglang_check.versions import present_in

TARGET = "target"
DRAFT = "draft"


@dataclass(frozen=True, kw_only=True)
class PageConfig:
    """One server configuration: the target backend, an optional draft-only backend and the requested page size."""

    target_backend: str
    draft_backend: str | None
    page_size: int

    @property
    def id(self) -> str:
        draft = f"-draft-{self.draft_backend}" if self.draft_backend else ""
        return f"target-{self.target_backend}{draft}-page{self.page_size}"

    def backend_of(self, role: str) -> str | None:
        return {TARGET: self.target_backend, DRAFT: self.draft_backend}.get(role)


@dataclass(frozen=True, kw_only=True)
class PageExpectation:
    page_size: int
    applied: tuple[PagePromotion, ...]

    @property
    def because(self) -> str:
        if not self.applied:
            return "no [[page_promotion]] entry applies"
        return ", ".join(p.id for p in self.applied)


@dataclass(frozen=True, kw_only=True)
class PageMismatch:
    config: PageConfig
    expected: PageExpectation
    actual: int
    via: str

    @property
    def message(self) -> str:
        return (
            f"{self.config.id}: the matrix expects page size {self.expected.page_size} "
            f"({self.expected.because}); sglang's {self.via} gives {self.actual}"
        )


def expected_page_size(matrix: Matrix, config: PageConfig, versions: Mapping[str, str]) -> PageExpectation:
    """Apply every entry present in `versions`, in table order, to the requested page size (sglang chains them)."""
    page = config.page_size
    applied: list[PagePromotion] = []
    for promo in matrix.page_promotions:
        if config.backend_of(promo.role) != promo.backend or not present_in(promo.versions, versions):
            continue
        if page not in promo.accepted:
            page = promo.promote_to
            applied.append(promo)
    return PageExpectation(page_size=page, applied=tuple(applied))


def page_configs(matrix: Matrix) -> tuple[PageConfig, ...]:
    """Every target/draft pairing the matrix's cells describe: a target cell alone, a draft cell under each target backend."""
    backends = [str(v) for v in matrix.axis("backend").values]
    seen: dict[str, PageConfig] = {}
    for cell in matrix.cells:
        backend, page = str(cell.get("backend")), cell.get("page_size")
        if not isinstance(page, int):
            continue
        if cell.get("role") == DRAFT:
            configs = [PageConfig(target_backend=t, draft_backend=backend, page_size=page) for t in backends]
        else:
            configs = [PageConfig(target_backend=backend, draft_backend=None, page_size=page)]
        for config in configs:
            seen.setdefault(config.id, config)
    return tuple(seen.values())


def compare_page(
    matrix: Matrix, config: PageConfig, versions: Mapping[str, str], actual: int, *, via: str
) -> PageMismatch | None:
    """A mismatch when sglang's resulting page size differs from the matrix's expectation."""
    expected = expected_page_size(matrix, config, versions)
    if expected.page_size == actual:
        return None
    return PageMismatch(config=config, expected=expected, actual=actual, via=via)
