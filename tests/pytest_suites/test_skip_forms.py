"""Ways of writing a skip that pytest honours and a reader of `@pytest.mark.skipif` alone would miss.

Each form is planted (skips on the H100 it is sent to: a finding) and fixed (the same file with the
condition made false there: no finding); a form the audit cannot follow is undetermined, never "runs".
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites.audit import PytestAuditReport

Skipping = Callable[[PytestAuditReport], dict[str, str]]
COND = "torch.cuda.get_device_capability()[0] < 10"
HEAD = "import pytest\nimport torch\n"

FORMS: dict[str, dict[str, str]] = {
    "pytestmark-bound-to-a-name": {
        "tests/test_case.py": HEAD + f"GATES = [pytest.mark.skipif({COND}, reason='x')]\npytestmark = GATES\n"
        "def test_it():\n    pass\n",
    },
    "pytestmark-annotated": {
        "tests/test_case.py": HEAD + f"pytestmark: list = [pytest.mark.skipif({COND}, reason='x')]\ndef test_it():\n    pass\n",
    },
    "pytestmark-append": {
        "tests/test_case.py": HEAD + f"pytestmark = []\npytestmark.append(pytest.mark.skipif({COND}, reason='x'))\n"
        "def test_it():\n    pass\n",
    },
    "pytestmark-augmented": {
        "tests/test_case.py": HEAD + f"pytestmark = [pytest.mark.slow]\npytestmark += [pytest.mark.skipif({COND}, reason='x')]\n"
        "def test_it():\n    pass\n",
    },
    "pytestmark-list-imported": {
        "tests/gates.py": HEAD + f"GATES = [pytest.mark.skipif({COND}, reason='x')]\n",
        "tests/conftest.py": "",
        "tests/test_case.py": "from gates import GATES\npytestmark = GATES\ndef test_it():\n    pass\n",
    },
    "mark-applied-by-a-call": {
        "tests/test_case.py": HEAD + f"def test_it():\n    pass\ntest_it = pytest.mark.skipif({COND}, reason='x')(test_it)\n",
    },
    "usefixtures-of-a-skipping-fixture": {
        "tests/conftest.py": HEAD + f"@pytest.fixture\ndef new_arch():\n    if {COND}:\n        pytest.skip('sm100')\n",
        "tests/test_case.py": "import pytest\n@pytest.mark.usefixtures('new_arch')\ndef test_it():\n    pass\n",
    },
    "usefixtures-in-pytestmark": {
        "tests/conftest.py": HEAD + f"@pytest.fixture\ndef new_arch():\n    if {COND}:\n        pytest.skip('sm100')\n",
        "tests/test_case.py": "import pytest\npytestmark = pytest.mark.usefixtures('new_arch')\ndef test_it():\n    pass\n",
    },
    "fixture-params-all-skipped": {
        "tests/test_case.py": HEAD + f"@pytest.fixture(params=[pytest.param('a', marks=pytest.mark.skipif({COND}, reason='x')),"
        f" pytest.param('b', marks=[pytest.mark.skipif({COND}, reason='y')])])\n"
        "def flavor(request):\n    return request.param\ndef test_it(flavor):\n    pass\n",
    },
    "module-imported-as-a-name": {
        "tests/common/__init__.py": "",
        "tests/common/gates.py": HEAD + f"new_arch = pytest.mark.skipif({COND}, reason='x')\n",
        "tests/conftest.py": "",
        "tests/test_case.py": "import common.gates as G\n@G.new_arch\ndef test_it():\n    pass\n",
    },
    "xfail-not-run": {
        "tests/test_case.py": HEAD + f"@pytest.mark.xfail({COND}, reason='x', run=False)\ndef test_it():\n    pass\n",
    },
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_skip_form_is_read(
    form: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    plan = schedule(("1-gpu-h100", "pytest tests/"))
    assert skipping(audit(FORMS[form], plan)) == {"tests/test_case.py::test_it": "compute capability"}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_same_form_with_the_condition_false_runs(
    form: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    fixed = {name: text.replace("< 10", "< 8") for name, text in FORMS[form].items()}
    report = audit(fixed, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {}
    assert report.undetermined == 0


def test_fixture_params_with_one_unskipped_value_run(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    files = dict(FORMS["fixture-params-all-skipped"])
    files["tests/test_case.py"] = files["tests/test_case.py"].replace(", marks=[pytest.mark.skipif(", ", id=str([(")
    files["tests/test_case.py"] = files["tests/test_case.py"].replace(", reason='y')]", ", 'y')])")
    assert skipping(audit(files, schedule(("1-gpu-h100", "pytest tests/")))) == {}


def test_a_reexport_chain_past_the_bound_is_undetermined(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    files = {"tests/__init__.py": "", "tests/hop0.py": HEAD + f"gate = pytest.mark.skipif({COND}, reason='x')\n"}
    for hop in range(1, 7):
        files[f"tests/hop{hop}.py"] = f"from .hop{hop - 1} import gate\n"
    files["tests/test_case.py"] = "from .hop6 import gate\n@gate\ndef test_it():\n    pass\n"
    report = audit(files, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {}
    assert report.undetermined == 1
    files["tests/test_case.py"] = "from .hop2 import gate\n@gate\ndef test_it():\n    pass\n"
    assert skipping(audit(files, schedule(("1-gpu-h100", "pytest tests/")))) == {
        "tests/test_case.py::test_it": "compute capability"
    }
