"""Workflow files are untrusted: alias bombs, huge matrices and type-malformed documents are one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.errors import ConfigError
from matrix.core.loader import load_runners
from matrix.schedule.load import load_schedule
from matrix.schedule.yamldoc import load_yaml

RUNNERS = load_runners()


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels):
        refs = ", ".join(f"*a{level - 1}" for _ in range(width))
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\non: push\njobs:\n  j:\n    runs-on: x\n    steps: *a8\n"


def workflow_repo(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "repo" / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "w.yml").write_text(text, encoding="utf-8")
    return tmp_path / "repo"


def test_the_bomb_is_small_and_refused_quickly_in_a_fresh_process(tmp_path):
    text = alias_bomb()
    assert len(text.encode()) < 600  # 9 levels of 9 aliases: 9**8 = 43 million leaves once expanded
    root = workflow_repo(tmp_path, text)
    code = (
        "import resource, sys, time\n"
        "from pathlib import Path\n"
        "from matrix.core.errors import ConfigError\n"
        "from matrix.core.loader import load_runners\n"
        "from matrix.schedule.load import load_schedule\n"
        "t = time.perf_counter()\n"
        "try:\n"
        f"    load_schedule(Path({str(root)!r}), load_runners())\n"
        "except ConfigError as e:\n"
        "    print('refused', e)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    refused, figures = done.stdout.strip().splitlines()
    assert "aliases expand to more than" in refused
    seconds, rss_kib = figures.split()
    assert float(seconds) < 2.0 and int(rss_kib) < 500 * 1024


def test_a_small_alias_use_is_read():
    assert load_yaml("x: &x [1, 2]\ny: *x\n", "w.yml") == {"x": [1, 2], "y": [1, 2]}


def test_a_cycle_is_refused():
    with pytest.raises(ConfigError, match=r"cycle|malformed"):
        load_yaml("a: &a [*a]\n", "w.yml")


@pytest.mark.parametrize(
    ("count", "entry", "message"),
    [
        (100_000, "{{n: {i}}}, ", "larger than 1048576 bytes"),
        (40_000, "{{a: {i}, b: 2, c: 3}}, ", "more than 200,000 YAML nodes"),  # 900 KB: under the size limit
        (10_000, "{{n: {i}}}, ", "include has 10000 entries"),  # parsed, then the matrix bound refuses it
    ],
    ids=["100k-entries", "40k-wide-entries", "10k-entries"],
)
def test_huge_include_lists_are_refused_fast(tmp_path, count, entry, message):
    entries = "".join(entry.format(i=i) for i in range(count))
    text = f"on: push\njobs:\n  j:\n    runs-on: x\n    strategy:\n      matrix:\n        include: [{entries}]\n    steps: []\n"
    root = workflow_repo(tmp_path, text)
    start = time.process_time()
    with pytest.raises(ConfigError, match=message):
        load_schedule(root, RUNNERS)
    assert time.process_time() - start < 1.0


def test_a_matrix_product_past_the_limit_is_an_unread_job(tmp_path):
    axes = "".join(f"        a{k}: [{', '.join(str(i) for i in range(10))}]\n" for k in range(4))
    text = f"on: push\njobs:\n  j:\n    runs-on: x\n    strategy:\n      matrix:\n{axes}    steps:\n      - run: python3 run_suite.py --suite s\n"
    schedule = load_schedule(workflow_repo(tmp_path, text), RUNNERS)
    assert schedule.entries == ()
    assert [(u.origin.job, u.reason) for u in schedule.unread] == [("j", "strategy.matrix has more than 4096 combinations")]


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ("    steps: 5\n", "jobs.j.steps must be a list"),
        ("    steps: [3]\n", r"jobs.j.steps\[0\] must be a mapping"),
        ("    strategy:\n      matrix:\n        include: 5\n", "include must be a list of mappings"),
        ("    strategy:\n      matrix:\n        exclude: true\n", "exclude must be a list of mappings"),
        ("    strategy:\n      matrix:\n        include: 1.5\n", "include must be a list of mappings"),
        ("    strategy:\n      matrix:\n        os: 7\n", "matrix.os must be a list"),
        ("    strategy: [1]\n", "strategy must be a mapping"),
        ("    steps:\n      - run: {a: 1}\n", r"steps\[0\].run must be a string"),
    ],
)
def test_type_malformed_workflows_are_one_line_exit_2(tmp_path, capsys, job, message):
    root = workflow_repo(tmp_path, f"on: push\njobs:\n  j:\n    runs-on: x\n{job}")
    with pytest.raises(ConfigError, match=message):
        load_schedule(root, RUNNERS)
    (root / "test").mkdir()
    assert main(["guards", str(root / "test")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_no_workflow_file_is_exit_2_with_one_line(tmp_path, capsys):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / "test").mkdir()
    assert main(["guards", str(tmp_path / "test"), "--workflows", str(tmp_path)]) == 2
    assert "has no *.yml files" in capsys.readouterr().err
    assert main(["guards", str(tmp_path / "test"), "--workflows", str(tmp_path / "test")]) == 2
    assert "no .github/workflows folder" in capsys.readouterr().err
