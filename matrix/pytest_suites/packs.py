"""Predicate packs: what a project's guard helpers return on a runner profile, read from data.

A pack (`matrix/data/predicates/*.toml`) names its upstream source and declares
- `[predicate.NAME]`: a helper called without runner-dependent arguments (`is_sm100a_supported(device)`):
  `returns` one of capability / sm / device_count / has_gpu / no_gpu / cuda / true / false, or a boolean
  from `major`, `minor`, `cuda_at_least` and `cuda_from_minor` (flashinfer's `major == 10 and
  version_at_least(torch.version.cuda, "12.8")`);
- `[call.NAME]`: a helper whose literal argument is a capability (`has_device_capability(90)`), with `op`
  ge / eq / family (vLLM's `DeviceCapability.to_int()` comparisons);
- `[decorator.NAME]`: a decorator factory that skips (`multi_gpu_test(num_gpus=2)`), `skips_when` written
  as a condition over its keyword parameters.
Every entry has a guard `class`; a finding names the class of the facts its guard read.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.tomlfields import expect_keys, read_toml, str_field, table_field
from matrix.guards.platform import PLATFORM_ATTRIBUTES, PLATFORM_PREDICATES
from matrix.guards.predicates import PREDICATES, Predicate, RunnerFacts, Unknown

PACKS = ("torch", "flashinfer", "vllm")
# The name an option a conftest declares is read under (`config.getoption('--run-perf')`): see optins.py.
OPTION_FACT = "config.getoption("


class GuardClass(StrEnum):
    """What kind of runner fact keeps a test from running."""

    CAPABILITY = "compute capability"
    GPU_COUNT = "GPU count"
    CUDA_VERSION = "CUDA version"
    PLATFORM = "platform"
    ENVIRONMENT = "environment"
    UNCONDITIONAL = "unconditional"
    INSTALL = "installed modules"
    OPTION = "command-line option"  # a conftest's own option (`config.getoption("--run-perf")`) the command gives or not
    SELECTION = "selection"  # not a skip: the CI commands leave the test out (`-k`, `-m`, `--deselect`, node ids)
    COLLECTION = "collection error"  # not a skip: every command that collects the test stops before running any
    UNKNOWN = "unknown"


_CLASS_NAMES = {
    "capability": GuardClass.CAPABILITY,
    "gpu-count": GuardClass.GPU_COUNT,
    "cuda-version": GuardClass.CUDA_VERSION,
    "platform": GuardClass.PLATFORM,
    "environment": GuardClass.ENVIRONMENT,
}


@dataclass(frozen=True, kw_only=True)
class CallPredicate:
    op: str
    guard_class: GuardClass


@dataclass(frozen=True, kw_only=True)
class DecoratorRule:
    skips_when: str
    guard_class: GuardClass


@dataclass(frozen=True, kw_only=True)
class PredicatePacks:
    """The merged packs: the evaluator's table, call and decorator rules, the class of each fact."""

    table: Mapping[str, Predicate]
    calls: Mapping[str, CallPredicate]
    decorators: Mapping[str, DecoratorRule]
    classes: Mapping[str, GuardClass]
    sources: tuple[tuple[str, str], ...]

    def class_of(self, fact: str) -> GuardClass:
        if fact in self.classes:
            return self.classes[fact]
        last = fact.rpartition(".")[2]
        if last in self.classes:
            return self.classes[last]
        if fact in PLATFORM_ATTRIBUTES or fact in PLATFORM_PREDICATES:
            return GuardClass.PLATFORM  # the runner's OS, CPU, Python or torch build, from its labels and installs
        if fact == "env":
            return GuardClass.ENVIRONMENT
        if fact == "install":
            return GuardClass.INSTALL
        if fact.startswith(OPTION_FACT):
            return GuardClass.OPTION
        if fact.endswith("version.hip"):
            return GuardClass.PLATFORM  # a ROCm build of torch or a CUDA one
        if "version.cuda" in fact or "cuda_version" in last:
            return GuardClass.CUDA_VERSION
        if "capability" in fact or "sm" in last or "blackwell" in last or "cuda.version" in fact:
            return GuardClass.CAPABILITY
        if "device_count" in fact:
            return GuardClass.GPU_COUNT
        if last.startswith("is_") or "available" in last:
            return GuardClass.PLATFORM
        return GuardClass.UNKNOWN


def _cuda_ok(facts: RunnerFacts, least: str) -> object:
    if facts.profile.cuda is None:
        return Unknown(why=f"profile {facts.profile.name} gives no cuda version (torch.version.cuda)")
    return _version(facts.profile.cuda) >= _version(least)


def _version(text: str) -> tuple[int, ...]:
    # torch.version.cuda and the packs' thresholds are dotted integers ("12.9"); flashinfer compares them with
    # packaging.version, which orders these the same way.
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def _boolean(t: Mapping[str, Any], where: str) -> Predicate:
    majors = frozenset(_ints(t.get("major", []), f"{where}: major"))
    minors = frozenset(_ints(t.get("minor", []), f"{where}: minor"))
    least = str_field(t["cuda_at_least"], f"{where}: cuda_at_least") if "cuda_at_least" in t else None
    by_minor = [(int(m), str(v)) for m, v in t.get("cuda_from_minor", [])]

    def predicate(facts: RunnerFacts) -> object:
        cap = facts.profile.capability
        if cap is None or not facts.profile.gpus:
            return False
        if (majors and cap[0] not in majors) or (minors and cap[1] not in minors):
            return False
        need = least
        for minor, version in by_minor:
            if cap[1] >= minor:
                need = version
        return True if need is None else _cuda_ok(facts, need)

    return predicate


def _ints(value: Any, where: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ConfigError(f"{where}: expected a list of integers, got {value!r}")
    return list(value)


def _capability(facts: RunnerFacts) -> object:
    cap = facts.profile.capability
    if cap is None or not facts.profile.gpus:
        return Unknown(why="the capability query raises without a GPU")
    return cap


_RETURNS: Mapping[str, Predicate] = {
    "capability": _capability,
    "sm": lambda f: f.profile.sm if f.profile.gpus and f.profile.sm is not None else 0,
    "device_count": lambda f: f.profile.gpus,
    "has_gpu": lambda f: f.profile.gpus > 0,
    "no_gpu": lambda f: f.profile.gpus == 0,
    "cuda": lambda f: f.profile.cuda if f.profile.cuda is not None else Unknown(why=f"profile {f.profile.name} gives no cuda"),
    "true": lambda f: True,
    "false": lambda f: False,
}


def parse_pack(data: Mapping[str, Any], source: str) -> PredicatePacks:
    expect_keys(data, {"pack", "predicate", "call", "decorator"}, source)
    head = table_field(data.get("pack", {}), f"{source}: [pack]")
    name = str_field(head.get("name"), f"{source}: [pack] name")
    origin = str_field(head.get("source"), f"{source}: [pack] source")
    table: dict[str, Predicate] = {}
    classes: dict[str, GuardClass] = {}
    for key, raw in table_field(data.get("predicate", {}), f"{source}: predicate").items():
        where = f"{source}: predicate.{key}"
        t = table_field(raw, where)
        expect_keys(t, {"returns", "major", "minor", "cuda_at_least", "cuda_from_minor", "class"}, where)
        returns = t.get("returns")
        if returns is not None and returns not in _RETURNS:
            raise ConfigError(f"{where}: returns must be one of {', '.join(_RETURNS)}, got {returns!r}")
        table[key] = _RETURNS[returns] if returns is not None else _boolean(t, where)
        classes[key] = _class(t, where)
    calls = {}
    for key, raw in table_field(data.get("call", {}), f"{source}: call").items():
        where = f"{source}: call.{key}"
        t = table_field(raw, where)
        expect_keys(t, {"op", "class"}, where)
        op = str_field(t.get("op"), f"{where}: op")
        if op not in ("ge", "eq", "family"):
            raise ConfigError(f"{where}: op must be ge, eq or family, got {op!r}")
        calls[key] = CallPredicate(op=op, guard_class=_class(t, where))
    decorators = {}
    for key, raw in table_field(data.get("decorator", {}), f"{source}: decorator").items():
        where = f"{source}: decorator.{key}"
        t = table_field(raw, where)
        expect_keys(t, {"skips_when", "class"}, where)
        text = str_field(t.get("skips_when"), f"{where}: skips_when")
        try:
            ast.parse(text, mode="eval")
        except SyntaxError:
            raise ConfigError(f"{where}: skips_when does not parse: {text!r}") from None
        decorators[key] = DecoratorRule(skips_when=text, guard_class=_class(t, where))
    return PredicatePacks(table=table, calls=calls, decorators=decorators, classes=classes, sources=((name, origin),))


def _class(t: Mapping[str, Any], where: str) -> GuardClass:
    name = str_field(t.get("class", "capability"), f"{where}: class")
    if name not in _CLASS_NAMES:
        raise ConfigError(f"{where}: class must be one of {', '.join(_CLASS_NAMES)}, got {name!r}")
    return _CLASS_NAMES[name]


def merge(packs: list[PredicatePacks]) -> PredicatePacks:
    """Later packs add to earlier ones; the guard audit's own table is the base."""
    table: dict[str, Predicate] = {**PREDICATES, **PLATFORM_PREDICATES}
    calls: dict[str, CallPredicate] = {}
    decorators: dict[str, DecoratorRule] = {}
    classes: dict[str, GuardClass] = {}
    sources: list[tuple[str, str]] = []
    for pack in packs:
        table.update(pack.table)
        calls.update(pack.calls)
        decorators.update(pack.decorators)
        classes.update(pack.classes)
        sources.extend(pack.sources)
    for key, call in calls.items():
        classes.setdefault(key, call.guard_class)
    return PredicatePacks(table=table, calls=calls, decorators=decorators, classes=classes, sources=tuple(sources))


@functools.cache
def builtin_packs(names: tuple[str, ...] = PACKS) -> PredicatePacks:
    """The packs shipped in matrix/data/predicates, merged over the guard audit's table."""
    loaded = []
    for name in names:
        text = resources.files("matrix").joinpath(f"data/predicates/{name}.toml").read_text(encoding="utf-8")
        loaded.append(parse_pack(read_toml(text, f"predicates/{name}.toml"), f"predicates/{name}.toml"))
    return merge(loaded)


def capability_call(op: str, argument: object, facts: RunnerFacts) -> object:
    """vLLM's Platform.has_device_capability / is_device_capability / is_device_capability_family."""
    cap = facts.profile.capability
    if cap is None or not facts.profile.gpus:
        return False  # vLLM: get_device_capability() is None off CUDA, and the helpers return False
    as_int = cap[0] * 10 + cap[1]
    if isinstance(argument, tuple) and len(argument) == 2 and all(isinstance(a, int) for a in argument):
        if op == "family":
            return Unknown(why="a capability family given as a tuple")
        return cap >= argument if op == "ge" else cap == argument
    if not isinstance(argument, int) or isinstance(argument, bool):
        return Unknown(why="a capability that is not a literal")
    if op == "ge":
        return as_int >= argument
    if op == "eq":
        return as_int == argument
    return as_int // 10 == argument // 10
