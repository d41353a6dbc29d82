"""Suite names -> runner profiles, scheduling conventions, and the list of suites CI runs."""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError, UsageError
from matrix.core.jsonio import loads_untrusted
from matrix.core.loader import read_toml, read_toml_file
from matrix.core.model import RunnerProfile
from matrix.core.textfiles import read_text
from matrix.guards.model import Platform, Registration

DEFAULT_SOURCE = "matrix/data/suites.toml"


@dataclass(frozen=True, kw_only=True)
class SuiteMap:
    """Explicit suite -> profiles entries (exact names and globs) and the nightly-only prefixes."""

    entries: tuple[tuple[str, tuple[str, ...]], ...] = ()
    nightly_prefixes: tuple[str, ...] = ("nightly-", "weekly-")
    sources: tuple[str, ...] = ()

    def explicit(self, suite: str) -> tuple[str, ...] | None:
        for pattern, profiles in self.entries:
            if pattern == suite:
                return profiles
        for pattern, profiles in self.entries:
            if fnmatch.fnmatchcase(suite, pattern):
                return profiles
        return None

    def is_nightly_only(self, suite: str) -> bool:
        return suite.startswith(self.nightly_prefixes)


@dataclass(frozen=True, kw_only=True)
class SuiteTarget:
    """Where a registration runs: profile names (empty when unmapped) and how that was decided."""

    profiles: tuple[str, ...]
    how: str


def parse_suite_map(data: Mapping[str, Any], source: str, base: SuiteMap | None = None) -> SuiteMap:
    """Validate a suite-map document; its entries take precedence over `base`'s."""
    unknown = sorted(set(data) - {"schedule", "suite"})
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r} (allowed: schedule, suite)")
    schedule = data.get("schedule", {})
    if not isinstance(schedule, dict) or set(schedule) - {"nightly_prefixes"}:
        raise ConfigError(f"{source}: [schedule] takes only nightly_prefixes")
    prefixes = schedule.get("nightly_prefixes", list(base.nightly_prefixes) if base else ["nightly-", "weekly-"])
    if not isinstance(prefixes, list) or not all(isinstance(p, str) and p for p in prefixes):
        raise ConfigError(f"{source}: schedule.nightly_prefixes must be a list of non-empty strings")
    table = data.get("suite", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [suite] must be a table of suite = [profile, ...]")
    entries: list[tuple[str, tuple[str, ...]]] = []
    for suite, profiles in table.items():
        items = profiles if isinstance(profiles, list) else [profiles]
        if not items or not all(isinstance(p, str) and p for p in items):
            raise ConfigError(f"{source}: suite {suite!r}: expected a profile name or a list of them")
        entries.append((suite, tuple(items)))
    inherited = base.entries if base else ()
    return SuiteMap(
        entries=(*entries, *inherited),
        nightly_prefixes=tuple(prefixes),
        sources=(*(base.sources if base else ()), source),
    )


def load_suite_map(extra: Path | None = None) -> SuiteMap:
    """The built-in suite map, overlaid by `extra` when given."""
    text = resources.files("matrix").joinpath("data/suites.toml").read_text(encoding="utf-8")
    built_in = parse_suite_map(read_toml(text, DEFAULT_SOURCE), DEFAULT_SOURCE)
    if extra is None:
        return built_in
    return parse_suite_map(read_toml_file(extra), str(extra), built_in)


def check_suite_map(suite_map: SuiteMap, runners: Mapping[str, RunnerProfile]) -> None:
    """Every profile a suite map names must exist."""
    for suite, profiles in suite_map.entries:
        for name in profiles:
            if name not in runners:
                where = ", ".join(suite_map.sources)
                raise ConfigError(f"{where}: suite {suite!r} maps to unknown runner profile {name!r}")


def target_of(registration: Registration, suite_map: SuiteMap, runners: Mapping[str, RunnerProfile]) -> SuiteTarget:
    """The profiles a well-formed, in-scope registration runs on."""
    suite = registration.suite or ""
    wants_gpu = registration.platform is Platform.CUDA
    explicit = suite_map.explicit(suite)
    if explicit is not None:
        return _fitting(explicit, runners, wants_gpu, f"suite map entry for {suite}")
    configs = _runner_configs(runners)
    if registration.runner_config is not None and registration.runner_config in configs:
        config = registration.runner_config
        return _fitting(configs[config], runners, wants_gpu, f"runner_config {config}")
    found = longest_config_in(suite, configs)
    if found is not None:
        return _fitting(configs[found], runners, wants_gpu, f"runner_config {found} in the suite name")
    if registration.platform is Platform.CPU:
        cpu = tuple(n for n, p in runners.items() if p.gpus == 0)
        return SuiteTarget(profiles=cpu, how="a CPU registration runs on the GPU-less profiles")
    return SuiteTarget(profiles=(), how=f"no runner profile serves suite {suite!r} (add it with --suite-map)")


def longest_config_in(suite: str, configs: Mapping[str, tuple[str, ...]]) -> str | None:
    """The longest runner_config that is a whole dash-separated run of parts of `suite`."""
    parts = suite.split("-")
    best: str | None = None
    for config in configs:
        size = config.count("-") + 1
        found = any("-".join(parts[i : i + size]) == config for i in range(len(parts) - size + 1))
        if found and (best is None or len(config) > len(best)):
            best = config
    return best


def _runner_configs(runners: Mapping[str, RunnerProfile]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for name, profile in runners.items():
        for config in profile.runner_configs:
            out.setdefault(config, []).append(name)
    return {config: tuple(names) for config, names in out.items()}


def _fitting(names: Sequence[str], runners: Mapping[str, RunnerProfile], wants_gpu: bool, how: str) -> SuiteTarget:
    fit = tuple(n for n in names if n in runners and (runners[n].gpus > 0) == wants_gpu)
    if fit:
        return SuiteTarget(profiles=fit, how=how)
    kind = "GPU" if wants_gpu else "GPU-less"
    return SuiteTarget(profiles=(), how=f"{how} names no {kind} profile ({', '.join(names)})")


def read_suite_list(path: Path) -> frozenset[str]:
    """Suite names CI workflows run: text (one a line, # comments), JSON list or {"suites": [...]}, TOML suites = [...]."""
    text = read_text(path, UsageError, f"--suites {path}")
    names: Any
    if path.suffix == ".json":
        names = loads_untrusted(text, f"--suites {path}", UsageError, malformed="malformed")
        if isinstance(names, dict):
            names = names.get("suites")
    elif path.suffix == ".toml":
        try:
            names = tomllib.loads(text).get("suites")
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"--suites {path}: malformed TOML: {exc}") from None
    else:
        names = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        names = [n for n in names if n]
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise UsageError(
            f'--suites {path}: expected a list of suite names (JSON list or {{"suites": [...]}}, TOML suites = [...])'
        )
    if not names:
        raise UsageError(f"--suites {path}: no suite names in the file")
    return frozenset(n.strip() for n in names)
