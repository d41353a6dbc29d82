"""`python -m tools.gpu.mutate [--mutation NAME ...] --out DIR -- PYTEST_ARGS`: run a selection under each mutation.

Each mutation is applied to a fresh overlay of the installed sglang (matrix/gpu/mutations.py), pytest runs in a
child process with the overlay first on PYTHONPATH and writes its specmatrix report, and the cells that went red
are compared with the mutation's expected red cells. `--baseline` adds a run without any mutation (all green).
Writes DIR/mutations.{json,md} and DIR/<mutation>.json. Exit 0: every row as expected; 1: a row is not; 2: a
mutation could not be applied (its old text is not in the installed sglang) or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import EXIT_FINDINGS, EXIT_OK, SpecmatrixError
from matrix.core.loader import load_matrix
from matrix.core.report import read_report
from matrix.gpu.mutations import MUTATIONS, SourceMutation, build_overlay, mutation_named, overlay_env
from tools.gpu.mutation_table import MutationRow, markdown, mutation_row

BASELINE = "none"


def run_pytest(pytest_args: Sequence[str], report: Path, env: Mapping[str, str]) -> int:
    command = [sys.executable, "-m", "pytest", *pytest_args, "--matrix-report", str(report)]
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, env=dict(env), check=False).returncode


def run_one(mutation: SourceMutation | None, pytest_args: Sequence[str], out: Path) -> MutationRow:
    """One pytest run (under the mutation's overlay, or plain for the baseline) and its row."""
    name = mutation.name if mutation else BASELINE
    report = out / f"{name}.json"
    with tempfile.TemporaryDirectory(prefix=f"specmatrix-{name}-") as tmp:
        env = dict(os.environ)
        if mutation is not None:
            env = overlay_env(build_overlay(mutation, Path(tmp)), env)
        start = time.perf_counter()
        code = run_pytest(pytest_args, report, env)
        print(f"{name}: pytest exited {code} after {time.perf_counter() - start:.1f} s", flush=True)
    results = read_report(report).cells
    return mutation_row(name, mutation.red if mutation else "", load_matrix().cells, results)


def write_table(rows: Sequence[MutationRow], out: Path) -> None:
    write_text_atomic(out / "mutations.json", json.dumps([r.as_dict() for r in rows], indent=2) + "\n")
    write_text_atomic(out / "mutations.md", markdown(rows))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gpu.mutate", description=__doc__)
    parser.add_argument("--mutation", action="append", default=[], help="a mutation name (repeatable; default: all)")
    parser.add_argument("--baseline", action="store_true", help="also run once without any mutation")
    parser.add_argument("--list", action="store_true", help="print the mutations and exit")
    parser.add_argument("--out", type=Path, default=Path("gpu-mutations"))
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: the pytest selection")
    args = parser.parse_args(argv)
    try:
        if args.list:
            for m in MUTATIONS:
                print(f"{m.name}: {m.module}; red: {m.red}; {m.why}")
            return EXIT_OK
        chosen = [mutation_named(n) for n in args.mutation] or list(MUTATIONS)
        pytest_args = [a for a in args.pytest_args if a != "--"] or ["tests/gpu"]
        out: Path = args.out
        out.mkdir(parents=True, exist_ok=True)
        plan: list[SourceMutation | None] = [*chosen, *([None] if args.baseline else [])]
        rows: list[MutationRow] = []
        for mutation in plan:
            rows.append(run_one(mutation, pytest_args, out))
            write_table(rows, out)  # after every run: a time-boxed host keeps what finished
    except SpecmatrixError as exc:
        print(f"specmatrix mutate: {exc}", file=sys.stderr)
        return exc.exit_code
    print(markdown(rows), end="")
    for row in rows:
        for cell in row.missed:
            print(f"{row.mutation}: expected red, stayed green: {cell}")
        for cell in row.stray:
            print(f"{row.mutation}: red, but the mutation should not reach it: {cell}")
    return EXIT_OK if all(r.ok for r in rows) else EXIT_FINDINGS


if __name__ == "__main__":
    sys.exit(main())
