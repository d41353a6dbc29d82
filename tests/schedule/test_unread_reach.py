"""An unread entry whose text still bounds what it could run (`pytest tests/kernels -k "$(cat filter)"`) makes only
the tests under those paths undetermined; a test outside every unread entry's reach keeps the verdict of what was
read. Where nothing bounds it (`pytest tests/kernels $(cat more)`), every test stays undetermined."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matrix.cli.main import main
from matrix.schedule.commands.pytest_command import reach
from matrix.schedule.model import Origin, UnreadJob

PLAIN = "def test_plain():\n    pass\n"
TESTS = {
    "tests/core/test_basics.py": PLAIN,
    "tests/kernels/test_tiles.py": PLAIN,
    "tests/kernels/deep/test_wide.py": PLAIN,
    "tests/extras/test_lonely.py": PLAIN,
}
WORKFLOW = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - run: pytest tests/core
      - run: {command}
"""


def audit(tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]) -> dict:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW.format(command=command), encoding="utf-8")
    for name, text in TESTS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
    return json.loads(capsys.readouterr().out)


def unscheduled(doc: dict) -> set[str]:
    return {f["path"] for f in doc["findings"] if f["kind"] == "unscheduled"}


@pytest.mark.parametrize(
    "command",
    [
        'pytest tests/kernels -k "$FILTER"',
        'pytest tests/kernels -k "$(cat filter.txt)"',
        "pytest tests/kernels/$(cat picked.txt)",
        "pytest tests/kernels --junitxml=$REPORT_DIR/out.xml -m ${{ inputs.marks }}",
    ],
)
def test_a_bounded_unread_step_leaves_tests_outside_its_reach_unscheduled(tmp_path, capsys, command):
    doc = audit(tmp_path, command, capsys)
    assert doc["unread"] and all("it can run only tests under tests/kernels" in u["reason"] for u in doc["unread"])
    assert unscheduled(doc) == {"tests/extras/test_lonely.py"}
    assert doc["undetermined_unread"] == 2  # the two files under tests/kernels, and only those


@pytest.mark.parametrize(
    "command",
    [
        "pytest tests/kernels $(cat more.txt)",
        "pytest $EXTRA tests/kernels",
        "pytest --pyargs tests.kernels -k $K",
        "pytest -k $K",
    ],
)
def test_an_unread_step_nothing_bounds_leaves_every_test_undetermined(tmp_path, capsys, command):
    doc = audit(tmp_path, command, capsys)
    assert doc["unread"] and not any("can run only" in u["reason"] for u in doc["unread"])
    assert unscheduled(doc) == set()
    assert doc["undetermined_unread"] == 3


def test_schedule_json_names_the_reach_of_a_bounded_entry_only(tmp_path, capsys):
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    text = WORKFLOW.format(command='pytest tests/kernels -k "$FILTER"') + "      - run: pytest $(cat all)\n"
    (root / ".github" / "workflows" / "ci.yml").write_text(text, encoding="utf-8")
    assert main(["schedule", str(root), "--format", "json"]) == 0
    unread = json.loads(capsys.readouterr().out)["unread"]
    assert [u.get("reach") for u in unread] == [["tests/kernels"], None]


@pytest.mark.parametrize(
    ("path", "bounded"),
    [("tests/kernels/test_a.py", True), ("tests/kernels", True), ("tests/kernelsx/test_a.py", False), ("tests/test_a.py", False)],
)
def test_may_run_is_the_reach_as_folders(path, bounded):
    origin = Origin(file="ci.yml", line=1, job="j")
    assert UnreadJob(origin=origin, reason="r", reach=("tests/kernels/",)).may_run(path) is bounded
    assert UnreadJob(origin=origin, reason="r").may_run(path)  # nothing bounds it: it may run anything


# -- the property: a bounded entry never hides a test it could run -------------------------------------------------

FOLDERS = ("tests/a", "tests/b", "tests/a/deep")
late_part = st.sampled_from(["$(cat list)", "$NAME", "__UNRESOLVED_0", "`ls`"])
word = st.one_of(
    st.sampled_from(FOLDERS),
    st.tuples(st.sampled_from(FOLDERS), late_part).map(lambda t: f"{t[0]}/{t[1]}"),
    late_part,
    st.tuples(st.sampled_from(["-k", "-m", "--junitxml", "-p"]), late_part).map(" ".join),
    st.just("-v"),
    st.just("--pyargs"),
)


def could_run(words: list[str], candidate: str) -> bool:
    """The oracle, written apart from the reader: whether `pytest WORDS` may run a file at `candidate`."""
    if "--pyargs" in words or not any(w.split()[0] not in ("-v",) and not w.startswith("-") for w in words):
        return True  # module names, or pytest's own default paths
    for w in words:
        if w.startswith("-"):
            continue
        literal = w.split("$", 1)[0].split("`", 1)[0].split("__UNRESOLVED_", 1)[0]
        if literal == w:
            if candidate.startswith(w + "/"):
                return True
        elif "/" not in literal:
            return True  # the run-time part may be any path
        elif candidate.startswith(literal.rsplit("/", 1)[0] + "/"):
            return True
    return False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(word, min_size=1, max_size=4), candidate=st.sampled_from([f"{f}/test_x.py" for f in FOLDERS]))
def test_a_bounded_reach_holds_every_path_the_command_could_run(words, candidate):
    """`reach` is None or holds every test file the command could run, for any mix of run-time words."""
    args = [part for w in words for part in (w.split(" ", 1) if w.startswith("-") else [w])]  # as the shell splits them
    found = reach(args, ".")
    if could_run(words, candidate):
        assert found is None or any(candidate.startswith(p.rstrip("/") + "/") for p in found), (words, found)
