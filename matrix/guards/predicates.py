"""What the guard helpers of sglang and torch return on a runner profile, and the bounds on evaluating them.

A predicate returns a plain value, or `Unknown` when the profile cannot say (docs/sources.md#guard-helpers).
Every evaluation runs under a `Budget` (nesting depth, steps, helper-call depth, integer size).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from matrix.core.profile import RunnerProfile
from matrix.guards.model import dotted
from matrix.schedule.environment.distributions import module_answer
from matrix.schedule.environment.model import JobEnvironment, normalized
from matrix.schedule.environment.project_imports import ProjectImports

if TYPE_CHECKING:  # a guards run reads no schedule record unless it reads workflows
    from matrix.schedule.model import RunnerHardware, RunnerPlatform

# --- predicates -------------------------------------------------------------------------------------------------------
# What the guard helpers of sglang and torch return on a runner profile (docs/sources.md#guard-helpers).
#
# A predicate returns a plain value, or `Unknown` when the profile cannot say.


@dataclass(frozen=True, kw_only=True)
class Unknown:
    """A value the profile does not determine; `why` says which fact is missing."""

    why: str


@dataclass(frozen=True, kw_only=True)
class SomeText(Unknown):
    """A text whose value is not known but which is known to be set and not empty (`torch.version.hip` on a ROCm
    host): true, and not None; anything computed from it is plainly unknown (`plain`)."""


@dataclass(frozen=True, kw_only=True)
class KnownMembers(Unknown):
    """A collection known to hold `members` and perhaps more (torch's quantized engines on a wheel whose build flags
    were read): `x in it` is true for a member and unknown otherwise."""

    members: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True)
class NotAnyOf(Unknown):
    """A value not known but known to be none of `values` (`platform.processor()` on an x86-64 Linux host is
    not "aarch64"): `==` and `!=` with one of them are decided."""

    values: frozenset[str] = frozenset()


@dataclass(frozen=True, kw_only=True)
class PartText(SomeText):
    """A text known in part: it holds `known`, and is itself a part of one of `within` (empty: of anything), such as
    `self.id()` of a unittest test (`matrix.pytest_suites.unittest_ids`) or a ROCm GPU's `gcnArchName`
    (`gfx942:sramecc+:xnack-`); set and not empty. `x in text` is true for a part of `known` and false for a text
    in none of `within`."""

    known: str = ""
    within: tuple[str, ...] = ()


def plain(value: object) -> object:
    """`value`, with a `SomeText` made a plain `Unknown`: what is computed from a set text is not known to be set."""
    return Unknown(why=value.why) if isinstance(value, SomeText) else value


@dataclass(frozen=True, kw_only=True)
class RunnerFacts:
    """A profile plus what the audit is told about installed modules."""

    profile: RunnerProfile
    installed: frozenset[str] = frozenset()
    # Environment variables the workflow job sets for this runner (from --workflows); others are unknown.
    # A value holding `${{` is set at run time to something not known statically.
    env: Mapping[str, str] = field(default_factory=dict)
    # With a schedule the selecting jobs' env is known: a variable they do not set, and that no CI file
    # mentions (`env_open` lists the names CI files do mention), is unset on this runner.
    env_closed: bool = False
    env_open: frozenset[str] = frozenset()
    # Set when every selecting job runs the tests inside a container it starts (`docker exec`): `env` is then all
    # the container is given (the runner's own environment and the profile's `in_ci` do not reach it), unless
    # `container_unread` says why it may hold more.
    container: str = ""
    container_unread: str = ""
    # What the job that runs the test installs (its schedule entry's); None: not read (the guard audit, a declared
    # schedule), and then only `installed` (--assume-installed) says a module imports.
    environment: JobEnvironment | None = None
    # Set for a runner no profile describes: what its labels say of it (`matrix.guards.hardware`); `profile` is then
    # a stand-in named after its labels.
    hardware: RunnerHardware | None = None
    # The checkout's own modules (pytest-audit): whether one imports on the job, read from its files.
    project: ProjectImports | None = None
    # The runner's operating system and CPU as its labels say (pytest-audit; `matrix.guards.platform`).
    platform: RunnerPlatform | None = None
    # Names the selecting command's environment certainly lacks (`unset X`, `env -u X` before it; "*": `env -i`).
    unset: frozenset[str] = frozenset()

    def describe(self) -> str:
        if self.hardware is not None:
            return f"{self.profile.name}: {self.hardware.describe()}"
        p = self.profile
        if not p.gpus or p.capability is None:
            return f"{p.name}: no GPU"
        name = f", {p.device_name}" if p.device_name else ""
        return f"{p.name}: sm{p.sm}, {p.gpus} GPU(s){name}"


@dataclass(frozen=True, kw_only=True)
class PartialTuple(Unknown):
    """A tuple with an unknown item (`return False, f"got {major}"`): unknown as a whole, its known items
    can still be indexed or unpacked (`_OK, _WHY = _supported()` then `skipIf(not _OK, _WHY)`)."""

    items: tuple[object, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Record:
    """A value with attributes a guard reads (`get_jit_cuda_arch().major`)."""

    kind: str
    fields: tuple[tuple[str, object], ...]

    def get(self, name: str) -> object:
        return dict(self.fields).get(name, Unknown(why=f"{self.kind} has no attribute {name}"))

    def __repr__(self) -> str:
        return f"{self.kind}({', '.join(f'{k}={v!r}' for k, v in self.fields)})"


Predicate = Callable[[RunnerFacts], object]


def partial_compare(
    op: ast.cmpop, left: object, right: object, compare: Callable[[ast.cmpop, object, object], bool | Unknown]
) -> bool | Unknown | None:
    """Comparisons a partly known value decides: membership in `KnownMembers` and in a `PartText`, and the order of a
    tuple with unknown items (`sys.version_info >= (3, 11)` with Python 3.10) where a known item settles it; None
    when neither side is such a value. `compare` compares two plain items."""
    if isinstance(op, ast.In | ast.NotIn) and isinstance(right, KnownMembers) and isinstance(left, str):
        return (
            (True if left in right.members else Unknown(why=right.why))
            if isinstance(op, ast.In)
            else (False if left in right.members else Unknown(why=right.why))
        )
    if isinstance(op, ast.Eq | ast.NotEq) and (isinstance(left, NotAnyOf) or isinstance(right, NotAnyOf)):
        other, some = (right, left) if isinstance(left, NotAnyOf) else (left, right)
        assert isinstance(some, NotAnyOf)
        return isinstance(op, ast.NotEq) if isinstance(other, str) and other in some.values else Unknown(why=some.why)
    if isinstance(op, ast.In | ast.NotIn) and isinstance(right, PartText) and isinstance(left, str):
        outside = bool(right.within) and not any(left in whole for whole in right.within)
        found = True if left in right.known else False if outside else None
        return Unknown(why=right.why) if found is None else found is isinstance(op, ast.In)
    if isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) and any(isinstance(v, PartialTuple) for v in (left, right)):
        a = left.items if isinstance(left, PartialTuple) else left
        b = right.items if isinstance(right, PartialTuple) else right
        if not isinstance(a, tuple) or not isinstance(b, tuple):
            return Unknown(why="ordering of a partly known value")
        for x, y in zip(a, b, strict=False):
            if isinstance(x, Unknown) or isinstance(y, Unknown):
                unknown = x if isinstance(x, Unknown) else y
                return Unknown(why=unknown.why if isinstance(unknown, Unknown) else "an item is unknown")
            if x != y:
                return compare(op, x, y)
        return compare(op, len(a), len(b))
    return None


def _major_in(*majors: int) -> Predicate:
    def predicate(facts: RunnerFacts) -> object:
        cap = facts.profile.capability
        # sglang's is_smNN_supported() returns False off CUDA rather than raising.
        return cap is not None and facts.profile.gpus > 0 and cap[0] in majors

    return predicate


def _device_sm(facts: RunnerFacts) -> object:
    # sglang get_device_sm() is major*10+minor, 0 when CUDA is not available.
    return facts.profile.sm if facts.profile.gpus and facts.profile.sm is not None else 0


def _capability(facts: RunnerFacts) -> object:
    cap = facts.profile.capability
    if cap is None or not facts.profile.gpus:
        return Unknown(why="torch.cuda.get_device_capability() raises without a GPU")
    return cap


def _device_name(facts: RunnerFacts) -> object:
    if not facts.profile.gpus:
        return Unknown(why="torch.cuda.get_device_name() raises without a GPU")
    return facts.profile.device_name or Unknown(why=f"profile {facts.profile.name} names no device")


def _jit_arch(facts: RunnerFacts) -> object:
    # sglang.jit_kernel.utils.arch.get_jit_cuda_arch(): ArchInfo(major, minor, suffix) from
    # torch.cuda.get_device_capability(); (0, 0) when CUDA is not available.
    cap = facts.profile.capability if facts.profile.gpus else None
    major, minor = cap if cap is not None else (0, 0)
    return Record(kind="ArchInfo", fields=(("major", major), ("minor", minor)))


def _device_properties(facts: RunnerFacts) -> object:
    # torch.cuda.get_device_properties(d): what a profile says of its GPUs (the capability, the name it gives)
    cap = facts.profile.capability
    if cap is None or not facts.profile.gpus:
        return Unknown(why="torch.cuda.get_device_properties() raises without a GPU")
    named = (("name", facts.profile.device_name),) if facts.profile.device_name else ()
    return Record(kind="device properties", fields=(("major", cap[0]), ("minor", cap[1]), *named))


def _nvml_name(facts: RunnerFacts) -> object:
    # pynvml.nvmlDeviceGetName(handle): "NVIDIA B200", "NVIDIA GB200" ...; raises without a GPU.
    if not facts.profile.gpus:
        return Unknown(why="pynvml raises without a GPU")
    if not facts.profile.device_name:
        return Unknown(why=f"profile {facts.profile.name} names no device")
    return f"NVIDIA {facts.profile.device_name}"


def _has_cuda(facts: RunnerFacts) -> object:
    return facts.profile.gpus > 0


def _flashinfer(facts: RunnerFacts) -> object:
    # sglang: find_spec("flashinfer") is not None and is_cuda(); a profile does not know what is installed.
    if not facts.profile.gpus:
        return False
    if "flashinfer" in facts.installed:
        return True
    return Unknown(why="whether flashinfer is installed (pass --assume-installed flashinfer)")


def importable(facts: RunnerFacts, module: str) -> object:
    """Whether `import module` (`module:name`: `from module import name`) succeeds where the test runs: True, False,
    or Unknown with the reason."""
    module, _, name = module.partition(":")
    if module.split(".", maxsplit=1)[0] in facts.installed:
        return True
    if facts.environment is None:
        return Unknown(why=f"whether {module} is installed (see --assume-installed)")
    answer = module_answer(facts.environment, module)
    if name and answer.from_release and answer.importable:
        return Unknown(why=f"whether {module} binds {name}: {answer.why}; which names it binds is not read")
    if answer.importable is None and facts.project is not None:
        # The checkout's own module: read from its files (only ever True or unknown).
        own = facts.project.answer(module, facts.environment, (name,) if name else ())
        answer = own if own is not None else answer  # the checkout's own module: its files say more than the install
    return answer.importable if answer.importable is not None else Unknown(why=answer.why)


@dataclass(frozen=True, kw_only=True)
class VersionRange(Unknown):
    """A distribution's version known only as a range (`>=4.52.0` from the job's install): unknown as a value, but
    a comparison with a literal version it decides is decided (`matrix.guards.evaluate.compare`)."""

    specifier: str = ""


def distribution_version(facts: RunnerFacts, distribution: str) -> object:
    """`importlib.metadata.version(d)` / `module.__version__` on the job: the pinned version, a `VersionRange`, or
    Unknown."""
    environment = facts.environment
    found = environment.get(distribution) if environment is not None else None
    if found is None:
        return Unknown(why=f"the version of {distribution}: the job is not known to install it")
    pinned = found.specifier[2:] if found.specifier.startswith("==") and "," not in found.specifier else ""
    if pinned and "*" not in pinned:
        return pinned
    if not found.specifier:
        return Unknown(why=f"the version of {distribution}: the job installs it without a version ({found.command[:80]})")
    return VersionRange(
        why=f"the version of {distribution} is {found.specifier} ({found.command[:80]})", specifier=found.specifier
    )


def module_version(facts: RunnerFacts, module: str) -> object:
    """`module.__version__`: the version of the installed distribution named like the module (`transformers`)."""
    return distribution_version(facts, normalized(module))


def _false(facts: RunnerFacts) -> object:
    return False


def _truthy(text: str) -> bool:
    # sglang get_bool_env_var: value.lower() in ("true", "1")
    return text.strip().lower() in ("true", "1")


def env_value(facts: RunnerFacts, variable: str) -> str | Unknown | None:
    """The variable's value on the runner: a string, None when it is certainly unset, else Unknown."""
    if variable in facts.env:
        value = facts.env[variable]
        if "${{" in value:
            return Unknown(why=f"{variable} is set at run time on {facts.profile.name} (`{value}`)")
        return value
    if variable in facts.unset or "*" in facts.unset:
        return None  # the command's own script took it out of the environment
    if facts.container:
        if facts.container_unread:
            return Unknown(why=f"whether {variable} is set in {facts.container}: {facts.container_unread}")
        return None
    if facts.env_closed and variable not in facts.env_open:
        return None
    return Unknown(why=f"whether {variable} is set on {facts.profile.name} (the workflows do not say)")


def _in_ci(facts: RunnerFacts) -> object:
    # sglang.test.test_utils.is_in_ci() reads SGLANG_IS_IN_CI.
    value = env_value(facts, "SGLANG_IS_IN_CI") if "SGLANG_IS_IN_CI" in facts.env or facts.container else None
    if isinstance(value, str):
        return _truthy(value)
    if isinstance(value, Unknown):
        return value
    if facts.container:
        return False  # the container is not given SGLANG_IS_IN_CI: the runner's own setting does not reach it
    if facts.profile.in_ci is not None:
        return facts.profile.in_ci
    return Unknown(why=f"profile {facts.profile.name} does not say whether it is a CI runner (in_ci)")


def _in_amd_ci(facts: RunnerFacts) -> object:
    # sglang.test.test_utils.is_in_amd_ci() reads SGLANG_IS_IN_CI_AMD; profiles describe CUDA and GPU-less hosts.
    value = env_value(facts, "SGLANG_IS_IN_CI_AMD") if "SGLANG_IS_IN_CI_AMD" in facts.env else None
    if isinstance(value, str):
        return _truthy(value)
    if isinstance(value, Unknown):
        return value
    return bool(facts.profile.amd_ci)


def _cuda_version(facts: RunnerFacts) -> object:
    if facts.profile.cuda is not None:
        return facts.profile.cuda
    return Unknown(why=f"profile {facts.profile.name} gives no cuda version (torch.version.cuda)")


# Keys without a dot match a helper by its own name wherever it is imported from (sglang.srt.utils,
# sglang.srt.utils.common, `utils.` ...); dotted keys match the resolved import path.
PREDICATES: Mapping[str, Predicate] = {
    "is_sm90_supported": _major_in(9),
    "is_sm100_supported": _major_in(10),
    "is_sm120_supported": _major_in(12),
    "is_blackwell": _major_in(10, 11, 12),
    "is_blackwell_supported": _major_in(10, 11, 12),
    # sglang.test.test_utils.is_blackwell_system() returns is_blackwell() (main, 2026-07).
    "is_blackwell_system": _major_in(10, 11, 12),
    # sglang.test.test_utils.get_gpu_count(): 0 on a CPU device, else torch.accelerator.device_count().
    "get_gpu_count": lambda facts: facts.profile.gpus,
    "get_jit_cuda_arch": _jit_arch,
    "pynvml.nvmlDeviceGetName": _nvml_name,
    "pynvml.nvmlDeviceGetHandleByIndex": lambda facts: Record(kind="nvml handle", fields=()),
    "pynvml.nvmlInit": lambda facts: None,
    "get_device_sm": _device_sm,
    "is_hip": _false,
    "is_npu": _false,
    "is_xpu": _false,
    "is_cuda": _has_cuda,
    "is_cuda_alike": _has_cuda,
    "is_flashinfer_available": _flashinfer,
    "torch.cuda.is_available": _has_cuda,
    "torch.cuda.device_count": lambda facts: facts.profile.gpus,
    "torch.cuda.get_device_capability": _capability,
    "torch.cuda.get_device_name": _device_name,
    "torch.cuda.get_device_properties": _device_properties,
    "is_in_ci": _in_ci,
    "is_in_amd_ci": _in_amd_ci,
}


def _hip_version(facts: RunnerFacts) -> object:
    """`torch.version.hip`: None on a profile (profiles describe CUDA and GPU-less hosts, with CUDA or CPU torch) and
    on NVIDIA and macOS hosts; set on a ROCm host, whose torch is ROCm's ("HIP (ROCm) semantics", PyTorch docs:
    `torch.version.hip` is set and `torch.version.cuda` is None in a ROCm build); unknown elsewhere."""
    hardware = facts.hardware
    if hardware is None or hardware.kind in ("cuda", "macos"):
        return None
    if hardware.kind == "rocm":
        return SomeText(why=f"the HIP version of the ROCm torch on {facts.profile.name}")
    return Unknown(why=f"which torch build {facts.profile.name} has (torch.version.hip)")


def _torch_cuda(facts: RunnerFacts) -> object:
    """`torch.version.cuda`: the profile's; None on a ROCm or macOS host (no CUDA build there); else unknown."""
    hardware = facts.hardware
    if hardware is None:
        return _cuda_version(facts)
    if hardware.kind in ("rocm", "macos"):
        return None
    return Unknown(why=f"which torch build {facts.profile.name} has (torch.version.cuda)")


# Attributes read without a call.
ATTRIBUTES: Mapping[str, Predicate] = {
    "torch.version.hip": _hip_version,
    "torch.version.cuda": _torch_cuda,
}


NOT_ENV = object()  # environment(): the expression is not an environment read (None is a value: unset)


def environment(name: str, node: ast.Call | ast.Subscript, facts: RunnerFacts) -> object:
    """`os.environ.get("X", d)`, `os.getenv("X")`, `os.environ["X"]`, `get_bool_env_var("X")`; NOT_ENV if not one."""
    if isinstance(node, ast.Subscript):
        key = node.slice
        if name != "os.environ[]" or not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return NOT_ENV
        found = env_value(facts, key.value)
        if found is None:
            return Unknown(why=f"os.environ[{key.value!r}] raises KeyError, {unset_note(key.value, facts)}")
        return found
    last = name.rpartition(".")[2]
    if name not in ("os.environ.get", "os.getenv") and last != "get_bool_env_var":
        return NOT_ENV
    if not node.args or not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return Unknown(why="an environment variable with a computed name")
    variable = node.args[0].value
    if variable not in facts.env and variable == "SGLANG_IS_IN_CI" and facts.profile.in_ci is not None and not facts.container:
        return facts.profile.in_ci if last == "get_bool_env_var" else ("true" if facts.profile.in_ci else None)
    value = env_value(facts, variable)
    if value is None:
        default = _default(node)
        if isinstance(default, Unknown):
            return default
        return _truthy(str(default)) if last == "get_bool_env_var" else default
    if isinstance(value, Unknown):
        return value
    return _truthy(value) if last == "get_bool_env_var" else value


def unset_variable(node: ast.Call | ast.Subscript, facts: RunnerFacts) -> str | None:
    """The variable an environment read names, with why it is unset, when the schedule says it is on this runner."""
    key = node.slice if isinstance(node, ast.Subscript) else (node.args[0] if node.args else None)
    if facts.container:
        return None  # said by container_note, not as "no CI file mentions it"
    if isinstance(key, ast.Constant) and isinstance(key.value, str) and env_value(facts, key.value) is None:
        if key.value not in facts.env and (key.value in facts.unset or "*" in facts.unset):
            return f"{key.value}, which the selecting command's own script takes out of its environment (unset, env -u, env -i)"
        return f"{key.value}, which no scheduled job sets (nor any CI file mentions)"
    return None


def unset_note(variable: str, facts: RunnerFacts | None = None) -> str:
    if facts is not None and facts.container:
        return f"{variable} is unset: {facts.container} is not given it"
    if facts is not None and variable not in facts.env and (variable in facts.unset or "*" in facts.unset):
        return f"{variable} is unset: the selecting command's own script takes it out of its environment"
    return f"{variable} is unset: no scheduled job selecting the test sets it, and no CI file mentions it"


def container_note(facts: RunnerFacts, used: Iterable[str]) -> str:
    """Why an environment fact is what it is inside the job's container ("" when the tests run on the runner)."""
    if not facts.container or facts.container_unread or not {"is_in_ci", "is_in_amd_ci", "env"} & set(used):
        return ""
    given = ", ".join(sorted(k for k in facts.env if not k.startswith("@"))) or "nothing"
    ci = [v for f, v in (("is_in_ci", "SGLANG_IS_IN_CI"), ("is_in_amd_ci", "SGLANG_IS_IN_CI_AMD")) if f in used]
    told = f"{' and '.join(ci)} {'is' if len(ci) == 1 else 'are'} not set there, " if ci and not set(ci) & set(facts.env) else ""
    return (
        f"the tests run in {facts.container}: {told}the runner's environment (and its profile's in_ci) does not reach "
        f"it; it is given only {given[:200]}"
    )


def _default(node: ast.Call) -> object:
    """The default of `os.environ.get("X", d)` / `get_bool_env_var("X", default="false")`: a literal, else unknown."""
    given = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "default"), None)
    if given is None:
        return None
    if isinstance(given, ast.Constant) and isinstance(given.value, str | int | bool | type(None)):
        return given.value
    return Unknown(why="a default that is not a literal")


class ValueSource(Protocol):
    """What a builtin needs from the evaluator."""

    def value(self, node: ast.expr) -> object: ...


def _numbers(source: ValueSource, call: ast.Call) -> list[object]:
    values = [source.value(a) for a in call.args]
    if len(values) == 1 and isinstance(values[0], tuple):
        return list(values[0])
    return values


def _min_max(pick: Callable[[list[Any]], object]) -> Callable[[ValueSource, ast.Call], object]:
    def builtin(source: ValueSource, call: ast.Call) -> object:
        values = _numbers(source, call)
        unknown = next((v for v in values if isinstance(v, Unknown)), None)
        if unknown is not None:
            return unknown
        if call.keywords or not values or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            return Unknown(why="min/max of something other than numbers")
        return pick(values)

    return builtin


def _len(source: ValueSource, call: ast.Call) -> object:
    value = source.value(call.args[0]) if len(call.args) == 1 else Unknown(why="len() with other than one argument")
    return len(value) if isinstance(value, tuple | str) else plain(value) if isinstance(value, Unknown) else Unknown(why="len()")


def _truth(source: ValueSource, call: ast.Call) -> object:
    value = source.value(call.args[0]) if len(call.args) == 1 and not call.keywords else Unknown(why="bool() form")
    return value if isinstance(value, Unknown) else bool(value)


def _int(source: ValueSource, call: ast.Call) -> object:
    if len(call.args) != 1 or call.keywords:
        return Unknown(why="int() form")
    value = source.value(call.args[0])
    if isinstance(value, Unknown):
        return plain(value)
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit() and len(value) < 20:
        return int(value)
    return Unknown(why=f"int({text_of_value(value)})")


def text_of_value(value: object) -> str:
    return repr(value)[:40]


def _getattr(source: ValueSource, call: ast.Call) -> object:
    """`getattr(torch.version, "cuda", None)`: the attribute itself, when the object is a dotted name."""
    if len(call.args) in (2, 3) and not call.keywords and dotted(call.args[0]) is not None:
        name = call.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier():
            attribute = ast.copy_location(ast.Attribute(value=call.args[0], attr=name.value, ctx=ast.Load()), call)
            return source.value(attribute)
    return Unknown(why="getattr() of a value the audit does not model")


def _hasattr(source: ValueSource, call: ast.Call) -> object:
    """`hasattr(torch.version, "git_version")`: true where the attribute is known to be there, else unknown."""
    if len(call.args) == 2 and not call.keywords and dotted(call.args[0]) is not None:
        name = call.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier():
            attribute = ast.copy_location(ast.Attribute(value=call.args[0], attr=name.value, ctx=ast.Load()), call)
            found = source.value(attribute)
            if isinstance(found, SomeText) or not isinstance(found, Unknown):
                return True
            return plain(found)
    return Unknown(why="hasattr() of a value the audit does not model")


# Device types `torch.device` accepts (torch/csrc/Device.cpp, c10/core/DeviceType.cpp: the lower-case names); a
# string outside them makes torch raise, so it stays unknown.
_DEVICE_TYPES = frozenset({"cpu", "cuda", "xpu", "mps", "meta", "hip", "mtia", "xla", "hpu", "ipu", "privateuseone"})


def torch_device(source: ValueSource, call: ast.Call) -> object:
    """`torch.device("cuda")`, `torch.device("cuda:1")`, `torch.device("cuda", 0)`, `torch.device(type="cuda")`: a
    record of its `type` and `index` (None when not given); what it names need not exist on the runner, as with torch."""
    given = dict(zip(("type", "index"), call.args, strict=False))
    for kw in call.keywords:
        if kw.arg not in ("type", "index", "device") or kw.arg in given:
            return Unknown(why="torch.device() form")
        given["type" if kw.arg == "device" else kw.arg] = kw.value
    if len(call.args) > 2 or "type" not in given:
        return Unknown(why="torch.device() form")
    text = source.value(given["type"])
    index = source.value(given["index"]) if "index" in given else None
    if isinstance(text, Unknown):
        return plain(text)
    if not isinstance(text, str) or not (index is None or (isinstance(index, int) and not isinstance(index, bool))):
        return Unknown(why="torch.device() of a value the audit does not model")
    kind, colon, number = text.partition(":")
    if colon:
        if index is not None or not number.isdigit() or len(number) > 6:
            return Unknown(why=f"torch.device({text[:40]!r})")
        index = int(number)
    if kind not in _DEVICE_TYPES:
        return Unknown(why=f"torch.device({text[:40]!r})")
    return Record(kind="torch.device", fields=(("type", kind), ("index", index)))


# Calls whose value exists only when the test runs, by resolved name, with what they read: no reading of the
# repository's files can give it, so a guard on one stays unknown and says why.
RUN_TIME_CALLS: Mapping[str, str] = {
    **dict.fromkeys(
        ("subprocess.run", "subprocess.check_output", "subprocess.check_call", "subprocess.call", "subprocess.Popen"),
        "runs a program",
    ),
    **dict.fromkeys(("os.system", "os.popen"), "runs a program"),
    **dict.fromkeys(("torch.cuda.mem_get_info", "torch.cuda.memory_allocated", "torch.cuda.memory_reserved"), "reads GPU memory"),
    **dict.fromkeys(
        ("torch.rand", "torch.randn", "torch.randint", "torch.randperm", "random.random", "random.randint", "random.choice"),
        "draws a random value",
    ),
    **dict.fromkeys(("torch.distributed.get_world_size", "torch.distributed.get_rank"), "reads the process group of the launch"),
    **dict.fromkeys(("glob.glob", "os.listdir", "os.path.exists", "os.path.isfile", "os.path.isdir"), "reads the file system"),
}


def run_time_value(resolved: str) -> Unknown | None:
    """The unknown a run-time call gives (`torch.cuda.mem_get_info()`: "reads GPU memory"), None for any other call."""
    what = RUN_TIME_CALLS.get(resolved)
    return None if what is None else Unknown(why=f"{resolved}() {what}: its value is known only at run time")


# torch's dtypes and their aliases, as `torch.dtype` objects compare (an alias is the same object): the PyTorch docs,
# "Tensor Attributes", torch.dtype table (https://docs.pytorch.org/docs/stable/tensor_attributes.html), with the
# size in bytes (`dtype.itemsize`). A guard comparing dtypes needs nothing of the runner.
_DTYPES: Mapping[str, tuple[str, int]] = {
    **dict.fromkeys(("float32", "float"), ("float32", 4)),
    **dict.fromkeys(("float64", "double"), ("float64", 8)),
    **dict.fromkeys(("float16", "half"), ("float16", 2)),
    "bfloat16": ("bfloat16", 2),
    **dict.fromkeys(("complex32", "chalf"), ("complex32", 4)),
    **dict.fromkeys(("complex64", "cfloat"), ("complex64", 8)),
    **dict.fromkeys(("complex128", "cdouble"), ("complex128", 16)),
    "uint8": ("uint8", 1),
    "uint16": ("uint16", 2),
    "uint32": ("uint32", 4),
    "uint64": ("uint64", 8),
    "int8": ("int8", 1),
    **dict.fromkeys(("int16", "short"), ("int16", 2)),
    **dict.fromkeys(("int32", "int"), ("int32", 4)),
    **dict.fromkeys(("int64", "long"), ("int64", 8)),
    "bool": ("bool", 1),
    "float8_e4m3fn": ("float8_e4m3fn", 1),
    "float8_e4m3fnuz": ("float8_e4m3fnuz", 1),
    "float8_e5m2": ("float8_e5m2", 1),
    "float8_e5m2fnuz": ("float8_e5m2fnuz", 1),
    "float8_e8m0fnu": ("float8_e8m0fnu", 1),
    "float4_e2m1fn_x2": ("float4_e2m1fn_x2", 1),
}
CONSTANTS: Mapping[str, object] = {
    f"torch.{name}": Record(kind="torch.dtype", fields=(("name", canonical), ("itemsize", size)))
    for name, (canonical, size) in _DTYPES.items()
}


def skipif_record(source: ValueSource, call: ast.Call) -> object:
    """`pytest.mark.skipif(cond, reason=...)` as a value a helper returns: a record of its condition's value (a mark
    the audit reads through the helper that makes it, `matrix.pytest_suites.skipmarks.factory_mark_guard`)."""
    if len(call.args) != 1:
        return Unknown(why="pytest.mark.skipif() form")
    condition = source.value(call.args[0])
    if isinstance(condition, str):
        return Unknown(why="a skipif condition string")
    return Record(kind="pytest.mark.skipif", fields=(("condition", plain(condition)),))


# Calls of a library whose value is computed from their arguments alone, by resolved name.
VALUE_CALLS: Mapping[str, Callable[[ValueSource, ast.Call], object]] = {
    "torch.device": torch_device,
    "pytest.mark.skipif": skipif_record,
}


# Builtins a guard uses on known values (`min(4, torch.cuda.device_count())`), unless the module rebinds them.
BUILTINS: Mapping[str, Callable[[ValueSource, ast.Call], object]] = {
    "min": _min_max(min),
    "max": _min_max(max),
    "len": _len,
    "bool": _truth,
    "int": _int,
    "getattr": _getattr,
    "hasattr": _hasattr,
}

# String methods a guard calls on a known value (`int(torch.version.cuda.split(".")[0])`).
STR_METHODS: Mapping[str, Callable[..., object]] = {
    "split": lambda s, *a: tuple(s.split(*a)),
    "startswith": lambda s, *a: s.startswith(*a),
    "endswith": lambda s, *a: s.endswith(*a),
    "lower": str.lower,
    "upper": str.upper,
    "strip": lambda s, *a: s.strip(*a),
}


def lookup(table: Mapping[str, Predicate], resolved: str) -> Predicate | None:
    """The predicate a resolved dotted name refers to, if it is a known one."""
    if resolved in table:
        return table[resolved]
    return table.get(resolved.rpartition(".")[2]) if "." in resolved else None


# --- the evaluation budget --------------------------------------------------------------------------------------------
# Bounds on guard evaluation: nesting depth, steps, helper-call depth and integer size.
#
# Audited files are untrusted: a 500-term sum, 500 stacked `not`s, a 4,000-digit literal squared or
# `A1 = A*A` ... `A26` must each end quickly as "unknown, past the budget", never as a RecursionError,
# a ValueError from int-to-str conversion, or minutes of big-integer arithmetic.


class OverBudget(Exception):
    """Raised inside the evaluator when a budget runs out; caught once per condition."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class Budget:
    """Counters for one condition's evaluation."""

    MAX_DEPTH = 48  # nested expression levels (about three Python frames each)
    MAX_STEPS = 20_000  # expression nodes and statements visited
    MAX_CALLS = 6  # helper functions stepped into, one inside the other
    INT_BITS = 256  # larger integers are unknown; no guard needs them

    def __init__(self) -> None:
        self.depth = 0
        self.steps = 0
        self.calls = 0

    def enter(self) -> None:
        self.depth += 1
        self.steps += 1
        if self.depth > self.MAX_DEPTH:
            raise OverBudget(f"the expression is nested deeper than {self.MAX_DEPTH} levels")
        if self.steps > self.MAX_STEPS:
            raise OverBudget(f"more than {self.MAX_STEPS} evaluation steps")

    def leave(self) -> None:
        self.depth -= 1

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.MAX_STEPS:
            raise OverBudget(f"more than {self.MAX_STEPS} evaluation steps")


def bounded_int(value: int, what: str) -> object:
    """`value`, or unknown when it is past the integer budget."""
    if value.bit_length() > Budget.INT_BITS:
        return Unknown(why=f"{what} beyond {Budget.INT_BITS} bits")
    return value


_MAX_TEXT = 160


def text_of(value: object) -> str:
    """Short source text of a node, or repr of a value, safe on deep trees and huge values."""
    if isinstance(value, ast.AST):
        return _node_text(value)
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return "<too large to show>"
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


@functools.lru_cache(maxsize=8192)
def _node_text(node: ast.AST) -> str:
    # Nodes hash by identity and the cache keeps them alive, so a key is never reused; every runner's
    # evaluation of the same guard shares the text.
    if isinstance(node, ast.FunctionDef):
        return f"<function {node.name}>"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__try_value__" and len(node.args) == 2:
        # `try: X = e` / `except: X = h` (`matrix.guards.source.TRY_VALUE`), shown as the user wrote it
        return f"{_node_text(node.args[0])} in a try, else {_node_text(node.args[1])}"
    called = _bare_call(node)
    if called is not None:
        return called if len(called) <= _MAX_TEXT else called[: _MAX_TEXT - 3] + "..."
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        return "<too large to show>"
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _bare_call(node: ast.AST) -> str | None:
    """`a.b.c()` for a call of a dotted name with no arguments, the node most guards note, as `ast.unparse`
    writes it (a dotted name and empty parentheses); None for any other node."""
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return None
    name = dotted(node.func)
    return None if name is None else name + "()"
