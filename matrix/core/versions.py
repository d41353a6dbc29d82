"""Library versions as PEP 440 (`packaging.version.Version`), checked wherever they enter.

A version that does not parse (`0.5.23-dirty`, `garbage`) must never be judged: it once made every
version-gated rule fail, turning cells that must run into expected skips. Each entry point (detection,
`SPECMATRIX_DETECT`, `[pins]`, a saved report's `versions`) calls `checked_versions`, so such a value is one
error line naming the library and the value, and `satisfies` never sees it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from matrix.core.errors import SpecmatrixError, VersionError

MAX_VERSION_CHARS = 128


def parse_version(library: str, text: str, where: str, error: type[SpecmatrixError] = VersionError) -> Version:
    """`text` as a PEP 440 version (local labels such as `+cu130`, dev and post releases included)."""
    if len(text) > MAX_VERSION_CHARS:
        raise error(f"{where}: {library} version is {len(text)} characters long; not a PEP 440 version")
    try:
        return Version(text)
    except InvalidVersion:
        raise error(f"{where}: {library} version {text!r} is not a PEP 440 version (e.g. 0.5.23, 2.11.0+cu130)") from None


def checked_versions(raw: Any, where: str, error: type[SpecmatrixError] = VersionError) -> dict[str, str]:
    """A `{library: version}` mapping whose every value parses; anything else is `error` naming the culprit."""
    if not isinstance(raw, Mapping):
        raise error(f"{where}: versions must map library names to version strings")
    out: dict[str, str] = {}
    for library, text in raw.items():
        if not isinstance(library, str) or not isinstance(text, str):
            raise error(f"{where}: versions must map library names to version strings, got {library!r}: {text!r}")
        parse_version(library, text, where, error)
        out[library] = text
    return out


def satisfies(library: str, installed: str, specifier: str) -> bool:
    """Whether `installed` meets `specifier`; pre-releases (dev builds) count, as an installed build is what it is.

    `SpecifierSet.contains` leaves pre-releases out by default, which would make a `0.5.24.dev1` source build
    fail `>=0.5.23`.
    """
    version = parse_version(library, installed, "versions")
    return SpecifierSet(specifier).contains(version, prereleases=True)
