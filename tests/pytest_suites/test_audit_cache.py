"""pytest-audit's results cache gives the report of an audit without it, after any edit to anything the audit reads.

Each input is edited in turn (a test file, a conftest.py, pytest's configuration, a helper a guard is followed into,
a workflow, the script it runs, the job's environment, the runner profiles, declared markers, the installed
modules, a file an import was looked for in, this package's source): the cached run after the edit must equal a
fresh run, and differ from the run before it (so a cache that ignored the input would be caught). An edit
re-audits exactly the files that read what changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from matrix.core.runner_files import load_runners
from matrix.pytest_suites import cache as cache_module
from tests.pytest_suites.cache_checkout import FILES, WORKFLOW, Checkout, edited, make_checkout
from tests.pytest_suites.conftest import write_tree


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Checkout:
    return make_checkout(tmp_path, monkeypatch)


def _scopes(report: Mapping[str, Any]) -> set[str]:
    return {f["finding"]["subject"] or f["finding"]["path"] for f in report["findings"]}


def test_a_test_file_edit_is_seen_and_only_that_file_is_read_again(checkout: Checkout) -> None:
    edited(checkout, lambda: checkout.write({"tests/test_plain.py": FILES["tests/test_plain.py"].replace("< 4", "< 1")}))
    assert checkout.collected == ["tests/test_plain.py"]


def test_a_conftest_edit_is_seen(checkout: Checkout) -> None:
    conftest = """
        import pytest
        import torch


        @pytest.fixture(autouse=True)
        def _many_gpus():
            if torch.cuda.device_count() < 8:
                pytest.skip("needs eight GPUs")
        """
    _, after = edited(checkout, lambda: checkout.write({"tests/conftest.py": conftest}))
    assert "tests/test_plain.py::test_runs" in _scopes(after)


def test_a_configuration_edit_is_seen(checkout: Checkout) -> None:
    ini = FILES["pytest.ini"] + 'addopts = -m "not slow"\n'
    _, after = edited(checkout, lambda: checkout.write({"pytest.ini": ini}))
    assert "tests/test_plain.py" in _scopes(after)  # its one selected test skips: the file never runs


def test_a_helper_edit_is_seen_and_only_its_readers_are_read_again(checkout: Checkout) -> None:
    helper = FILES["tests/helpers.py"].replace("< n", "< 0")
    before, after = edited(checkout, lambda: checkout.write({"tests/helpers.py": helper}))
    assert "tests/test_helped.py::test_two" in _scopes(before) - _scopes(after)
    assert checkout.collected == ["tests/test_helped.py"]


def test_a_workflow_edit_is_seen(checkout: Checkout) -> None:
    workflow = WORKFLOW.format(label="8-gpu-h200", addopts="-p no:cacheprovider")
    before, after = edited(checkout, lambda: checkout.write({".github/workflows/ci.yml": workflow}))
    assert {"tests/test_plain.py::test_four", "tests/test_helped.py::test_two"} <= _scopes(before) - _scopes(after)


def test_an_edit_of_the_script_a_workflow_runs_is_seen(checkout: Checkout) -> None:
    _, after = edited(checkout, lambda: checkout.write({"scripts/run_tests.sh": "pytest tests/test_plain.py\n"}))
    assert "tests/test_helped.py" in _scopes(after)  # no command selects it now


def test_an_edit_of_the_jobs_environment_is_seen(checkout: Checkout) -> None:
    workflow = WORKFLOW.format(label="1-gpu-h100", addopts="-m slow")
    _, after = edited(checkout, lambda: checkout.write({".github/workflows/ci.yml": workflow}))
    assert "tests/test_helped.py" in _scopes(after)  # PYTEST_ADDOPTS deselects its one test


def test_a_runner_profile_edit_is_seen(checkout: Checkout, tmp_path: Path) -> None:
    runners = tmp_path / "runners.toml"
    runners.write_text('[runner.1-gpu-h100]\ngpus = 8\ncapability = [9, 0]\nlabels = ["1-gpu-h100"]\n', encoding="utf-8")

    def edit() -> None:
        checkout.profiles = load_runners((runners,), replace=("1-gpu-h100",))

    edited(checkout, edit)


def test_a_declared_marker_edit_is_seen(checkout: Checkout, tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[[entry]]\njob = "j"\nlabels = ["8-gpu-h200"]\npytest = "pytest tests"\n', encoding="utf-8")
    checkout.schedule_files = (plan,)
    _, after = edited(checkout, lambda: plan.write_text(plan.read_text() + '[markers]\nslow = "True"\n', encoding="utf-8"))
    assert "tests/test_plain.py::test_runs" in _scopes(after)


def test_the_installed_modules_are_part_of_the_key(checkout: Checkout) -> None:
    checkout.write(
        {"tests/test_optional.py": "import pytest\n\nkit = pytest.importorskip('kit')\n\n\ndef test_kit():\n    pass\n"}
    )

    def edit() -> None:
        checkout.installed = frozenset({"kit"})

    before, after = edited(checkout, edit)
    assert after["undetermined"] == before["undetermined"] - 1  # whether `kit` imports is known now


def test_a_file_created_where_an_import_was_looked_for_is_seen(checkout: Checkout) -> None:
    # `from tests.marks import slow_gpu` finds nothing at first: the mark is unknown, the test undetermined.
    checkout.write({"tests/test_marked.py": "from tests.marks import heavy\n\n\n@heavy\ndef test_heavy():\n    pass\n"})
    marks = "import pytest\n\nheavy = pytest.mark.skip(reason='too heavy')\n"
    _, after = edited(checkout, lambda: checkout.write({"tests/marks.py": marks}))
    assert "tests/test_marked.py::test_heavy" in _scopes(after)


def test_new_and_removed_test_files_are_seen(checkout: Checkout) -> None:
    def edit() -> None:
        (checkout.root / "tests" / "test_helped.py").unlink()
        checkout.write({"tests/test_new.py": "import pytest\n\n\n@pytest.mark.skip(reason='off')\ndef test_off():\n    pass\n"})

    _, after = edited(checkout, edit)
    assert "tests/test_new.py::test_off" in _scopes(after) and "tests/test_helped.py::test_two" not in _scopes(after)
    assert checkout.collected == ["tests/test_new.py"]


def test_an_edit_of_this_packages_source_starts_afresh(
    checkout: Checkout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "package"
    write_tree(package, {"module.py": "ANSWER = 1\n", "data/table.toml": "x = 1\n"})
    monkeypatch.setattr(cache_module, "_PACKAGE", package)
    checkout.cached()
    checkout.cached()
    assert checkout.collected == []
    (package / "data" / "table.toml").write_text("x = 2\n", encoding="utf-8")
    checkout.cached()
    assert sorted(checkout.collected) == ["tests/test_helped.py", "tests/test_plain.py"]


def test_workers_and_one_process_store_the_same_entries(checkout: Checkout) -> None:
    checkout.write({f"tests/test_many_{k}.py": f"def test_{k}():\n    pass\n" for k in range(6)})
    parallel = asdict(checkout.cached(jobs=2))
    assert parallel == checkout.fresh()
    assert asdict(checkout.cached()) == parallel and checkout.collected == []
    checkout.write({"tests/helpers.py": FILES["tests/helpers.py"].replace("< n", "< 0")})
    assert asdict(checkout.cached()) == checkout.fresh()
    assert checkout.collected == ["tests/test_helped.py"]  # what the workers recorded as read, per file


def test_a_test_file_that_does_not_parse_stops_the_commands_that_collect_it(checkout: Checkout) -> None:
    checkout.write({"tests/test_torn.py": "def test_torn(:\n    pass\n"})
    report = asdict(checkout.cached())
    kinds = {(f["finding"]["kind"], f["finding"]["subject"] or f["finding"]["path"]) for f in report["findings"]}
    assert ("never-runs", "tests/test_plain.py") in kinds  # pytest stops on the collection error: nothing runs
    assert asdict(checkout.cached()) == report == checkout.fresh() and checkout.collected == []


def test_a_file_that_stops_parsing_changes_the_verdicts_of_the_files_beside_it(checkout: Checkout) -> None:
    # Nothing test_plain.py reads changes, but the command that collects it now stops on a collection error.
    _, after = edited(checkout, lambda: checkout.write({"tests/test_helped.py": "def test_two(:\n    pass\n"}))
    stopped = [f["finding"]["message"] for f in after["findings"] if f["finding"]["path"] == "tests/test_plain.py"]
    assert any("does not parse" in message for message in stopped)


CHAINED = {
    "tests/helpers.py": """
        import pytest

        from tests.deep import check_gpus


        def need_two_gpus():
            check_gpus(2)


        def unused():
            pytest.skip("a file that never says skip is not followed into")
        """,
    "tests/deep.py": """
        import pytest
        import torch


        def check_gpus(n):
            if torch.cuda.device_count() < n:
                pytest.skip("needs more GPUs")
        """,
    "tests/test_helped.py": "from tests.helpers import need_two_gpus\n\n\ndef test_two():\n    need_two_gpus()\n",
    "tests/test_plain.py": "from tests.helpers import need_two_gpus\n\n\ndef test_also_two():\n    need_two_gpus()\n",
}


def test_a_helper_reached_through_another_helper_is_read_by_every_file_that_reaches_it(checkout: Checkout) -> None:
    # The second file to call need_gpus() finds check_gpus() already followed for the first one: it reads deep.py too.
    checkout.write(CHAINED)
    deep = CHAINED["tests/deep.py"].replace("< n", "< 0")
    before, after = edited(checkout, lambda: checkout.write({"tests/deep.py": deep}))
    assert {"tests/test_helped.py::test_two", "tests/test_plain.py::test_also_two"} <= _scopes(before) - _scopes(after)
    assert sorted(checkout.collected) == ["tests/test_helped.py", "tests/test_plain.py"]


LINKED = {
    "tests/limits.py": "MIN_GPUS = 2\n",
    "tests/conftest.py": """
        import pytest
        import torch

        from tests.limits import MIN_GPUS


        @pytest.fixture(autouse=True)
        def _enough_gpus():
            if torch.cuda.device_count() < MIN_GPUS:
                pytest.skip("needs more GPUs")
        """,
}


def test_a_constant_a_conftest_guard_reads_from_another_file_is_read_by_every_file_under_it(checkout: Checkout) -> None:
    # The guard is evaluated for the first file; the second one's audit follows MIN_GPUS into limits.py as well.
    checkout.write(LINKED)
    before, after = edited(checkout, lambda: checkout.write({"tests/limits.py": "MIN_GPUS = 1\n"}))
    assert "tests/test_plain.py::test_runs" in _scopes(before) - _scopes(after)
    assert sorted(checkout.collected) == ["tests/test_helped.py", "tests/test_plain.py"]
