"""Check the declared flashinfer schedule against the test matrix flashinfer's PR Test workflow builds.

Usage:
    python ci/check_flashinfer_schedule.py --checkout ~/src/flashinfer [--schedule ci/schedules/flashinfer-pr-test.toml]

The matrix is read from the checkout's `.github/workflows/pr-test.yml` as `specmatrix schedule` reads it (the
`setup` job's jq steps, evaluated with the jq library: `matrix.schedule.github.jq_outputs`). Every declared entry must
name a leg of that matrix (`job = "test (LEG NAME)"`) with the leg's runner labels, and a declared `script` must be
the leg's script. Prints each mismatch; exit 1 when there is one, 0 when every entry matches, 2 when the matrix
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from matrix.core.tomlfields import read_toml_file  # noqa: E402
from matrix.schedule.github.jq_outputs import job_outputs  # noqa: E402
from matrix.schedule.load import TreeLoader  # noqa: E402
from matrix.schedule.services.declared import Declared, parse_declared  # noqa: E402
from matrix.schedule.yamldoc import load_yaml  # noqa: E402

WORKFLOW = ".github/workflows/pr-test.yml"


def matrix_legs(
    workflow: Mapping[str, Any], load: TreeLoader, job: str = "setup", output: str = "test_matrix"
) -> list[dict[str, Any]]:
    """The `include` legs of the matrix the workflow's `job` computes as `output`, [] when it cannot be read."""
    jobs = workflow.get("jobs")
    spec = jobs.get(job) if isinstance(jobs, Mapping) else None
    if not isinstance(spec, Mapping):
        return []
    found = job_outputs(spec, load).get(output)
    if found is None:
        return []
    value = json.loads(found[0])
    legs = value.get("include") if isinstance(value, Mapping) else None
    return [leg for leg in legs if isinstance(leg, dict)] if isinstance(legs, list) else []


def mismatches(declared: Declared, legs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each declared entry that names no leg, or names one with other labels or another script."""
    by_name = {f"test ({leg.get('name')})": leg for leg in legs}
    out: list[str] = []
    for entry in declared.entries:
        leg = by_name.get(entry.job)
        if leg is None:
            out.append(f"{entry.job}: no leg of the workflow's matrix has this name")
            continue
        if list(entry.labels) != leg.get("runner"):
            out.append(f"{entry.job}: declared labels {list(entry.labels)}, the matrix gives {leg.get('runner')}")
        if entry.script is not None and entry.script != f"scripts/{leg.get('script')}":
            out.append(f"{entry.job}: declared script {entry.script}, the matrix gives scripts/{leg.get('script')}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, required=True, help="a flashinfer checkout (work tree)")
    parser.add_argument("--schedule", type=Path, default=ROOT / "ci/schedules/flashinfer-pr-test.toml")
    args = parser.parse_args(argv)
    load = TreeLoader(args.checkout)
    text = load(WORKFLOW)
    if text is None:
        print(f"{args.checkout}: {WORKFLOW} {load.refused.get(WORKFLOW, 'cannot be read')}", file=sys.stderr)
        return 2
    legs = matrix_legs(load_yaml(text, WORKFLOW), load)
    if not legs:
        print(f"{WORKFLOW}: the test matrix cannot be read from the workflow", file=sys.stderr)
        return 2
    declared = parse_declared(read_toml_file(args.schedule), str(args.schedule))
    problems = mismatches(declared, legs)
    for problem in problems:
        print(problem)
    print(f"{len(declared.entries)} declared entries, {len(legs)} matrix legs, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
