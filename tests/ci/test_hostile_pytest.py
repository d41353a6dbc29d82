"""pytest itself as the oracle for what a command collects, on checkouts an adversary shapes.

Each case is a checkout and one CI command. Real pytest collects it (`--collect-only`, in a subprocess): the node ids
it lists, or none when it stops (a path or node id that names nothing: exit 4). The audit reads the same checkout
with a schedule of that one command. Every test pytest collects must be known to the audit and not called
unselected; every test the audit calls certain to run (or skip) must be one pytest collects.

The time and memory these inputs cost at full size (3,000 classes, thousands of folders) are measured by
`ci/hostile_bounds.py`, not here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.core.runner_files import load_runners
from matrix.pytest_suites.audit import ItemOutcome
from matrix.pytest_suites.run import AuditInput, item_outcomes

PLAIN = "def test_one():\n    pass\n\n\ndef test_two():\n    pass\n"
RUNNER = "1-gpu-h100"


def chain(count: int, tests_in_root: int = 1) -> str:
    """`count` classes, each the subclass of the one before; the tests are defined in the first only."""
    root = "".join(f"    def test_r{i}(self):\n        pass\n\n" for i in range(tests_in_root))
    body = f"class TestC0:\n{root}\n"
    body += "".join(f"class TestC{i}(TestC{i - 1}):\n    pass\n\n\n" for i in range(1, count))
    return body


def nested(depth: int) -> str:
    lines = [f"{'    ' * i}class TestN{i}:" for i in range(depth)]
    return "\n".join(lines) + f"\n{'    ' * depth}def test_deep(self):\n{'    ' * (depth + 1)}pass\n"


DEEP = "/".join(f"d{i}" for i in range(40))
CASES = {
    "missing-path": ({"tests/test_a.py": PLAIN}, "pytest tests/test_a.py tests/nowhere.py"),
    "missing-folder": ({"tests/test_a.py": PLAIN}, "pytest tests missing_dir"),
    "missing-node-id": ({"tests/test_a.py": PLAIN}, "pytest tests/test_a.py::test_one tests/test_a.py::test_absent"),
    "missing-class-node-id": ({"tests/test_a.py": PLAIN}, "pytest tests/test_a.py::TestNone::test_one"),
    "node-id-of-a-missing-file": ({"tests/test_a.py": PLAIN}, "pytest tests/test_a.py tests/gone.py::test_one"),
    "quoted-glob-matching-nothing": ({"tests/test_a.py": PLAIN}, "pytest 'tests/none_*.py' tests/test_a.py"),
    "present-node-ids": ({"tests/test_a.py": PLAIN}, "pytest tests/test_a.py::test_one tests/test_a.py::test_two"),
    "file-40-folders-deep": ({f"tests/{DEEP}/test_deep.py": PLAIN, "tests/test_a.py": PLAIN}, "pytest tests"),
    "inherited-through-12-bases": ({"tests/test_c.py": chain(13, 2)}, "pytest tests"),
    "inherited-through-300-bases": ({"tests/test_c.py": chain(300)}, "pytest tests"),
    "class-nested-12-deep": ({"tests/test_n.py": nested(12)}, "pytest tests"),
    "diamond-override": (
        {
            "tests/test_d.py": "class Base:\n    def test_x(self):\n        pass\n\n\n"
            "class Left(Base):\n    pass\n\n\nclass Right(Base):\n    def test_x(self):\n        pass\n\n\n"
            "class TestBoth(Left, Right):\n    pass\n"
        },
        "pytest tests",
    ),
}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def collected(root: Path, command: str) -> tuple[int, set[str]]:
    """pytest's exit status and the node ids it collects for `command` (none when it stops)."""
    import shlex

    args = shlex.split(command)[1:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return done.returncode, listed(done)


def listed(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The node ids `--collect-only` lists, or none when pytest stops: exit 2 (interrupted by collection errors; it
    lists what it got, but runs none of it), 3 (internal error) or 4 (usage: a path or node id not found)."""
    if done.returncode in (2, 3, 4):
        return set()
    return {line.strip() for line in done.stdout.splitlines() if "::" in line and not line.startswith(("ERROR", " "))}


def static(root: Path, command: str, scratch: Path) -> dict[str, ItemOutcome]:
    plan = scratch / "plan.toml"
    plan.write_text(f'[[entry]]\njob = "j"\nlabels = ["{RUNNER}"]\npytest = {json.dumps(command)}\n', encoding="utf-8")
    outcomes, _ = item_outcomes(AuditInput(root=root, schedule_files=(plan,), workflows=False), load_runners())
    return outcomes


@pytest.mark.parametrize("name", list(CASES))
def test_the_audit_agrees_with_what_pytest_collects(tmp_path: Path, name: str) -> None:
    files, command = CASES[name]
    root = tmp_path / "repo"
    write(root, files)
    code, real = collected(root, command)
    said = static(root, command, tmp_path)
    wrong = [f"{n}: pytest collects it; the audit says {said.get(n, 'nothing')}" for n in sorted(real)]
    wrong = [w for n, w in zip(sorted(real), wrong, strict=True) if said.get(n) in (None, ItemOutcome.NOT_SELECTED)]
    wrong += [
        f"{n}: the audit says {o.value}; pytest does not collect it (exit {code})"
        for n, o in sorted(said.items())
        if o in (ItemOutcome.RUNS, ItemOutcome.SKIPS) and n not in real
    ]
    assert not wrong, "\n".join([command, *wrong])


# --- files and folders pytest cannot read ---------------------------------------------------------------------

STATIC = """
import json, sys
from pathlib import Path
from matrix.core.runner_files import load_runners
from matrix.pytest_suites.run import AuditInput, item_outcomes
root, plan = Path(sys.argv[1]), Path(sys.argv[2])
outcomes, _ = item_outcomes(AuditInput(root=root, schedule_files=(plan,), workflows=False), load_runners())
print(json.dumps(outcomes))
"""
UNREADABLE = {
    "tests/ok/test_ok.py": PLAIN,
    "tests/locked/test_locked.py": PLAIN,
    "tests/guarded/conftest.py": "VALUE = 1\n",
    "tests/guarded/test_guarded.py": PLAIN,
    "tests/private/test_private.py": PLAIN,
}


def unprivileged(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`argv` run where the permissions apply: as this user, or as root without the capabilities that let root read
    anything (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so that an interpreter under root's own home still runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS"))}
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", HOME=str(cwd), SPECMATRIX_NO_CACHE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    if os.geteuid() == 0:
        dropped = "-dac_override,-dac_read_search"
        argv = ["setpriv", f"--bounding-set={dropped}", f"--inh-caps={dropped}", *argv]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300)


@pytest.mark.parametrize(
    "command",
    ["pytest tests", "pytest tests/ok", "pytest tests --continue-on-collection-errors", "pytest tests/guarded/test_guarded.py"],
)
def test_files_and_folders_pytest_cannot_read_stop_what_they_stop(command: str) -> None:
    import shlex
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="unreadable-"))  # a folder of its own, its modes set below
    try:
        work.chmod(0o755)
        root = work / "repo"
        write(root, UNREADABLE)
        for path in root.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        root.chmod(0o755)
        (root / "tests" / "locked").chmod(0)  # a folder no one may list
        (root / "tests" / "guarded" / "conftest.py").chmod(0)  # a conftest no one may read
        (root / "tests" / "private" / "test_private.py").chmod(0)  # a test file no one may read
        plan = work / "plan.toml"
        plan.write_text(f'[[entry]]\njob = "j"\nlabels = ["{RUNNER}"]\npytest = {json.dumps(command)}\n', encoding="utf-8")
        plan.chmod(0o644)
        real_run = unprivileged(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *shlex.split(command)[1:]], root
        )
        real = listed(real_run)
        audit = unprivileged([sys.executable, "-c", STATIC, str(root), str(plan)], work)
        assert audit.returncode == 0, audit.stderr
        said = {n: ItemOutcome(o) for n, o in json.loads(audit.stdout).items()}
        wrong = [
            f"{n}: pytest collects it; the audit says {said.get(n)}"
            for n in real
            if said.get(n) in (None, ItemOutcome.NOT_SELECTED)
        ]
        wrong += [
            f"{n}: the audit says {o.value}; pytest does not collect it"
            for n, o in said.items()
            if o in (ItemOutcome.RUNS, ItemOutcome.SKIPS) and n not in real
        ]
        assert not wrong, "\n".join([command, f"pytest exit {real_run.returncode}", *wrong])
        # And the report names each file and folder it could not read.
        report = unprivileged(
            [sys.executable, "-m", "matrix", "pytest-audit", str(root), "--schedule-file", str(plan), "--format", "json"], work
        )
        assert report.returncode == 1, report.stderr
        unread = {f["path"]: f["reason"] for f in json.loads(report.stdout)["findings"] if f["kind"] == "unparsable"}
        assert "cannot be listed" in unread.get("tests/locked", ""), unread
        if command != "pytest tests/ok":
            assert "cannot be read" in unread.get("tests/guarded/conftest.py", ""), unread
    finally:
        for path in [work, *work.rglob("*")]:
            with contextlib.suppress(OSError):
                path.chmod(0o755)
        shutil.rmtree(work, ignore_errors=True)
