"""pytest's collection rules, selection by the schedule, file-level findings, and the command's reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport
from matrix.pytest_suites.select import matches_expression

Skipping = Callable[[PytestAuditReport], dict[str, str]]

SKIP_ALWAYS = 'import pytest\npytestmark = pytest.mark.skip(reason="off")\n'


def _kinds(report: PytestAuditReport, kind: GuardFindingKind) -> set[str]:
    return {f.finding.scope for f in report.of_kind(kind)}


def test_collection_rules(audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]) -> None:
    files = {
        "pytest.ini": "[pytest]\ntestpaths = suite\nnorecursedirs = helpers_dir\n",
        "suite/test_a.py": """
            class TestKept:
                def test_one(self):
                    pass
            class HelperNotATest:
                def test_two(self):
                    pass
            class TestWithInit:
                def __init__(self):
                    pass
                def test_three(self):
                    pass
            def test_four():
                pass
            def check_five():
                pass
            """,
        "suite/b_test.py": "def test_six():\n    pass\n",
        "suite/helpers_dir/test_hidden.py": "def test_hidden():\n    pass\n",
        "other/test_outside.py": "def test_outside():\n    pass\n",
    }
    report = audit(files, schedule(("h100", "pytest")))
    assert report.files == 2
    assert report.tests == 3  # TestKept::test_one, test_four, test_six


def test_selection_by_ignore_deselect_keyword_and_marker(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    files = {
        "tests/test_x.py": SKIP_ALWAYS + "def test_fast():\n    pass\n\ndef test_slow():\n    pass\n",
        "tests/test_y.py": SKIP_ALWAYS
        + "import pytest\n@pytest.mark.gpu\ndef test_gpu():\n    pass\n\ndef test_cpu():\n    pass\n",
        "tests/skipme/test_z.py": SKIP_ALWAYS + "def test_z():\n    pass\n",
    }
    command = "pytest tests/ --ignore=tests/skipme -k 'not slow' --deselect tests/test_x.py::test_fast -m 'gpu or fast'"
    report = audit(files, schedule(("h100", command)))
    assert set(skipping(report)) == {"tests/test_y.py::test_gpu"}
    # Each test the command collects but leaves out never runs, with what left it out; an ignored file is unscheduled.
    never = {f.finding.scope: f.finding.message for f in report.of_kind(GuardFindingKind.NEVER_RUNS)}
    assert set(never) == {
        "tests/test_x.py::test_fast",
        "tests/test_x.py::test_slow",
        "tests/test_y.py::test_cpu",
        "tests/test_x.py",
        "tests/test_y.py",
    }
    assert "--deselect tests/test_x.py::test_fast" in never["tests/test_x.py::test_fast"]
    assert "-k 'not slow'" in never["tests/test_x.py::test_slow"]
    assert "-m 'gpu or fast'" in never["tests/test_y.py::test_cpu"]
    assert _kinds(report, GuardFindingKind.UNSCHEDULED) == {"tests/skipme/test_z.py"}


def test_file_level_findings(audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]) -> None:
    files = {
        "tests/test_off.py": SKIP_ALWAYS + "def test_a():\n    pass\n\ndef test_b():\n    pass\n",
        "tests/test_mixed.py": "import pytest\n@pytest.mark.skip\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n",
        # outside the command's paths: a file it collected that does not parse would stop it (test_collection_errors.py)
        "tests/unscheduled/test_broken.py": "def test_(:\n",
        "tests/unscheduled/test_u.py": "def test_u():\n    pass\n",
    }
    report = audit(files, schedule(("sm86", "pytest tests/ --ignore tests/unscheduled")))
    # Unconditional skips are deliberate: warnings, one per test, and no file-level error for the file they disable.
    assert not report.of_kind(GuardFindingKind.NEVER_RUNS)
    disabled = report.of_kind(GuardFindingKind.DISABLED_BY_SKIP)
    assert {f.finding.scope for f in disabled} == {
        "tests/test_off.py::test_a",
        "tests/test_off.py::test_b",
        "tests/test_mixed.py::test_a",
    }
    assert all(f.guard_class.value == "unconditional" and f.finding.runners == ("a10g",) for f in disabled)
    assert all(not f.finding.failing and "schedule it on a runner" not in f.finding.hint for f in disabled)
    assert _kinds(report, GuardFindingKind.UNPARSABLE) == {"tests/unscheduled/test_broken.py"}
    assert _kinds(report, GuardFindingKind.UNSCHEDULED) == {"tests/unscheduled/test_u.py"}


@pytest.mark.parametrize(
    ("expression", "names", "keyword", "expected"),
    [
        ("not slow", ["test_fast"], True, True),
        ("not slow", ["test_slow_path"], True, False),
        ("(a or b) and not c", ["B_only"], True, True),
        ("(a or b) and not c", ["B_case"], True, False),  # substrings: "c" is in "b_case"
        ("gpu and not nightly", ["gpu"], False, True),
        ("gpu", ["gpus"], False, False),
        ("a and", ["a"], True, None),
        ("a ) b", ["a"], True, None),
        ("x" * 3000, ["x"], True, None),
    ],
)
def test_keyword_and_marker_expressions(expression: str, names: list[str], keyword: bool, expected: bool | None) -> None:
    assert matches_expression(expression, keyword=keyword, names=names) is expected


def test_command_reports_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matrix.cli.main import main

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_off.py").write_text(SKIP_ALWAYS + "def test_a():\n    pass\n", encoding="utf-8")
    plan = tmp_path / "plan.toml"
    plan.write_text('[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests"\n', encoding="utf-8")
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    code = main(["pytest-audit", str(repo), "--schedule-file", str(plan), "--json", str(out_json), "--md", str(out_md)])
    assert code == 0  # a deliberate skip is a warning
    text = capsys.readouterr().out
    assert "tests/test_off.py:3: disabled-by-skip: tests/test_off.py::test_a on h100" in text
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    assert doc["schema"] == "specmatrix.pytest-audit/1"
    assert doc["counts"]["disabled-by-skip"] == {"unconditional": 1}
    assert "| disabled-by-skip | 1 |" in out_md.read_text(encoding="utf-8")
    arch = "import pytest, torch\npytestmark = pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 10, reason='sm100')\n"
    (repo / "tests" / "test_off.py").write_text(arch + "def test_a():\n    pass\n", encoding="utf-8")
    assert main(["pytest-audit", str(repo), "--schedule-file", str(plan)]) == 1
    assert "tests/test_off.py:3: silent-skip: tests/test_off.py::test_a on h100" in capsys.readouterr().out
    (repo / "tests" / "test_off.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    assert main(["pytest-audit", str(repo), "--schedule-file", str(plan), "--format", "json"]) == 0
    assert main(["pytest-audit", str(repo)]) == 2
    assert main(["pytest-audit", str(repo), "--schedule-file", str(plan), "--jobs", "0"]) == 2
    assert main(["pytest-audit", str(repo / "nope"), "--schedule-file", str(plan)]) == 2


def test_hostile_trees_are_findings_not_tracebacks(
    audit: Callable[..., PytestAuditReport], schedule: Callable[..., str], tmp_path: Path
) -> None:
    deep = "import pytest\npytestmark = pytest.mark.skipif(" + "not " * 3000 + "True, reason='x')\ndef test_deep():\n    pass\n"
    files = {
        "pytest.ini": "[pytest]\ntestpaths = tests ../outside\n",
        "tests/test_deep.py": deep,
        "tests/test_nul.py": "def test_a():\n    pass\n\x00\n",
        "tests/test_long_expr.py": "import pytest\n@pytest.mark.skipif("
        + "(" * 400
        + "1"
        + ")" * 400
        + ", reason='x')\ndef test_b():\n    pass\n",
    }
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "test_escape.py").write_text("def test_escape():\n    pass\n", encoding="utf-8")
    root = tmp_path / "repo" / "tests"
    root.mkdir(parents=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "test_latin1.py").write_bytes(b"# \xe9\ndef test_c():\n    pass\n")
    report = audit(files, schedule(("h100", "pytest tests/")))
    unparsable = {f.finding.path for f in report.of_kind(GuardFindingKind.UNPARSABLE)}
    assert {"tests/test_nul.py", "tests/test_latin1.py"} <= unparsable
    assert all("outside" not in f.finding.path and "loop" not in f.finding.path for f in report.findings)


def test_a_buildkite_alias_bomb_is_one_line_not_a_blow_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matrix.cli.main import main

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = tmp_path / "area.yaml"
    bomb.write_text("\n".join(levels) + "\nsteps:\n  - label: s\n    commands: *a8\n", encoding="utf-8")
    assert main(["pytest-audit", str(repo), "--buildkite", str(bomb)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "YAML aliases expand" in err[0]


def test_a_deeply_nested_pyproject_in_the_audited_checkout_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from matrix.cli.main import main

    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    plan = tmp_path / "plan.toml"
    plan.write_text('[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests"\n', encoding="utf-8")
    assert main(["pytest-audit", str(repo), "--schedule-file", str(plan)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nested too deeply" in err[0]
