"""A name a guard reads that is bound a second time in a way other than a plain assignment (`with ... as`, `:=`,
a `match` case, `global`/`nonlocal` in a function that runs first, a conditional assignment): never decided from
its first binding. Checked against pytest itself (stub torch at capability (9, 0))."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.pytest_suites.audit import ItemOutcome
from tests.pytest_suites.test_pytest_oracle import Case, _write, check, static_outcomes

HEAD = "import contextlib\nimport os\n\nimport pytest\nimport torch\n\n\n"
SKIPIF = "\n\n@pytest.mark.skipif(level < (9, 0), reason='below sm90')\ndef test_probe():\n    pass\n"
BODY_SKIP = "    if level < (9, 0):\n        pytest.skip('below sm90')\n"
CASES = {
    "module-with-as": "level = (11, 0)\nwith contextlib.nullcontext((7, 5)) as level:\n    pass\n" + SKIPIF,
    "module-walrus": "level = (11, 0)\nif (level := (7, 5)) is None:\n    pass\n" + SKIPIF,
    "module-match": "level = (11, 0)\nmatch os.sep:\n    case '/':\n        level = (7, 5)\n" + SKIPIF,
    "module-global": "level = (11, 0)\n\n\ndef _downgrade():\n    global level\n    level = (7, 5)\n\n\n_downgrade()\n" + SKIPIF,
    "module-conditional": (
        "level = torch.cuda.get_device_capability()\nif os.environ.get('PRETEND_OLD'):\n    level = (7, 5)\n" + SKIPIF
    ),
    "body-with-as": "def test_probe():\n    level = (11, 0)\n    with contextlib.nullcontext((7, 5)) as level:\n        pass\n"
    + BODY_SKIP,
    "body-walrus": "def test_probe():\n    level = (11, 0)\n    if (level := (7, 5)) is None:\n        pass\n" + BODY_SKIP,
    "body-match": (
        "def test_probe():\n    level = (11, 0)\n    match os.sep:\n        case '/':\n            level = (7, 5)\n"
        "        case _:\n            pass\n" + BODY_SKIP
    ),
    "body-nonlocal": (
        "def test_probe():\n    level = (11, 0)\n\n    def downgrade():\n        nonlocal level\n        level = (7, 5)\n\n"
        "    downgrade()\n" + BODY_SKIP
    ),
    "body-conditional": (
        "def test_probe():\n    level = torch.cuda.get_device_capability()\n    if os.environ.get('PRETEND_OLD'):\n"
        "        level = (7, 5)\n" + BODY_SKIP
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_rebound_name_is_not_read_from_its_first_binding(name: str, tmp_path: Path, oracle_stub: Path) -> None:
    files = {"suite/test_level.py": HEAD + CASES[name]}
    case = Case(files=files, command="pytest suite")
    check(case, tmp_path / "oracle", oracle_stub)
    root = tmp_path / "again" / "repo"
    _write(root, files)
    static, _ = static_outcomes(root, case, tmp_path / "again")
    assert static == {"suite/test_level.py::test_probe": ItemOutcome.UNDETERMINED}


def test_a_name_bound_once_is_still_decided(tmp_path: Path, oracle_stub: Path) -> None:
    files = {"suite/test_level.py": HEAD + "level = (7, 5)\n" + SKIPIF}
    case = Case(files=files, command="pytest suite")
    check(case, tmp_path / "oracle", oracle_stub)
    root = tmp_path / "again" / "repo"
    _write(root, files)
    static, _ = static_outcomes(root, case, tmp_path / "again")
    assert static == {"suite/test_level.py::test_probe": ItemOutcome.SKIPS}
