"""Guards built on the audited project's own helpers and constants (a package beside its tests, `src/` layouts,
re-exports), followed into the project's files; names the packs know keep the packs' answer."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites.audit import PytestAuditReport

Skipping = Callable[[PytestAuditReport], dict[str, str]]

PACKAGE_UTILS = """
import torch

def _capability():
    if not torch.cuda.is_available():
        return (0, 0)
    return torch.cuda.get_device_capability()

def is_sm_at_least_100():
    return torch.cuda.is_available() and _capability() >= (10, 0)

NEW_ARCH = is_sm_at_least_100()
"""

CASES = {
    "package-function": (
        {"kit/__init__.py": "", "kit/utils.py": PACKAGE_UTILS},
        "from kit.utils import is_sm_at_least_100\n"
        "@pytest.mark.skipif(not is_sm_at_least_100(), reason='sm100')\ndef test_it():\n    pass\n",
    ),
    "package-constant": (
        {"kit/__init__.py": "", "kit/utils.py": PACKAGE_UTILS},
        "from kit.utils import NEW_ARCH\n@pytest.mark.skipif(not NEW_ARCH, reason='sm100')\ndef test_it():\n    pass\n",
    ),
    "src-layout-module-attribute": (
        {"src/kit/__init__.py": "", "src/kit/utils.py": PACKAGE_UTILS},
        "import kit.utils as ku\n@pytest.mark.skipif(not ku.is_sm_at_least_100(), reason='sm100')\ndef test_it():\n    pass\n",
    ),
    "reexported-by-the-package": (
        {"kit/__init__.py": "from kit.utils import is_sm_at_least_100\n", "kit/utils.py": PACKAGE_UTILS},
        "from kit import is_sm_at_least_100\n"
        "@pytest.mark.skipif(not is_sm_at_least_100(), reason='sm100')\ndef test_it():\n    pass\n",
    ),
    "helper-result-assigned": (
        {"tests/conftest.py": "", "tests/probes.py": PACKAGE_UTILS},
        "from probes import is_sm_at_least_100\ndef test_it():\n    ok = is_sm_at_least_100()\n"
        "    if not ok:\n        pytest.skip('sm100')\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_project_predicate_is_followed(
    case: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    files, test = CASES[case]
    tree = {**files, "tests/test_case.py": "import pytest\n" + test}
    plan = schedule(("1-gpu-h100", "pytest tests/"))
    assert skipping(audit(tree, plan)) == {"tests/test_case.py::test_it": "compute capability"}
    fixed = {name: text.replace("(10, 0)", "(9, 0)") for name, text in tree.items()}
    report = audit(fixed, plan)
    assert skipping(report) == {}
    assert report.undetermined == 0


def test_a_predicate_outside_the_tree_stays_undetermined(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    test = "import pytest\nfrom elsewhere.utils import is_sm_at_least_100\n"
    test += "@pytest.mark.skipif(not is_sm_at_least_100(), reason='sm100')\ndef test_it():\n    pass\n"
    report = audit({"tests/test_case.py": test}, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {}
    assert report.undetermined == 1


def test_the_pack_answers_before_the_project(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    # flashinfer's own utils.py in the tree says "always true"; the flashinfer pack says sm100 with CUDA 12.8.
    files = {"flashinfer/__init__.py": "", "flashinfer/utils.py": "def is_sm100a_supported(device):\n    return True\n"}
    test = "import pytest\nimport torch\nfrom flashinfer.utils import is_sm100a_supported\n"
    test += "@pytest.mark.skipif(not is_sm100a_supported(torch.device('cuda')), reason='x')\ndef test_it():\n    pass\n"
    report = audit({**files, "tests/test_case.py": test}, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {"tests/test_case.py::test_it": "compute capability"}
