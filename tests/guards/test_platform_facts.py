"""What a runner's labels and a job's environment answer for platform guards (`matrix.guards.platform`), and the
comparisons a partly known value decides; evaluated on hand-made facts."""

from __future__ import annotations

import pytest

from matrix.core.profile import RunnerProfile
from matrix.guards.evaluate import evaluate_text
from matrix.guards.evaluation import Tri
from matrix.guards.predicates import RunnerFacts
from matrix.pytest_suites.packs import builtin_packs
from matrix.schedule.environment.model import Installed, JobEnvironment
from matrix.schedule.labels import platform_of
from matrix.schedule.model import RunnerPlatform

CPU = RunnerProfile(name="cpu", gpus=0, capability=None)
WHEEL = "pip install torch --index-url https://download.pytorch.org/whl/cu126"


def _facts(platform: RunnerPlatform | None, python: str = "", torch: str = WHEEL) -> RunnerFacts:
    installed = (Installed(distribution="torch", command=torch),) if torch else ()
    return RunnerFacts(profile=CPU, platform=platform, environment=JobEnvironment(python=python, installed=installed))


LINUX = RunnerPlatform(os="linux", machine="x86_64")


@pytest.mark.parametrize(
    ("condition", "facts", "expected"),
    [
        ("sys.platform == 'linux'", _facts(LINUX), Tri.TRUE),
        ("os.name == 'nt'", _facts(LINUX), Tri.FALSE),
        ("platform.machine() == 'aarch64'", _facts(LINUX), Tri.FALSE),
        ("platform.machine() == 'x86_64'", _facts(RunnerPlatform(os="linux")), Tri.UNKNOWN),
        ("platform.processor() != 'aarch64'", _facts(LINUX), Tri.TRUE),
        ("platform.processor() == 'x86_64'", _facts(LINUX), Tri.UNKNOWN),  # `uname -p` may say "unknown"
        ("sys.platform == 'linux'", _facts(None), Tri.UNKNOWN),
        # Python 3.10.x: a known item settles the order, as Python compares tuples
        ("sys.version_info >= (3, 11)", _facts(LINUX, "3.10"), Tri.FALSE),
        ("sys.version_info > (3, 10)", _facts(LINUX, "3.10"), Tri.TRUE),  # (3, 10, micro, ...) is longer
        ("sys.version_info >= (3, 10, 5)", _facts(LINUX, "3.10"), Tri.UNKNOWN),
        ("sys.version_info >= (3, 10, 5)", _facts(LINUX, "3.10.7"), Tri.TRUE),
        ("sys.version_info.minor < 11", _facts(LINUX, "3.10"), Tri.TRUE),
        ("sys.version_info >= (3, 11)", _facts(LINUX), Tri.UNKNOWN),
        ("'qnnpack' in torch.backends.quantized.supported_engines", _facts(LINUX), Tri.TRUE),
        ("'fbgemm' in torch.backends.quantized.supported_engines", _facts(LINUX), Tri.UNKNOWN),
        (
            "'fbgemm' in torch.backends.quantized.supported_engines",
            _facts(RunnerPlatform(os="linux", machine="x86_64", avx2=True)),
            Tri.TRUE,
        ),
        (
            "'qnnpack' in torch.backends.quantized.supported_engines",
            _facts(RunnerPlatform(os="linux", machine="aarch64")),
            Tri.UNKNOWN,
        ),
        ("torch._dynamo.is_dynamo_supported()", _facts(LINUX, "3.11"), Tri.TRUE),
        ("torch._dynamo.is_dynamo_supported()", _facts(LINUX, "3.14"), Tri.UNKNOWN),
        ("torch._dynamo.is_dynamo_supported()", _facts(RunnerPlatform(os="win32"), "3.10"), Tri.UNKNOWN),
        ("hasattr(torch.version, 'git_version')", _facts(LINUX), Tri.TRUE),
        ("hasattr(torch.version, 'git_version')", _facts(LINUX, torch=""), Tri.UNKNOWN),
        ("torch.xpu.is_available()", _facts(LINUX), Tri.FALSE),
        ("torch.backends.mps.is_available()", _facts(RunnerPlatform(os="linux")), Tri.FALSE),
        ("torch.distributed.is_available()", _facts(LINUX, torch="conda install pytorch"), Tri.UNKNOWN),
    ],
)
def test_platform_facts(condition: str, facts: RunnerFacts, expected: Tri) -> None:
    assert evaluate_text(condition, facts, table=builtin_packs().table).skips is expected


@pytest.mark.parametrize(
    ("labels", "os", "machine", "avx2"),
    [
        (("linux.4xlarge",), "linux", "x86_64", True),
        (("linux.arm64.2xlarge",), "linux", "aarch64", False),
        (("ubuntu-24.04-arm",), "linux", "aarch64", False),
        (("ubuntu-latest",), "linux", "x86_64", False),
        (("ubuntu-22.04",), "linux", "x86_64", False),
        (("ubuntu-24.04-arm",), "linux", "aarch64", False),
        (("ubuntu-slim",), "linux", "", False),
        (("windows-2022",), "win32", "", False),
        (("macos-14",), "darwin", "", False),
        (("self-hosted", "Linux", "X64", "gpu"), "linux", "x86_64", False),
        (("self-hosted", "linux", "macOS"), "", "", False),  # two labels disagree: not known
        (("8-gpu-h100",), "", "", False),
    ],
)
def test_platform_of_labels(labels: tuple[str, ...], os: str, machine: str, avx2: bool) -> None:
    found = platform_of(labels)
    assert (found.os, found.machine, found.avx2) == (os, machine, avx2)
