"""A distribution's version known only as the range its install asks for (`>=4.52.0`), compared with a literal
version: the comparison is decided when every version in the range gives the same answer; pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from packaging.version import Version

# packaging is imported when a version is first parsed: a guard audit that meets no version guard never loads it.
Bound = tuple["Version", bool]  # (version, inclusive)


def is_version(value: object) -> TypeGuard[Version]:
    """Whether `value` is a `packaging.version.Version` (without importing packaging)."""
    return type(value).__module__ == "packaging.version" and type(value).__name__ == "Version"


def parse_version(text: str) -> Version | None:
    """`packaging.version.Version(text)`, or None when it is not a version."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except InvalidVersion:
        return None


def range_decides(specifier: str, op: str, version: Version) -> bool | None:
    """`v OP version` for every `v` the specifier allows (`op`: "Lt", "LtE", "Gt", "GtE" as `ast` names them):
    True or False when the range's bounds decide it, else None (`==`, `!=` and wildcards are not decided)."""
    low, high = bounds(specifier)
    if op in ("Lt", "GtE"):
        # v < c: certain when the upper bound is below c; impossible when the lower bound is at least c.
        below = True if high is not None and (high[0] < version or (high[0] == version and not high[1])) else None
        if below is None and low is not None and low[0] >= version:
            below = False
        return below if below is None or op == "Lt" else not below
    if op in ("Gt", "LtE"):
        above = True if low is not None and (low[0] > version or (low[0] == version and not low[1])) else None
        if above is None and high is not None and high[0] <= version:
            above = False
        return above if above is None or op == "Gt" else not above
    return None


def bounds(specifier: str) -> tuple[Bound | None, Bound | None]:
    """(lower, upper) bounds of a specifier set; None where unbounded or not read (`!=` only removes points and
    `~=` is read as its lower bound, so the range read is never narrower than the real one)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    low: Bound | None = None
    high: Bound | None = None
    try:
        specifiers = list(SpecifierSet(specifier))
    except InvalidSpecifier:
        return None, None
    for spec in specifiers:
        if "*" in spec.version:
            continue
        parsed = parse_version(spec.version)
        if parsed is None:
            continue
        version = parsed
        if spec.operator in (">=", ">", "==", "~=", "==="):
            bound = (version, spec.operator != ">")
            low = bound if low is None or bound[0] > low[0] else low
        if spec.operator in ("<=", "<", "==", "==="):
            bound = (version, spec.operator != "<")
            high = bound if high is None or bound[0] < high[0] else high
    return low, high
