"""Run one suite of this fixture the way sglang's CI does: each registered file as a script, one process per file.

Like `run_unittest_files` in sglang's python/sglang/test/ci/ci_utils.py: the command is `python3 FILE -f`, the
environment is inherited (so SPECMATRIX_LEDGER reaches every child), a file passes when it exits 0, and the run
goes on after a failure only with --continue-on-error. Registrations are read from the syntax tree, never imported.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def registered_for(suite: str) -> list[Path]:
    """Files under registered/ whose module-level register_*_ci(...) names `suite` and is not disabled."""
    chosen: list[Path] = []
    for path in sorted((HERE / "registered").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for stmt in tree.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id.startswith("register_")):
                continue
            given = {kw.arg: kw.value.value for kw in call.keywords if isinstance(kw.value, ast.Constant)}
            if given.get("suite") == suite and given.get("disabled") is None:
                chosen.append(path)
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--continue-on-error", action="store_true")
    args = parser.parse_args()
    env = dict(os.environ)
    # The suite's helpers stand in for an installed package.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    passed: list[str] = []
    failed: list[str] = []
    files = registered_for(args.suite)
    for path in files:
        name = path.relative_to(HERE).as_posix()
        print(f"Begin: python3 {name} -f", flush=True)
        code = subprocess.call(["python3", str(path), "-f"], cwd=HERE, env=env)
        (passed if code == 0 else failed).append(name)
        print(f"End: {name} exit {code}", flush=True)
        if code != 0 and not args.continue_on_error:
            break
    print(f"Test Summary: {len(passed)}/{len(files)} passed")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
