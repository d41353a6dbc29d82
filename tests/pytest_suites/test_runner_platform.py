"""Guards on the runner's operating system and CPU, the job's Python and the torch build it installs, judged from
the runner's labels and the job's own steps (`matrix.guards.platform`); each case a small checkout with one
workflow, written for these tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport

Audit = Callable[..., PytestAuditReport]


def _workflow(runs_on: str, *lines: str, python: str | None = None) -> str:
    steps = ["      - uses: actions/checkout@v4"]
    if python is not None:
        steps += ["      - uses: actions/setup-python@v5", "        with:", f"          python-version: {python!r}"]
    steps += [f"      - run: {line}" for line in lines]
    return f"on: [push]\njobs:\n  unit:\n    runs-on: {runs_on}\n    steps:\n" + "\n".join(steps) + "\n"


def _verdict(report: PytestAuditReport) -> str:
    if report.of_kind(GuardFindingKind.SILENT_SKIP):
        return "skips"
    return "undetermined" if report.undetermined else "runs"


def _audit(audit: Audit, workflow: str, test: str, **extra: str) -> str:
    return _verdict(audit({".github/workflows/unit.yml": workflow, "suite/test_things.py": test, **extra}))


CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"

OS_GUARD = "import sys\nimport pytest\n\n@pytest.mark.skipif(sys.platform {op} 'win32', reason='os')\ndef test_a():\n    pass\n"
TORCH_FLAG = (
    "import unittest\nfrom torch.testing._internal.common_utils import {flag}\n\n"
    "class Sums(unittest.TestCase):\n    @unittest.skipIf({flag}, 'os')\n    def test_a(self):\n        pass\n"
)
SYSTEM = (
    "import platform\nimport pytest\n\n@pytest.mark.skipif(platform.system() != 'Linux', reason='os')\ndef test_a():\n    pass\n"
)


@pytest.mark.parametrize(
    ("runs_on", "test", "expected"),
    [
        pytest.param("ubuntu-latest", OS_GUARD.format(op="=="), "runs", id="hosted-ubuntu-is-linux"),
        pytest.param("ubuntu-latest", OS_GUARD.format(op="!="), "skips", id="not-windows-skips-on-linux"),
        pytest.param("linux.4xlarge", TORCH_FLAG.format(flag="IS_WINDOWS"), "runs", id="torch-is-windows"),
        pytest.param("linux.4xlarge", TORCH_FLAG.format(flag="IS_MACOS"), "runs", id="torch-is-macos"),
        pytest.param("[self-hosted, linux, x64, h100]", SYSTEM, "runs", id="default-labels-say-linux"),
        pytest.param("[self-hosted, x64, h100]", SYSTEM, "undetermined", id="no-os-label"),
    ],
)
def test_the_operating_system_is_what_the_runner_labels_say(audit: Audit, runs_on: str, test: str, expected: str) -> None:
    assert _audit(audit, _workflow(runs_on, "pytest suite"), test) == expected


VERSION_GUARD = (
    "import sys\nimport pytest\n\n@pytest.mark.skipif(sys.version_info < (3, 11), reason='new syntax')\ndef test_a():\n    pass\n"
)


@pytest.mark.parametrize(
    ("python", "expected"),
    [("3.10", "skips"), ("3.12", "runs"), ("3.11.4", "runs"), ("3.x", "undetermined")],
)
def test_the_python_version_comes_from_setup_python(audit: Audit, python: str, expected: str) -> None:
    assert _audit(audit, _workflow("ubuntu-latest", "pytest suite", python=python), VERSION_GUARD) == expected


def test_the_python_version_comes_from_a_matrix_value(audit: Audit) -> None:
    workflow = (
        "on: [push]\njobs:\n  unit:\n    strategy:\n      matrix:\n        py: ['3.9', '3.10']\n"
        "    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
        "      - uses: actions/setup-python@v5\n        with:\n          python-version: ${{ matrix.py }}\n"
        "      - run: pytest suite\n"
    )
    assert _audit(audit, workflow, VERSION_GUARD) == "skips"  # both legs are below 3.11


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(("conda create -n box python=3.12 -y", "conda activate box", "pytest suite"), "runs", id="activated"),
        # made but not entered: the tests run in whatever interpreter was there
        pytest.param(("conda create -n box python=3.12 -y", "pytest suite"), "undetermined", id="not-activated"),
        pytest.param(("conda create -n box python=3.12 -y", "conda activate other", "pytest suite"), "undetermined", id="other"),
    ],
)
def test_a_conda_environment_the_job_makes_and_enters_has_its_python(audit: Audit, lines: tuple[str, ...], expected: str) -> None:
    assert _audit(audit, _workflow("linux.4xlarge", *lines), VERSION_GUARD) == expected


QUANT = (
    "import unittest\nfrom torch.testing._internal.common_quantization import {deco}\n\n"
    "class Quant(unittest.TestCase):\n    @{deco}\n    def test_a(self):\n        pass\n"
)
QUANT_CLASS = (
    "import unittest\nfrom torch.testing._internal.common_quantization import {deco}\n\n"
    "@{deco}\nclass Quant(unittest.TestCase):\n    def test_a(self):\n        pass\n"
)


@pytest.mark.parametrize(
    ("runs_on", "install", "test", "expected"),
    [
        pytest.param("linux.4xlarge", CPU_TORCH, QUANT.format(deco="skipIfNoQNNPACK"), "runs", id="qnnpack-x86-linux"),
        pytest.param("linux.4xlarge", CPU_TORCH, QUANT_CLASS.format(deco="skipIfNoQNNPACK"), "runs", id="qnnpack-on-class"),
        pytest.param("linux.4xlarge", CPU_TORCH, QUANT.format(deco="skipIfNoX86"), "runs", id="x86-engine-with-avx2"),
        # GitHub's ubuntu-latest is an x86-64 host: the build flags read are those of x86-64 wheels
        pytest.param("ubuntu-latest", CPU_TORCH, QUANT.format(deco="skipIfNoQNNPACK"), "runs", id="hosted-ubuntu-is-x86"),
        # a self-hosted Linux label that does not say its CPU
        pytest.param(
            "[self-hosted, linux, x64-or-arm]", CPU_TORCH, QUANT.format(deco="skipIfNoQNNPACK"), "undetermined", id="cpu-not-said"
        ),
        # a wheel from another index: its build is not read
        pytest.param(
            "linux.4xlarge",
            "pip install torch --index-url https://mirror.example/simple",
            QUANT.format(deco="skipIfNoQNNPACK"),
            "undetermined",
            id="other-index",
        ),
        pytest.param("linux.4xlarge", "true", QUANT.format(deco="skipIfNoQNNPACK"), "undetermined", id="torch-not-installed"),
        pytest.param("linux.4xlarge", CPU_TORCH, QUANT.format(deco="skipIfNoONEDNNBF16"), "runs", id="bf16-avx512"),
    ],
)
def test_torch_quantization_decorators_read_the_runner_and_the_wheel(
    audit: Audit, runs_on: str, install: str, test: str, expected: str
) -> None:
    assert _audit(audit, _workflow(runs_on, install, "pytest suite"), test) == expected


@pytest.mark.parametrize(
    ("python", "expected"),
    [("3.10", "runs"), ("3.13", "undetermined")],
)
def test_dynamo_support_is_decided_where_every_torch_release_agrees(audit: Audit, python: str, expected: str) -> None:
    workflow = _workflow("ubuntu-latest", CPU_TORCH, "pytest suite", python=python)
    assert _audit(audit, workflow, QUANT.format(deco="skipIfNoDynamoSupport")) == expected


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        pytest.param("", "runs", id="unset"),
        pytest.param("    env:\n      PYTORCH_TEST_WITH_DYNAMO: '1'\n", "skips", id="set-by-the-job"),
    ],
)
def test_skip_if_torch_dynamo_reads_the_jobs_variables(audit: Audit, env: str, expected: str) -> None:
    test = (
        "import unittest\nfrom torch.testing._internal.common_utils import skipIfTorchDynamo\n\n"
        "class Compiled(unittest.TestCase):\n    @skipIfTorchDynamo('slow')\n    def test_a(self):\n        pass\n"
    )
    workflow = _workflow("ubuntu-latest", "pytest suite").replace("    runs-on:", env + "    runs-on:", 1)
    assert _audit(audit, workflow, test) == expected


BASE_SKIP = """
import unittest


class ShapesBase(unittest.TestCase):
    def setUp(self):
        if self.id() and "Base" in self.id():
            self.skipTest("only the concrete classes run")

    def test_area(self):
        pass


class SquareShapes(ShapesBase):
    pass
"""


def test_self_id_is_the_id_of_the_test_it_runs_for(audit: Audit) -> None:
    report = audit({".github/workflows/unit.yml": _workflow("ubuntu-latest", "pytest suite"), "suite/test_shapes.py": BASE_SKIP})
    # the skip does not depend on the machine: a deliberate skip, not a silent one
    skipped = {f.finding.scope for f in report.of_kind(GuardFindingKind.DISABLED_BY_SKIP)}
    assert skipped == {"suite/test_shapes.py::ShapesBase::test_area"}
    assert not report.undetermined  # SquareShapes::test_area runs: "Base" is in no part of its id


def test_self_id_is_not_bounded_when_the_checkout_root_is_a_package(audit: Audit) -> None:
    files = {
        ".github/workflows/unit.yml": _workflow("ubuntu-latest", "pytest suite"),
        "suite/test_shapes.py": BASE_SKIP,
        "__init__.py": "",
        "suite/__init__.py": "",
    }
    report = audit(files)
    # the base class's tests skip whatever folder names join the id; the subclass's are not known
    assert {f.finding.scope for f in report.of_kind(GuardFindingKind.DISABLED_BY_SKIP)} == {
        "suite/test_shapes.py::ShapesBase::test_area"
    }
    assert report.undetermined == 1


OWN_DECORATOR = """
import functools
import platform
import unittest


def needs_arm_cpu(fn):
    reason = "Arm only"
    if isinstance(fn, type):
        if platform.processor() != "aarch64":
            fn.__unittest_skip__ = True
            fn.__unittest_skip_why__ = reason
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if platform.processor() != "aarch64":
            raise unittest.SkipTest(reason)
        else:
            fn(*args, **kwargs)

    return wrapper


class Kernels(unittest.TestCase):
    @needs_arm_cpu
    def test_neon(self):
        pass
"""


def test_a_modules_own_skip_decorator_of_torchs_shape_is_read(audit: Audit) -> None:
    assert _audit(audit, _workflow("linux.4xlarge", "pytest suite"), OWN_DECORATOR) == "skips"
    # two different conditions in the class and function branches: not read, so not known
    changed = OWN_DECORATOR.replace(
        'if platform.processor() != "aarch64":\n            fn.__unittest_skip__', "if False:\n            fn.__unittest_skip__"
    )
    assert _audit(audit, _workflow("linux.4xlarge", "pytest suite"), changed) == "undetermined"


ROCM_GUARD = """
import pytest
import torch


@pytest.mark.skipif(torch.cuda.get_device_capability() < (9, 4), reason="needs MI300 or newer")
def test_a():
    pass


@pytest.mark.skipif("gfx942" not in torch.cuda.get_device_properties(0).gcnArchName, reason="MI300 only")
def test_b():
    pass
"""


@pytest.mark.parametrize(("label", "expected"), [("linux.rocm.gpu.gfx942.1", "runs"), ("linux.rocm.gpu.gfx90a.1", "skips")])
def test_a_rocm_hosts_capability_and_isa_come_from_its_label(audit: Audit, label: str, expected: str) -> None:
    assert _audit(audit, _workflow(label, "pytest suite"), ROCM_GUARD) == expected


TWO_IMPORTS = """
import pytest
import torch
import torch.testing


@pytest.mark.skipif(not torch.cuda.is_available(), reason="gpu")
def test_a():
    pass
"""


def test_import_of_a_submodule_binds_the_package_name(audit: Audit) -> None:
    # `import torch.testing` binds `torch` to the package, as `import torch` does: the name is not ambiguous
    assert _audit(audit, _workflow("ubuntu-latest", "pytest suite"), TWO_IMPORTS) == "skips"


FBCODE = """
import pytest
import torch


def in_fbcode():
    return not hasattr(torch.version, "git_version")


@pytest.mark.skipif(in_fbcode(), reason="internal build")
def test_a():
    pass
"""


@pytest.mark.parametrize(("install", "expected"), [(CPU_TORCH, "runs"), ("true", "undetermined")])
def test_a_torch_the_job_installs_has_a_git_version(audit: Audit, install: str, expected: str) -> None:
    assert _audit(audit, _workflow("ubuntu-latest", install, "pytest suite"), FBCODE) == expected


@pytest.mark.parametrize(
    "guard",
    ["sys.platform != 'win32'", "platform.system() == 'Linux'"],
    ids=["sys", "system"],
)
def test_a_skip_the_runners_platform_decides_is_classed_as_platform(audit: Audit, guard: str) -> None:
    test = f"import platform\nimport sys\nimport pytest\n\n@pytest.mark.skipif({guard}, reason='os')\ndef test_a():\n    pass\n"
    report = audit({".github/workflows/unit.yml": _workflow("ubuntu-latest", "pytest suite"), "suite/test_things.py": test})
    assert [f.guard_class.value for f in report.of_kind(GuardFindingKind.SILENT_SKIP)] == ["platform"]


def test_a_skip_on_torchs_rocm_build_is_classed_as_platform(audit: Audit) -> None:
    test = (
        "import pytest\nimport torch\n\n@pytest.mark.skipif(torch.version.hip is None, reason='rocm')\ndef test_a():\n    pass\n"
    )
    report = audit({".github/workflows/unit.yml": _workflow("8-gpu-h100", "pytest suite"), "suite/test_things.py": test})
    assert [f.guard_class.value for f in report.of_kind(GuardFindingKind.SILENT_SKIP)] == ["platform"]


def test_setup_python_on_a_self_hosted_runner_says_why_its_installs_are_not_known(audit: Audit) -> None:
    test = "import pytest\n\ngizmo = pytest.importorskip('gizmo')\n\ndef test_a():\n    pass\n"
    workflow = _workflow("[self-hosted, h100]", "pip install pyyaml", "pytest suite", python="3.11")
    report = audit({".github/workflows/unit.yml": workflow, "suite/test_things.py": test})
    reasons = {t.reason for t in report.undetermined_tests}
    assert any("self-hosted runner" in r and "tool cache" in r for r in reasons), reasons


CUDA_ONLY = (
    "import pytest\nimport torch\n\n@pytest.mark.skipif(not torch.cuda.is_available(), reason='cuda')\ndef test_a():\n    pass\n"
)


def _two_jobs(second_runner: str) -> str:
    """A read job on a CPU host, and one a reader cannot read (a run-time path) bounded to the same folder."""
    return (
        "on: [push]\njobs:\n  unit:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
        f"      - uses: actions/setup-python@v5\n      - run: {CPU_TORCH}\n      - run: pytest suite\n  accel:\n"
        f"    runs-on: {second_runner}\n    steps:\n      - uses: actions/checkout@v4\n"
        "      - run: pytest suite/$(cat picked.txt)\n"
    )


@pytest.mark.parametrize(
    ("second_runner", "expected"),
    [
        pytest.param("linux.g5.4xlarge.nvidia.gpu", "undetermined", id="a-cuda-host-where-it-runs"),
        pytest.param("macos-14", "skips", id="a-host-where-it-skips-too"),
    ],
)
def test_a_skip_is_certain_only_where_no_unread_job_may_run_the_test_elsewhere(
    audit: Audit, second_runner: str, expected: str
) -> None:
    assert (
        _verdict(audit({".github/workflows/unit.yml": _two_jobs(second_runner), "suite/test_things.py": CUDA_ONLY})) == expected
    )
