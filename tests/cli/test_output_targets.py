"""Every command's outputs pass one check: never onto a file the command reads; text values never forge lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.cli.main import main

WORKFLOW = "on: push\njobs:\n  unit:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest tests/test_a.py\n"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("command", "option", "target"),
    [
        ("pytest-audit", "--output", "tests/test_a.py"),
        ("pytest-audit", "--summary", "tests/test_a.py"),
        ("pytest-audit", "--write-baseline", ".github/workflows/ci.yml"),
        ("schedule", "--output", ".github/workflows/ci.yml"),
        ("guards", "--summary", "tests/test_a.py"),
        ("guards", "--output", ".github/workflows/ci.yml"),
    ],
)
def test_an_output_onto_a_file_the_command_reads_is_refused(capsys, tmp_path, command, option, target):
    root = project(tmp_path)
    before = (root / target).read_bytes()
    code = main([command, str(root), option, str(root / target)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "is one of this command's inputs" in err
    assert (root / target).read_bytes() == before


def test_a_new_file_in_the_audited_folder_is_written(capsys, tmp_path):
    root = project(tmp_path)
    main(["schedule", str(root), "--output", str(root / "schedule.txt")])
    assert (root / "schedule.txt").read_text().startswith("schedule of ")


def test_a_newline_in_a_label_or_job_id_does_not_forge_a_schedule_line(capsys, tmp_path):
    root = project(tmp_path)
    hostile = (
        'on: push\njobs:\n  "unit\\nfiles read: forged":\n    runs-on: "ubuntu-latest\\nfiles read: forged"\n'
        "    steps:\n      - run: pytest tests/test_a.py\n"
    )
    (root / ".github" / "workflows" / "ci.yml").write_text(hostile, encoding="utf-8")
    assert main(["schedule", str(root)]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("files read:")] == ["files read: .github/workflows/ci.yml"]
    assert "\\nfiles read: forged" in out


def test_register_and_report_print_json(capsys, tmp_path):
    import json

    assert main(["register", "--out", str(tmp_path / "reg"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "specmatrix.register/1"
    assert doc["modules"] and all(Path(m["path"]).is_file() for m in doc["modules"])
    guards = tmp_path / "guards.json"
    suite = Path(__file__).parent.parent / "guards" / "fixture_suite" / "kinds"
    main(["guards", str(suite), "--no-workflows", "--format", "json", "--output", str(guards)])
    capsys.readouterr()
    assert main(["report", "--html", str(tmp_path / "page.html"), str(guards), "--format", "json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert page["inputs"] == [{"label": str(guards), "kind": "guard audit", "schema": "specmatrix.guards/1"}]
    assert page["bytes"] == len((tmp_path / "page.html").read_bytes())


def test_the_markdown_tables_of_a_clean_pytest_audit_have_as_many_cells_in_every_row(capsys, tmp_path):
    root = project(tmp_path)
    assert main(["pytest-audit", str(root), "--format", "md"]) == 0
    tables: list[list[str]] = []
    previous = ""
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    assert tables
    for rows in tables:
        widths = {row.strip().strip("|").count("|") for row in rows}
        assert len(widths) == 1, rows  # GitHub renders no table whose separator and header differ
