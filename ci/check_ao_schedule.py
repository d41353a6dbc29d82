"""Check the declared pytorch/ao schedule against the workflows that start its test files as scripts.

Usage:
    python ci/check_ao_schedule.py --checkout ~/src/ao [--schedule ci/schedules/pytorch-ao-ci.toml]

`specmatrix schedule` reads the `pytest` lines of pytorch/ao's workflows (`with.script` of pytorch/test-infra's
linux_job_v2/v3, and the shell scripts it runs) but not `python FILE`, which runs the file's `__main__`
(`run_tests()`). The declared schedule stands in for those runs only. Every declared entry's test file must be
started as `python FILE` by a workflow that names the entry's runner label, in the workflow's text or in a shell
script the workflow runs (`./PATH.sh`). Prints each mismatch; exit 1 when there is one, 0 when every entry
matches, 2 when no workflow can be read.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from matrix.core.errors import ConfigError  # noqa: E402
from matrix.core.tomlfields import read_toml_file  # noqa: E402
from matrix.schedule.load import TreeLoader  # noqa: E402
from matrix.schedule.services.declared import Declared, parse_declared  # noqa: E402

WORKFLOWS = ".github/workflows"
# `python FILE` / `python3 FILE` at the start of a line (after indentation or an env prefix is not matched: the
# workflows write them bare).
PYTHON_RUN = re.compile(r"^\s*python3?\s+(\S+\.py)\s*$", re.MULTILINE)
SCRIPT_RUN = re.compile(r"^\s*(?:bash\s+)?\.?/?(\S+\.sh)\b", re.MULTILINE)


def _norm(path: str) -> str:
    return path.removeprefix("./")


def python_runs(text: str) -> set[str]:
    """The files a script text starts as `python FILE`."""
    return {_norm(m) for m in PYTHON_RUN.findall(text)}


def started_files(workflow: str, load: TreeLoader) -> set[str]:
    """Files started as `python FILE` by the workflow's text or by the shell scripts it runs (one level)."""
    files = python_runs(workflow)
    for script in SCRIPT_RUN.findall(workflow):
        text = load(_norm(script))
        if text is not None:
            files |= python_runs(text)
    return files


def mismatches(declared: Declared, workflows: Mapping[str, str], load: TreeLoader) -> list[str]:
    """Each declared test file that no workflow naming the entry's labels starts as `python FILE`."""
    started = {name: started_files(text, load) for name, text in workflows.items()}
    out: list[str] = []
    for entry in declared.entries:
        words = shlex.split(entry.command or "")
        files = [w for w in words[1:] if w.endswith(".py")]
        if not files:
            out.append(f"{entry.job}: declares no test file")
        for file in files:
            if not any(file in started[name] and all(label in workflows[name] for label in entry.labels) for name in workflows):
                out.append(f"{entry.job}: no workflow on {list(entry.labels)} starts `python {file}`")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, required=True, help="a pytorch/ao checkout (work tree)")
    parser.add_argument("--schedule", type=Path, default=ROOT / "ci/schedules/pytorch-ao-ci.toml")
    args = parser.parse_args(argv)
    load = TreeLoader(args.checkout)
    folder = args.checkout / WORKFLOWS
    names = sorted(p.name for p in folder.glob("*.yml")) if folder.is_dir() else []
    workflows = {n: t for n in names if (t := load(f"{WORKFLOWS}/{n}")) is not None}
    if not workflows:
        print(f"{args.checkout}: no workflow under {WORKFLOWS} can be read", file=sys.stderr)
        return 2
    try:
        declared = parse_declared(read_toml_file(args.schedule), str(args.schedule))
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    problems = mismatches(declared, workflows, load)
    for problem in problems:
        print(problem)
    print(f"{len(declared.entries)} declared entries, {len(workflows)} workflows, {len(problems)} mismatches")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
