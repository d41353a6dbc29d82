"""Runner-profile files (`[runner.NAME]` tables): the built-in set, user files, and when a name may be reused."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.profile import RunnerProfile, SkipPolicy
from matrix.core.textfiles import package_text
from matrix.core.tomlfields import expect_keys, read_toml, read_toml_file, str_field, strings_field, table_field

MAX_RUNNER_GPUS = 1024


def default_runners_text() -> str:
    return package_text("data/runners.toml")


def load_runners(extra: Sequence[Path] = (), replace: Sequence[str] = (), *, builtin: bool = True) -> dict[str, RunnerProfile]:
    """Built-in runner profiles (unless `builtin` is False) extended by each file in `extra`.

    A profile whose name is already defined (built in, or by an earlier file) is an error unless `replace`
    names it: silently swapping `4-gpu-b200` for a 2-GPU sm80 profile would change every verdict for it.
    """
    if not builtin and not extra:
        raise ConfigError(
            "builtin_runners = false leaves no runner profile: name a runners file "
            "([tool.specmatrix] runners, $SPECMATRIX_RUNNERS or --runners FILE)"
        )
    runners = parse_runners(read_toml(default_runners_text(), "matrix/data/runners.toml"), "<default runners>") if builtin else {}
    origin = dict.fromkeys(runners, "a built-in profile")
    wanted = set(replace)
    for path in extra:
        for name, profile in parse_runners(read_toml_file(path), str(path)).items():
            if name in runners and name not in wanted:
                raise ConfigError(
                    f"{path}: runner {name!r} is already {origin[name]}; rename it, or pass --replace-runner {name} to replace it"
                )
            runners[name] = profile
            origin[name] = f"defined in {path}"
    unused = sorted(wanted - set(origin))
    if unused:
        raise ConfigError(f"--replace-runner {unused[0]}: no runner profile of that name to replace")
    return runners


def parse_runners(data: Mapping[str, Any], source: str) -> dict[str, RunnerProfile]:
    """Validate a runner-profile document (`[runner.NAME]` tables)."""
    expect_keys(data, {"runner"}, source)
    out: dict[str, RunnerProfile] = {}
    for name, raw in table_field(data.get("runner", {}), f"{source}: [runner]").items():
        where = f"{source}: runner {name!r}"
        t = table_field(raw, where)
        expect_keys(
            t,
            {
                "gpus",
                "capability",
                "device_name",
                "labels",
                "former_labels",
                "runner_configs",
                "skip_policy",
                "description",
                "host_arch",
                *_CI_FACTS,
            },
            where,
        )
        gpus = t.get("gpus")
        if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= MAX_RUNNER_GPUS:
            raise ConfigError(f"{where}: gpus must be a non-negative integer (at most {MAX_RUNNER_GPUS}), got {gpus!r}")
        cap = t.get("capability")
        capability: tuple[int, int] | None = None
        if cap is not None:
            if not (isinstance(cap, list) and len(cap) == 2 and all(isinstance(c, int) and not isinstance(c, bool) for c in cap)):
                raise ConfigError(f"{where}: capability must be [major, minor], got {cap!r}")
            capability = (cap[0], cap[1])
        if gpus > 0 and capability is None:
            raise ConfigError(f"{where}: a GPU runner needs a capability")
        if gpus == 0 and capability is not None:
            raise ConfigError(f"{where}: capability given but gpus = 0")
        try:
            policy = SkipPolicy(t.get("skip_policy", "lenient"))
        except ValueError:
            raise ConfigError(f"{where}: skip_policy must be 'lenient' or 'strict'") from None
        device_name = t.get("device_name")
        if device_name is not None:
            device_name = str_field(device_name, f"{where}: device_name")
        description = t.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f"{where}: description: expected a string, got {description!r}")
        out[name] = RunnerProfile(
            name=name,
            gpus=gpus,
            capability=capability,
            device_name=device_name,
            labels=strings_field(t.get("labels", [name]), f"{where}: labels"),
            former_labels=strings_field(t.get("former_labels", []), f"{where}: former_labels"),
            runner_configs=strings_field(t.get("runner_configs", []), f"{where}: runner_configs"),
            host_arch=_host_arch(t.get("host_arch"), where),
            skip_policy=policy,
            description=description,
            **_ci_facts(t, where),
        )
    if not out:
        raise ConfigError(f"{source}: no [runner.NAME] tables")
    return out


_CI_FACTS = ("in_ci", "amd_ci", "cuda")
_HOST_ARCHES = ("x86_64", "aarch64")


def _host_arch(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if value not in _HOST_ARCHES:
        raise ConfigError(f"{where}: host_arch must be one of {', '.join(_HOST_ARCHES)}, got {value!r}")
    return str(value)


_CUDA_VERSION = re.compile(r"^[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,4})?$")


def _ci_facts(t: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Optional CI facts of a runner profile: in_ci / amd_ci (booleans), cuda (a version such as "12.9")."""
    out: dict[str, Any] = {}
    for key in ("in_ci", "amd_ci"):
        if key in t:
            if not isinstance(t[key], bool):
                raise ConfigError(f"{where}: {key} must be true or false, got {t[key]!r}")
            out[key] = t[key]
    if "cuda" in t:
        cuda = t["cuda"]
        if not isinstance(cuda, str) or not _CUDA_VERSION.match(cuda):
            raise ConfigError(f'{where}: cuda must be a CUDA version string such as "12.9", got {cuda!r}')
        if t.get("gpus") == 0:
            raise ConfigError(f"{where}: cuda given but gpus = 0")
        out["cuda"] = cuda
    return out
