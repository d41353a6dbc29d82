"""Write the CI registrations of an sglang checkout as the JSON that ci/bench_shards.py reads.

Every `register_<platform>_ci(...)` call under `test/registered` is read from the syntax tree with the guard
audit's own parser (matrix.guards.source); nothing is imported or run. A call that parser cannot read
statically (a computed suite, `**kwargs`, a missing est_time) is left out and counted on stderr.
Usage: python ci/extract_registrations.py SGLANG_CHECKOUT [--out ci/data/sglang-registrations-2026-07.json]
       [--platform cuda ...] [--taken "upstream main as of YYYY-MM-DD"]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import SpecmatrixError, UsageError
from matrix.guards.model import Platform
from matrix.guards.source import read_registrations
from matrix.registered_suite.tree import python_files

ROOT = Path(__file__).resolve().parent.parent
REGISTERED = Path("test") / "registered"
DEFAULT_OUT = ROOT / "ci" / "data" / "sglang-registrations-2026-07.json"
FORMAT_NOTE = "AST of register_*_ci calls under test/registered; est_time in seconds"


def registrations_of(checkout: Path, platforms: frozenset[Platform]) -> tuple[list[dict[str, Any]], list[str]]:
    """(records sorted by file then line, one note per file or call left out) for the chosen platforms."""
    base = checkout / REGISTERED
    if not base.is_dir():
        raise UsageError(f"{checkout}: no {REGISTERED.as_posix()} folder; pass the root of an sglang checkout")
    records: list[dict[str, Any]] = []
    left_out: list[str] = []
    for path in python_files(base):
        name = path.relative_to(checkout).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            left_out.append(f"{name}: cannot read ({exc})")
            continue
        if "register_" not in text:
            continue
        try:
            tree = ast.parse(text, filename=name)
        except (SyntaxError, ValueError) as exc:
            left_out.append(f"{name}: not valid Python ({exc})")
            continue
        for reg in read_registrations(tree, text):
            if reg.platform not in platforms:
                continue
            if reg.problem is not None or reg.est_time is None:
                left_out.append(f"{name}:{reg.line}: {reg.problem or 'no est_time'}")
                continue
            records.append(
                {
                    "backend": reg.platform.value.upper(),
                    "file": name,
                    "suite": reg.suite,
                    "nightly": reg.nightly,
                    "disabled": reg.disabled,
                    "est_time": float(reg.est_time),
                }
            )
    return records, left_out


def checkout_revision(checkout: Path) -> str:
    """`commit <sha> of <date>` when the checkout is a git clone, else a note that it is not."""
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), "log", "-1", "--format=%H %cs"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return "not a git checkout"
    fields = done.stdout.split()
    return f"commit {fields[0]} of {fields[1]}" if done.returncode == 0 and len(fields) == 2 else "not a git checkout"


def render(records: list[dict[str, Any]], source: str) -> str:
    """The document, one registration per line so that a regenerated file diffs line by line."""
    lines = ",\n".join(json.dumps(r, ensure_ascii=False) for r in records)
    return f'{{\n"source": {json.dumps(source, ensure_ascii=False)},\n"registrations": [\n{lines}\n]\n}}\n'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path, help="root of an sglang checkout (holds test/registered)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--platform",
        action="append",
        choices=[p.value for p in Platform],
        help="register_<platform>_ci calls to keep (repeatable; default cuda, all the benchmark reads)",
    )
    parser.add_argument("--taken", help="where and when, for the source line (default: the checkout's git commit)")
    args = parser.parse_args(argv)
    platforms = frozenset(Platform(p) for p in (args.platform or [Platform.CUDA.value]))
    try:
        records, left_out = registrations_of(args.checkout, platforms)
        taken = args.taken or f"sglang {checkout_revision(args.checkout)}"
        kept = ", ".join(sorted(p.value for p in platforms))
        write_text_atomic(args.out, render(records, f"{taken}: {kept} registrations, {FORMAT_NOTE}"))
    except SpecmatrixError as exc:
        print(f"extract_registrations: {exc}", file=sys.stderr)
        return exc.exit_code
    for note in left_out:
        print(f"left out: {note}", file=sys.stderr)
    print(f"{args.out}: {len(records)} registrations from {len({r['file'] for r in records})} files, {len(left_out)} left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
