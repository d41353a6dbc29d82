"""The time and memory the hostile inputs of class hierarchies, deep trees and wide trees cost, each in a fresh process.

    python ci/hostile_bounds.py            # every case; exit 1 when one passes its bound
    python ci/hostile_bounds.py --only flat-3000-classes

Each case writes its checkout (not measured), then runs one `specmatrix` command through `matrix.cli.main.main` in the
same process, measuring the CPU time of that call (`time.process_time`, so a loaded machine's waiting does not count)
and the process's peak resident size (`ru_maxrss`, interpreter and imports included). The bound of every case is
10 s of CPU and 1 GiB; the verdict each command gives is printed beside it (a module past a bound is named as not
read, never dropped).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CPU_SECONDS = 10.0
PEAK_MB = 1024

SETUP = """
import contextlib, io, json, os, resource, sys, time
from pathlib import Path
os.environ["SPECMATRIX_NO_CACHE"] = "1"
from matrix.cli.main import main
import matrix.cli.pytest_audit, matrix.cli.guards, matrix.pytest_suites.run, matrix.registered_suite.tree  # imported before
work = Path(sys.argv[1])
WORKFLOW = "on: push\\njobs:\\n  j:\\n    runs-on: ubuntu-latest\\n    steps:\\n      - run: python -m pytest tests\\n"
def checkout(files):
    root = work / "repo"
    for name, text in {".github/workflows/ci.yml": WORKFLOW, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root
def cli(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([str(a) for a in argv])
    return code, out.getvalue()
"""
TAIL = """
start = time.process_time()
code, out = work_()
cpu = time.process_time() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
try:
    doc = json.loads(out)
    said = f"{doc.get('tests', doc.get('test_files'))} tests, findings " + ",".join(sorted({f['kind'] for f in doc['findings']}))
    said += "; " + "; ".join(f["reason"][:90] for f in doc["findings"] if f["kind"] == "unparsable")[:200]
except ValueError:
    said = out[:120]
print(json.dumps({"cpu": cpu, "peak_mb": peak, "exit": code, "said": said}))
"""
# Each case: code that builds its input, then defines `work_()` returning (exit code, stdout).
CASES = {
    # 3,000 classes side by side, one test each.
    "flat-3000-classes": """
        body = "".join(f"class TestC{i}:\\n    def test_a(self):\\n        pass\\n\\n\\n" for i in range(3000))
        root = checkout({"tests/test_flat.py": body})
        def work_():
            return cli("pytest-audit", root, "--jobs", "1", "--format", "json")
    """,
    # 3,000 classes, each the subclass of the one before; one test, inherited through up to 2,999 bases.
    "chained-3000-classes": """
        body = "class TestC0:\\n    def test_a(self):\\n        pass\\n\\n\\n"
        body += "".join(f"class TestC{i}(TestC{i - 1}):\\n    pass\\n\\n\\n" for i in range(1, 3000))
        root = checkout({"tests/test_chain.py": body})
        def work_():
            return cli("pytest-audit", root, "--jobs", "1", "--format", "json")
    """,
    # The same chain where every class adds a test: pytest would collect 4.5 million; the module is named as not read.
    "chained-3000-classes-each-adding-a-test": """
        body = "class TestC0:\\n    def test_0(self):\\n        pass\\n\\n\\n"
        grow = "class TestC{}(TestC{}):\\n    def test_{}(self):\\n        pass\\n\\n\\n"
        body += "".join(grow.format(i, i - 1, i) for i in range(1, 3000))
        root = checkout({"tests/test_grow.py": body})
        def work_():
            return cli("pytest-audit", root, "--jobs", "1", "--format", "json")
    """,
    # 3,000 classes, each deriving from the two before it (multiple inheritance all the way down).
    "two-bases-3000-classes": """
        body = "class TestC0:\\n    def test_a(self):\\n        pass\\n\\n\\nclass TestC1(TestC0):\\n    pass\\n\\n\\n"
        body += "".join(f"class TestC{i}(TestC{i - 1}, TestC{i - 2}):\\n    pass\\n\\n\\n" for i in range(2, 3000))
        root = checkout({"tests/test_two.py": body})
        def work_():
            return cli("pytest-audit", root, "--jobs", "1", "--format", "json")
    """,
    # 3,000 chained classes, each with a mark of its own (marks are gathered over the MRO).
    "chained-3000-marked-classes": """
        body = "import pytest\\n\\n\\nclass TestC0:\\n    def test_a(self):\\n        pass\\n\\n\\n"
        body += "".join(f"@pytest.mark.m{i}\\nclass TestC{i}(TestC{i - 1}):\\n    pass\\n\\n\\n" for i in range(1, 3000))
        root = checkout({"tests/test_marked.py": body})
        def work_():
            return cli("pytest-audit", root, "--jobs", "1", "--format", "json")
    """,
    # 100,000 test functions of a module's own (no inheritance): read whole, as pytest collects them.
    "module-of-100000-test-functions": """
        body = "".join(f"def test_{i}():\\n    pass\\n" for i in range(100_000))
        root = checkout({"tests/test_many.py": body})
        def work_():
            return cli("pytest-audit", root, "--jobs", "1", "--format", "json")
    """,
    # A test file 1,000 folders deep (pytest collects it; the walk once stopped at 32).
    "file-1000-folders-deep": """
        root = checkout({"tests/test_top.py": "def test_top():\\n    pass\\n"})
        here = os.open(root / "tests", os.O_RDONLY)
        for _ in range(1000):  # one level at a time: pathlib and os.makedirs recurse once per missing folder
            os.mkdir("d", dir_fd=here)
            nxt = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = nxt
        fd = os.open("test_deep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=here)
        os.write(fd, b"def test_deep():\\n    pass\\n")
        os.close(fd)
        os.close(here)
        def work_():
            return cli("pytest-audit", root, "--jobs", "1", "--format", "json")
    """,
    # 20,000 folders, one test file each.
    "20000-folders": """
        root = checkout({f"tests/f{i}/test_f{i}.py": "def test_f():\\n    pass\\n" for i in range(20000)})
        def work_():
            return cli("pytest-audit", root, "--jobs", "1", "--format", "json")
    """,
    # The guard audit on the chain of 3,000 classes that each add a test (its finder inherits tests per class).
    "guards-chained-3000-classes-each-adding-a-test": """
        body = "import unittest\\nfrom ci import register_cuda_ci\\nregister_cuda_ci(est_time=1, suite='s')\\n\\n\\n"
        body += "class TestC0(unittest.TestCase):\\n    def test_0(self):\\n        pass\\n\\n\\n"
        grow = "class TestC{}(TestC{}):\\n    def test_{}(self):\\n        pass\\n\\n\\n"
        body += "".join(grow.format(i, i - 1, i) for i in range(1, 3000))
        root = work / "suite"
        root.mkdir()
        (root / "test_grow.py").write_text(body)
        def work_():
            return cli("guards", root, "--no-workflows", "--no-cache", "--format", "json")
    """,
}


def run_case(name: str) -> dict[str, object]:
    code = SETUP + textwrap.dedent(CASES[name]) + TAIL
    work = tempfile.mkdtemp(prefix="hostile-")
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, work], capture_output=True, text=True, check=False, cwd=REPO, timeout=900
        )
    finally:
        subprocess.run(["rm", "-rf", work], check=False)  # shutil.rmtree recurses once per folder level
    if done.returncode != 0:
        return {"cpu": float("nan"), "peak_mb": float("nan"), "exit": None, "said": done.stderr.strip()[-300:]}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], choices=sorted(CASES), help="run only this case (repeatable)")
    args = parser.parse_args()
    over = 0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO, check=False)
    print(f"commit {commit.stdout.strip()}, bound {CPU_SECONDS:.0f} s CPU and {PEAK_MB} MB per case")
    for name in args.only or CASES:
        result = run_case(name)
        cpu, peak = float(result["cpu"]), float(result["peak_mb"])  # type: ignore[arg-type]
        ok = cpu <= CPU_SECONDS and peak <= PEAK_MB
        over += not ok
        print(f"{'ok  ' if ok else 'OVER'} {name:48} {cpu:7.2f} s CPU {peak:7.0f} MB  exit {result['exit']}  {result['said']}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
