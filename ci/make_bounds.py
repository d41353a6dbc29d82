"""Time and memory of `specmatrix pytest-audit` on hostile Makefiles, each in a fresh interpreter.

    python ci/make_bounds.py [--limit-seconds 10] [--limit-mb 1024]

Each case is a small checkout written here (a workflow step running `make check`, a Makefile built to make a
reader slow or large: variables nested to expand to gigabytes, a Makefile including itself, sub-makes calling
each other, a long prerequisite chain, a quadratic `$(foreach)`, many run-time conditionals, forty calls of the
nested case in one step). Prints, per case, the exit code, wall seconds, peak resident memory and the first unread
reason; exits 1 when a case passes a limit or ends in a traceback (exit code other than 0 and 1).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = """
import json, resource, sys, time
start = time.perf_counter()
from matrix.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"rc": code, "seconds": time.perf_counter() - start,
                  "mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), file=sys.stderr)
"""


def nested(levels: int, fan: int, operator: str = "=") -> str:
    lines = [f"L0 {operator} " + " ".join(["x"] * fan)]
    lines += [f"L{i} {operator} " + " ".join([f"$(L{i - 1})"] * fan) for i in range(1, levels + 1)]
    return "\n".join(lines) + f"\ncheck:\n\tpytest tests $(L{levels})\n"


CASES: dict[str, tuple[str, str]] = {
    # name: (Makefile, the step's commands)
    "nested variables, 1.3 KB": (nested(12, 16), "make check"),
    "nested simple variables": (nested(12, 10, ":="), "make check"),
    "self-include": ("include Makefile\ncheck:\n\tpytest tests\n", "make check"),
    "make calls itself": ("check:\n\t$(MAKE) check\n\tpytest tests\n", "make check"),
    "make spiral": ("X ?= a\ncheck:\n\t$(MAKE) check X=$(X)x\n", "make check"),
    "prerequisite chain of 3000": (
        "check: t0\n" + "".join(f"t{i}: t{i + 1}\n" for i in range(3000)) + "t3000:\n\tpytest tests\n",
        "make check",
    ),
    "2000 targets without recipes": (
        "check: " + " ".join(f"t{i}" for i in range(2000)) + "\n\tpytest tests\n" + "".join(f"t{i}:\n" for i in range(2000)),
        "make check",
    ),
    "quadratic foreach": (
        "W := " + " ".join(f"w{i}" for i in range(3000)) + "\ncheck:\n\tpytest $(foreach a,$(W),$(foreach b,$(W),$(a)$(b)))\n",
        "make check",
    ),
    "many run-time conditionals": (
        "".join(f"ifdef UNSET_{i}\nX{i} = 1\nendif\n" for i in range(40)) + "check:\n\tpytest tests\n",
        "make check",
    ),
    "recursive call function": ("F = $(call F,$(1)x)\ncheck:\n\tpytest $(call F,a)\n", "make check"),
    "forty calls in one step": (nested(12, 16), "\n".join(["make check"] * 40)),
    "2000 recipe lines": ("check:\n" + "".join(f"\tpytest tests/t{i}\n" for i in range(2000)), "make check"),
}


def checkout(where: Path, makefile: str, run: str) -> Path:
    (where / ".github" / "workflows").mkdir(parents=True)
    flow = "on: [push]\njobs:\n  t:\n    runs-on: [self-hosted, sm86]\n    steps:\n      - run: |\n" + textwrap.indent(
        run, " " * 10
    )
    (where / ".github" / "workflows" / "ci.yml").write_text(flow + "\n", encoding="utf-8")
    (where / "Makefile").write_text(makefile, encoding="utf-8")
    (where / "tests").mkdir()
    (where / "tests" / "test_a.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    return where


def measure(name: str, makefile: str, run: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as scratch:
        root = checkout(Path(scratch) / "repo", makefile, run)
        env = {"PYTHONPATH": str(ROOT), "SPECMATRIX_NO_CACHE": "1", "PATH": "/usr/bin:/bin"}
        done = subprocess.run(
            [sys.executable, "-c", CHILD, "pytest-audit", str(root), "--format", "json"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=120,
        )
        figures = (
            json.loads(done.stderr.strip().splitlines()[-1]) if done.stderr.strip().startswith("{") or "{" in done.stderr else {}
        )
        report = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
        reasons = [u.get("reason", "") for u in report.get("unread", [])]
        return {
            "case": name,
            "makefile_bytes": len(makefile),
            **figures,
            "unread": reasons[:1],
            "traceback": "Traceback" in done.stderr,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-seconds", type=float, default=10.0)
    parser.add_argument("--limit-mb", type=float, default=1024.0)
    args = parser.parse_args(argv)
    failed = False
    for name, (makefile, run) in CASES.items():
        row = measure(name, makefile, run)
        over = row.get("traceback") or row.get("rc") not in (0, 1) or float(row.get("seconds", 1e9)) > args.limit_seconds  # type: ignore[arg-type]
        over = over or float(row.get("mb", 1e9)) > args.limit_mb  # type: ignore[arg-type]
        failed = failed or bool(over)
        print(json.dumps(row))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
