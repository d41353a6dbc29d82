"""Version requirements read as 'exists in these releases' (not as 'needed to run')."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from matrix.core.model import VersionRequirement


def present_in(requirements: Iterable[VersionRequirement], versions: Mapping[str, str]) -> bool:
    """True when every requirement holds for the given versions; an unknown or unparsable version holds none."""
    for req in requirements:
        installed = versions.get(req.library)
        if installed is None:
            return False
        try:
            if Version(installed) not in SpecifierSet(req.specifier):
                return False
        except InvalidVersion:
            return False
    return True
