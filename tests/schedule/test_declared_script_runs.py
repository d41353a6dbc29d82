"""The declared `python FILE` runs of a project whose workflows start test files as scripts are checked against
those workflows (ci/check_ao_schedule.py): a declared file no workflow on the declared runner starts is named."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import ModuleType

from matrix.schedule.load import TreeLoader
from matrix.schedule.services.declared import parse_declared
from tests.ci_scripts import ci_script

REPO = Path(__file__).resolve().parents[2]

WORKFLOW = textwrap.dedent(
    """\
    jobs:
      gpu:
        uses: some-org/infra/.github/workflows/job.yml@main
        with:
          runner: big-gpu-box
          script: |
            pip install .
            pytest tests/unit
            python tests/widgets/test_spin.py
            ./tests/run_more.sh
    """
)


def checker() -> ModuleType:
    return ci_script("check_ao_schedule")


def entry(labels: list[str], files: str) -> dict[str, object]:
    return {"job": "gpu", "labels": labels, "pytest": f"pytest {files}"}


def test_a_declared_script_run_is_checked_against_the_workflow(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "run_more.sh").write_text("set -e\npython tests/gears/test_mesh.py\n", encoding="utf-8")
    load = TreeLoader(tmp_path)
    module = checker()
    good = parse_declared({"entry": [entry(["big-gpu-box"], "tests/widgets/test_spin.py tests/gears/test_mesh.py")]}, "g")
    assert module.mismatches(good, {"gpu.yml": WORKFLOW}, load) == []
    stale = parse_declared(
        {
            "entry": [
                entry(["small-box"], "tests/widgets/test_spin.py"),
                entry(["big-gpu-box"], "tests/unit/test_plain.py"),
            ]
        },
        "s",
    )
    assert module.mismatches(stale, {"gpu.yml": WORKFLOW}, load) == [
        "gpu: no workflow on ['small-box'] starts `python tests/widgets/test_spin.py`",
        "gpu: no workflow on ['big-gpu-box'] starts `python tests/unit/test_plain.py`",
    ]
