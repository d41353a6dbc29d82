"""Which subpackages an exact release of a distribution holds (`transformers.models.mllama` in transformers 4.52.0),
from a table read from the released wheels (`matrix/data/distribution_modules.toml`, written by
`ci/distribution_modules.py`); pure.

Only a job that pins a release the table lists is answered, and only for a subpackage directly under the table's
package whose `__init__.py` imports nothing of its own (a `_LazyModule`): importing it succeeds where the release
holds it and raises ImportError where it does not. A range (`>=4.52.0`), a deeper module
(`transformers.models.mllama.modeling_mllama`) or a release the table does not list stays unknown."""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from matrix.core.textfiles import package_text
from matrix.schedule.environment.model import normalized

if TYPE_CHECKING:
    from packaging.version import Version


@dataclass(frozen=True, kw_only=True)
class ReleaseModules:
    """One distribution's rows: the releases read, each subpackage's spans of them, the eager ones per release."""

    name: str
    package: str
    versions: frozenset[Version]
    spans: Mapping[str, tuple[tuple[Version, Version], ...]]
    eager: Mapping[Version, frozenset[str]]
    source: str


@functools.cache
def release_table() -> Mapping[str, ReleaseModules]:
    from packaging.version import Version  # only where a pinned release is asked about (a guards run never is)

    doc = tomllib.loads(package_text("data/distribution_modules.toml"))
    out: dict[str, ReleaseModules] = {}
    for row in doc["distribution"]:
        name = normalized(row["name"])
        out[name] = ReleaseModules(
            name=name,
            package=row["package"],
            versions=frozenset(Version(v) for v in row["versions"]),
            spans={m: tuple((Version(a), Version(b)) for a, b in held) for m, held in row["modules"].items()},
            eager={Version(v): frozenset(names) for v, names in row.get("eager", {}).items()},
            source=row["source"],
        )
    return out


def release_holds(distribution: str, version: str, module: str) -> tuple[bool, str] | None:
    """Whether release `version` of `distribution` has the subpackage `module`, with the reason; None where the
    table does not say (another distribution, a release it did not read, a module it does not cover)."""
    row = release_table().get(normalized(distribution))
    if row is None or not module.startswith(row.package + "."):
        return None
    from packaging.version import InvalidVersion, Version

    sub = module[len(row.package) + 1 :]
    try:
        release = Version(version)
    except InvalidVersion:
        return None
    if "." in sub or release not in row.versions or sub in row.eager.get(release, frozenset()):
        return None
    held = any(first <= release <= last for first, last in row.spans.get(sub, ()))
    if held:
        return True, f"{distribution} {version} has {module} ({row.source})"
    return False, f"{distribution} {version} has no {module} ({row.source})"
