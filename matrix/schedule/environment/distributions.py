"""Which modules a job's installs make importable: distribution -> import names from a table with sources
(`matrix/data/distributions.toml`, each row read from the wheel's own RECORD / top_level.txt), and the answer for
one module on one job, three-valued with its reason; pure.

A module is importable when a distribution that provides it is installed explicitly. That it is NOT importable is
said only when it can be shown: the job's interpreter is fresh, nothing it installs is unbounded, and the
distributions it installs (with everything they may pull in) are all in the table with their dependencies, none
providing the module. Otherwise the answer is unknown, and the reason names what is missing."""

from __future__ import annotations

import functools
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass

from matrix.core.textfiles import package_text
from matrix.schedule.environment.model import Base, JobEnvironment, normalized
from matrix.schedule.environment.releases import release_holds

MAX_CLOSURE = 2_000


@dataclass(frozen=True, kw_only=True)
class Distribution:
    """A row of the table: the top-level import names a distribution installs, the distributions it requires (None:
    not in the table, so what it pulls in is not known), where that was read."""

    name: str
    imports: tuple[str, ...]
    requires: tuple[str, ...] | None = None
    # The distributions it always requires (Requires-Dist without a marker): pip installs them with it. None: not read.
    depends: tuple[str, ...] | None = None
    source: str = ""
    # Whether a submodule of an import it lists counts as there too (`cutlass.cute` with `cutlass`); false for rows
    # read mechanically from a RECORD at one version, whose submodules differ from version to version.
    submodules: bool = True


@dataclass(frozen=True, kw_only=True)
class ModuleAnswer:
    """Whether a module imports on a job: True, False, or None (not known), with the reason."""

    importable: bool | None
    why: str
    # Answered from the table of a pinned release's subpackages: `from module import name` is not (the names a
    # release's module binds are not read).
    from_release: bool = False


@functools.cache
def distribution_table() -> Mapping[str, Distribution]:
    doc = tomllib.loads(package_text("data/distributions.toml"))
    return {
        normalized(row["name"]): Distribution(
            name=normalized(row["name"]),
            imports=tuple(row["imports"]),
            requires=tuple(normalized(r) for r in row["requires"]) if "requires" in row else None,
            depends=tuple(normalized(r) for r in row["depends"]) if "depends" in row else None,
            source=row["source"],
            submodules=bool(row.get("submodules", True)),
        )
        for row in doc["distribution"]
    }


def providers(module: str, *, certain: bool = False) -> tuple[str, ...]:
    """The table's distributions that install the top-level module (or the dotted package) `module`; `certain`: only
    those whose rows say the submodule is there (it is listed, or the row vouches for its imports' submodules)."""
    out = []
    for dist in distribution_table().values():
        for name in dist.imports:
            if module == name or (module.startswith(name + ".") and (dist.submodules or not certain)):
                out.append(dist.name)
                break
    return tuple(out)


def imports_of(distribution: str) -> tuple[str, ...] | None:
    """What a distribution installs as import names: the table's row; else its own name as a module, which is only
    an assumption (None when the name is not a plain identifier)."""
    found = distribution_table().get(normalized(distribution))
    return found.imports if found is not None else None


def module_answer(environment: JobEnvironment | None, module: str) -> ModuleAnswer:
    """Whether `import module` succeeds on the job whose environment this is."""
    top = module.split(".", maxsplit=1)[0]
    if top in sys.stdlib_module_names:
        return ModuleAnswer(importable=True, why=f"{top} is in the standard library")
    if environment is None:
        return ModuleAnswer(importable=None, why=f"whether {module} is installed: the job's installs are not read")
    installed = environment.names()
    named = [d for d in providers(module, certain=True) if d in installed]
    unsure = [d for d in providers(module) if d in installed and d not in named]
    if not named and unsure:
        found = environment.get(unsure[0])
        held = _release_answer(unsure[0], found.specifier if found is not None else "", module)
        if held is not None:
            return held
        spec = found.specifier if found is not None and found.specifier else ""
        command = found.command if found is not None else ""
        return ModuleAnswer(
            importable=None,
            why=f"whether {module} is there: {top} is installed{f' ({spec})' if spec else ''} by {command[:80]}, but "
            "which submodules the installed version has, and what they import, is not read",
        )
    own = [d for d in installed if d.replace("-", "_") == top and imports_of(d) is None]
    for dist in named or own:
        found = environment.get(dist)
        command = found.command if found is not None else ""
        if module != top and dist in own:
            # A submodule of a distribution the table does not list: whether that version has it, and what it
            # imports, is not read.
            spec = found.specifier if found is not None and found.specifier else ""
            return ModuleAnswer(
                importable=None,
                why=f"whether {module} is there: {top} is installed{f' ({spec})' if spec else ''} by {command[:80]}, but "
                "which submodules the installed version has, and what they import, is not read",
            )
        return ModuleAnswer(importable=True, why=f"{top} is installed: the job runs {command[:100]}")
    pulled = _dependency_of(environment, module)
    if pulled is not None:
        return ModuleAnswer(importable=True, why=pulled)
    if environment.base is not Base.FRESH:
        return ModuleAnswer(importable=None, why=f"whether {module} is installed: {environment.base_note}")
    if environment.maybe is None:
        why = environment.unknown[0] if environment.unknown else "an install is not read"
        return ModuleAnswer(importable=None, why=f"whether {module} is installed: {why}")
    closure, missing = _closure((*installed, *environment.maybe), frozenset(environment.local))
    if missing:
        shown = ", ".join(sorted(missing)[:4]) + (" ..." if len(missing) > 4 else "")
        return ModuleAnswer(
            importable=None,
            why=f"whether {module} is installed: the job installs {shown}, whose dependencies are not in the table",
        )
    if any(_may_provide(distribution_table()[d], module) for d in closure if d in distribution_table()):
        return ModuleAnswer(importable=None, why=f"whether {module} is installed: a dependency may install it")
    return ModuleAnswer(
        importable=False,
        why=f"{module} is not installed: the job's interpreter is fresh ({environment.base_note[:80]}) and nothing it "
        f"installs ({', '.join(sorted(closure)[:6])}) provides it",
    )


def _release_answer(distribution: str, specifier: str, module: str) -> ModuleAnswer | None:
    """A submodule of a distribution the job pins to one release (`==4.52.0`), from the table of what each release
    holds (`matrix.schedule.environment.releases`); None where it does not say."""
    pinned = specifier[2:] if specifier.startswith("==") and "," not in specifier and "*" not in specifier else ""
    held = release_holds(distribution, pinned, module) if pinned else None
    if held is None:
        return None
    return ModuleAnswer(importable=held[0], why=held[1], from_release=True)


def _may_provide(dist: Distribution, module: str) -> bool:
    """Whether a row's imports may hold `module`: it lists the module, a package above it, or a subpackage of it (a
    namespace package such as `cuda` is there where `cuda.bindings` is; `cuda.tile` is not)."""
    return any(module == name or module.startswith(name + ".") or name.startswith(module + ".") for name in dist.imports)


def _closure(names: tuple[str, ...], local: frozenset[str] = frozenset()) -> tuple[set[str], set[str]]:
    """Every distribution `names` may pull in, and those of them whose dependencies the table does not know (the
    checkout's own projects in `local` pull in what the job's reading already lists)."""
    table = distribution_table()
    seen: set[str] = set()
    missing: set[str] = set()
    stack = list(names)
    while stack and len(seen) < MAX_CLOSURE:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in local:
            continue
        row = table.get(name)
        if row is None or row.requires is None:
            missing.add(name)
            continue
        stack.extend(row.requires)
    return seen, missing


def _dependency_of(environment: JobEnvironment, module: str) -> str | None:
    """Why `module` is installed as a dependency: a distribution that provides it is always required (a
    Requires-Dist without a marker, the table's `depends`) by one the job installs with its dependencies, directly
    or through such requirements; None when the table does not show it. An uninstall in the job's commands of a
    distribution on the way leaves it unshown."""
    wanted = set(providers(module, certain=True))
    if not wanted:
        return None
    table = distribution_table()
    removed = " ".join(c for c in environment.commands if " uninstall " in f" {c} ")
    stack = [(i.distribution, i.distribution) for i in environment.installed if i.with_deps]
    seen: set[str] = set()
    while stack and len(seen) < MAX_CLOSURE:
        name, root = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        row = table.get(name)
        for dep in row.depends or () if row is not None else ():
            if dep in removed:
                continue
            if dep in wanted:
                return f"{module} is installed: {dep} is a dependency of {root}, which the job installs with its dependencies"
            stack.append((dep, root))
    return None
