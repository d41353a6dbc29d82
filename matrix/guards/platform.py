"""Guards on the runner's OS and CPU, the job's Python and its torch build, answered from labels and installs; pure.

The operating system and CPU are what the runner's labels say (`RunnerPlatform`); the Python version and the torch
build are the job's environment's (`JobEnvironment`).

Each answer is known only where those facts decide it; otherwise it is unknown with the fact that is missing:
- `sys.platform`, `os.name`, `platform.system()`, `platform.machine()` and torch's `IS_LINUX` / `IS_WINDOWS` /
  `IS_MACOS` / `IS_ARM64` (PyTorch 2.13.0, `torch/testing/_internal/common_utils.py`: `IS_WINDOWS = sys.platform ==
  "win32"`, `IS_ARM64 = platform.machine() in ('arm64', 'aarch64', 'ARM64')`) from the runner's labels;
- `platform.processor()` (`uname -p` on Linux) is not an Arm name on an x86-64 host;
- `sys.version_info` from the Python version the job's interpreter is made with (its minor version, or more);
- torch's `torch._dynamo.is_dynamo_supported()` / `is_inductor_supported()` (what `skipIfNoDynamoSupport` and
  `skipIfNoInductorSupport` of `torch/testing/_internal/common_quantization.py` ask): PyTorch 2.13.0
  `torch/_dynamo/eval_frame.py` `check_if_dynamo_supported` raises only on Python >= 3.15 and on a free-threaded
  Python below 3.13.3, and `check_if_inductor_supported` only calls it; earlier 2.x releases also refused Windows
  and Python >= 3.12 (2.0, 2.1), >= 3.13, >= 3.14: on Linux with CPython 3.8 to 3.11 every 2.x release says true;
- `torch.backends.quantized.supported_engines` (PyTorch `aten/src/ATen/Context.cpp` `supportedQEngines`: `qnnpack`
  when built with `USE_PYTORCH_QNNPACK`, `onednn` with MKLDNN, `x86` and `fbgemm` only when FBGEMM finds AVX2 at run
  time): the Linux x86-64 CPU and CUDA wheels of PyPI and download.pytorch.org are built with both (2.13.0+cpu and
  cu130 list `['qnnpack', 'onednn', 'x86', 'fbgemm']`), so on such a runner with such a wheel `qnnpack` and `onednn`
  are there, and `x86` and `fbgemm` too where the runner's labels say its CPU has AVX2;
- `torch.ops.mkldnn._is_mkldnn_bf16_supported()` (what `skipIfNoONEDNNBF16` asks) true on those wheels where the
  runner's CPU has AVX-512 (oneDNN's `avx512_core`, ideep's `has_bf16_type_support`);
- `torch.xpu.is_available()` (false: not built for XPU), `torch.distributed.is_available()` (true) on those same
  wheels; `torch.backends.mps.is_available()` false off macOS (MPS is built for macOS only); common_utils' `TEST_CUDA`,
  `TEST_XPU`, `TEST_MPS` are those calls;
- `torch.version.git_version`: written into `torch/version.py` by every build of torch's `setup.py`
  (`tools/generate_torch_version.py`), so a torch the job installs with pip, uv or conda has it (torchao's
  `is_fbcode()` is `not hasattr(torch.version, "git_version")`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from matrix.guards.predicates import KnownMembers, NotAnyOf, PartialTuple, Predicate, Record, RunnerFacts, SomeText, Unknown

if TYPE_CHECKING:
    from matrix.schedule.environment.model import Installed

_SYSTEM = {"linux": "Linux", "win32": "Windows", "darwin": "Darwin"}
_OS_NAME = {"linux": "posix", "darwin": "posix", "win32": "nt"}
# The wheels whose build flags were read: PyPI's torch and download.pytorch.org's CPU and CUDA indexes.
_OFFICIAL_INDEX = re.compile(r"^https://download\.pytorch\.org/whl/(?:nightly/|test/)?(?:cpu|cu[0-9]+)/?$")
_INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--index", "--default-index", "-f", "--find-links")


def _os(facts: RunnerFacts) -> str | Unknown:
    platform = facts.platform
    if platform is None or not platform.os:
        return Unknown(why=f"the operating system of {facts.profile.name} (its labels do not say)")
    return platform.os


def _sys_platform(facts: RunnerFacts) -> object:
    return _os(facts)


def _os_name(facts: RunnerFacts) -> object:
    found = _os(facts)
    return found if isinstance(found, Unknown) else _OS_NAME[found] if found in _OS_NAME else Unknown(why=f"os.name on {found}")


def _system(facts: RunnerFacts) -> object:
    found = _os(facts)
    return found if isinstance(found, Unknown) else _SYSTEM.get(found, Unknown(why=f"platform.system() on {found}"))


def _machine(facts: RunnerFacts) -> object:
    found = _os(facts)
    if isinstance(found, Unknown):
        return found
    machine = facts.platform.machine if facts.platform is not None else ""
    if found != "linux" or not machine:
        return Unknown(why=f"the CPU of {facts.profile.name} (its labels do not say)")
    return machine  # Linux spells it as the kernel does: x86_64, aarch64


def _processor(facts: RunnerFacts) -> object:
    # platform.processor() is `uname -p` on Linux (CPython Lib/platform.py, _Processor.from_subprocess): x86_64,
    # "unknown" or a CPU model name on an x86-64 host, never an Arm name; otherwise not known
    machine = _machine(facts)
    if machine == "x86_64":
        return NotAnyOf(why="platform.processor() on an x86-64 host (uname -p)", values=frozenset({"aarch64", "arm64", "arm"}))
    return machine if isinstance(machine, Unknown) else Unknown(why=f"platform.processor() on {machine}")


def _is_os(wanted: str) -> Predicate:
    def predicate(facts: RunnerFacts) -> object:
        found = _os(facts)
        return found if isinstance(found, Unknown) else found == wanted

    return predicate


def _is_arm64(facts: RunnerFacts) -> object:
    machine = _machine(facts)
    return machine if isinstance(machine, Unknown) else machine in ("arm64", "aarch64", "ARM64")


def python_of(facts: RunnerFacts) -> tuple[int, ...] | Unknown:
    """The job's Python version as numbers (`(3, 10)`: some 3.10.x), or unknown."""
    environment = facts.environment
    text = environment.python if environment is not None else ""
    if not text:
        return Unknown(why=f"the Python version of the job on {facts.profile.name} (its steps do not say)")
    return tuple(int(part) for part in text.split("."))


def _version_info(facts: RunnerFacts) -> object:
    found = python_of(facts)
    if isinstance(found, Unknown):
        return found
    rest = Unknown(why=f"the job's Python is {'.'.join(map(str, found))}: the rest of its version is not known")
    items: tuple[object, ...] = (*found, *(rest for _ in range(5 - len(found))))
    return PartialTuple(why=rest.why, items=items)


def _version_part(index: int) -> Predicate:
    def predicate(facts: RunnerFacts) -> object:
        found = python_of(facts)
        if isinstance(found, Unknown) or index < len(found):
            return found if isinstance(found, Unknown) else found[index]
        return Unknown(why=f"the job's Python is {'.'.join(map(str, found))}: its micro version is not known")

    return predicate


def _dynamo_supported(facts: RunnerFacts) -> object:
    found = _os(facts)
    python = python_of(facts)
    if isinstance(found, Unknown) or isinstance(python, Unknown):
        return found if isinstance(found, Unknown) else python
    if found == "linux" and (3, 8) <= python[:2] <= (3, 11):
        return True
    return Unknown(why=f"whether torch.compile supports Python {'.'.join(map(str, python))} on {found} (by torch's version)")


def torch_install(facts: RunnerFacts) -> Installed | Unknown:
    """How the job installs torch: its record, or unknown when it is not known to install it."""
    environment = facts.environment
    found = environment.get("torch") if environment is not None else None
    if found is None:
        return Unknown(why=f"which torch the job on {facts.profile.name} has (it is not known to install one)")
    return found


def _official_build(facts: RunnerFacts) -> str:
    """ "" when the job's torch is a CPU or CUDA wheel of PyPI or download.pytorch.org on a Linux x86-64 runner; else
    why that is not known."""
    platform = facts.platform
    if platform is None or platform.os != "linux" or platform.machine != "x86_64":
        return f"the platform of {facts.profile.name} is not known to be Linux x86-64"
    hardware = facts.hardware
    if hardware is not None and hardware.kind not in ("cuda", "cpu"):
        return f"{facts.profile.name} is a {hardware.kind} host, whose torch build is not read"
    found = torch_install(facts)
    if isinstance(found, Unknown):
        return found.why
    words = found.command.split()
    if not words or words[0] not in ("pip", "pip3", "uv", "python", "python3") or "conda" in words:
        return f"torch comes from `{found.command[:60]}`, whose build is not read"
    for i, word in enumerate(words):
        option, eq, value = word.partition("=")
        if option in _INDEX_OPTIONS:
            value = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            if not _OFFICIAL_INDEX.match(value):
                return f"torch comes from the index {value[:60]}, whose build is not read"
    return ""


def _supported_engines(facts: RunnerFacts) -> object:
    problem = _official_build(facts)
    if problem:
        return Unknown(why=f"torch's quantized engines: {problem}")
    if facts.platform is not None and facts.platform.avx2:
        # FBGEMM finds AVX2: all four engines (the wheel's `supported_engines` on such a CPU)
        return ("qnnpack", "onednn", "x86", "fbgemm")
    return KnownMembers(
        why="torch's quantized engines: x86 and fbgemm are listed only where the CPU has AVX2 (not known)",
        members=frozenset({"qnnpack", "onednn"}),
    )


def _git_version(facts: RunnerFacts) -> object:
    found = torch_install(facts)
    if isinstance(found, Unknown):
        return found
    return SomeText(why=f"the commit torch was built from (it is installed by `{found.command[:60]}`)")


def _official(answer: bool, what: str) -> Predicate:
    """`answer` where the job's torch is an official Linux x86-64 CPU or CUDA wheel, else unknown."""

    def predicate(facts: RunnerFacts) -> object:
        problem = _official_build(facts)
        return Unknown(why=f"{what}: {problem}") if problem else answer

    return predicate


def _mps(facts: RunnerFacts) -> object:
    # torch.backends.mps.is_available() is torch._C._mps_is_available(): MPS is built for macOS only
    found = _os(facts)
    return found if isinstance(found, Unknown) else False if found in ("linux", "win32") else Unknown(why="MPS on macOS")


def _cuda_available(facts: RunnerFacts) -> object:
    # common_utils' TEST_CUDA = torch.cuda.is_available(): a GPU of the CUDA API (NVIDIA, or AMD through ROCm)
    hardware = facts.hardware
    return hardware.kind in ("cuda", "rocm") if hardware is not None else facts.profile.gpus > 0


def _mkldnn_bf16(facts: RunnerFacts) -> object:
    # torch.ops.mkldnn._is_mkldnn_bf16_supported() is mkldnn_bf16_device_check() (PyTorch aten/src/ATen/native/mkldnn/
    # Utils.h: on x86-64, ideep::has_bf16_type_support()), which ideep answers true when oneDNN's effective ISA is at
    # least avx512_core (ideep include/ideep/abstract_types.hpp); false elsewhere is not read (newer ideep also
    # accepts avx2_vnni_2), so only true is said
    problem = _official_build(facts)
    if problem:
        return Unknown(why=f"torch's oneDNN bf16 support: {problem}")
    if facts.platform is not None and facts.platform.avx512:
        return True
    return Unknown(why=f"torch's oneDNN bf16 support on {facts.profile.name}: its labels do not say the CPU has AVX-512")


_COMMON_UTILS = "torch.testing._internal.common_utils"
# torch.xpu.is_available() is `device_count() > 0`, 0 where torch is not built for XPU; torch.distributed is built
# into the Linux wheels (`torch.distributed.is_available()`: `hasattr(torch._C, "_c10d_init")`).
_XPU = _official(False, "torch.xpu.is_available()")
_DISTRIBUTED = _official(True, "torch.distributed.is_available()")


def _socket_attribute(name: str, systems: frozenset[str]) -> Predicate:
    """`socket.AF_UNIX`, `socket.CMSG_SPACE`: there on the systems the Python docs name for it (the socket module's
    "Availability" notes: AF_UNIX "Unix", CMSG_SPACE "Unix, most Unix platforms", read as Linux), unknown elsewhere."""

    def attribute(facts: RunnerFacts) -> object:
        found = _os(facts)
        if isinstance(found, Unknown):
            return found
        if found in systems:
            return Record(kind=f"socket.{name}", fields=())
        return Unknown(why=f"whether socket.{name} exists on {found}")

    return attribute


# Attributes read without a call, by the dotted name an import resolves them to.
PLATFORM_ATTRIBUTES: Mapping[str, Predicate] = {
    "socket.AF_UNIX": _socket_attribute("AF_UNIX", frozenset({"linux", "darwin"})),
    "socket.CMSG_SPACE": _socket_attribute("CMSG_SPACE", frozenset({"linux"})),
    "sys.platform": _sys_platform,
    "os.name": _os_name,
    "sys.version_info": _version_info,
    "sys.version_info.major": _version_part(0),
    "sys.version_info.minor": _version_part(1),
    f"{_COMMON_UTILS}.IS_LINUX": _is_os("linux"),
    f"{_COMMON_UTILS}.IS_WINDOWS": _is_os("win32"),
    f"{_COMMON_UTILS}.IS_MACOS": _is_os("darwin"),
    f"{_COMMON_UTILS}.IS_ARM64": _is_arm64,
    "torch.backends.quantized.supported_engines": _supported_engines,
    "torch.version.git_version": _git_version,
    f"{_COMMON_UTILS}.TEST_CUDA": _cuda_available,
    f"{_COMMON_UTILS}.TEST_XPU": _XPU,
    f"{_COMMON_UTILS}.TEST_MPS": _mps,
}

# Calls, by their resolved dotted name (never by the last part alone: `system()` means nothing on its own).
PLATFORM_PREDICATES: Mapping[str, Predicate] = {
    "platform.system": _system,
    "platform.machine": _machine,
    "platform.processor": _processor,
    "torch._dynamo.is_dynamo_supported": _dynamo_supported,
    "torch._dynamo.is_inductor_supported": _dynamo_supported,
    "torch._dynamo.eval_frame.is_dynamo_supported": _dynamo_supported,
    "torch._dynamo.eval_frame.is_inductor_supported": _dynamo_supported,
    "torch.xpu.is_available": _XPU,
    "torch.ops.mkldnn._is_mkldnn_bf16_supported": _mkldnn_bf16,
    "torch.backends.mps.is_available": _mps,
    "torch.distributed.is_available": _DISTRIBUTED,
}
