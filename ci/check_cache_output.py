"""Check that `specmatrix pytest-audit` prints the same bytes with its results cache as without it, on real trees.

For each tree (optionally with `--schedule-file`), in each format: the output of `--no-cache`, then of a run into a
fresh cache folder (cold: the cache written) and of a second run (warm: read back) must be equal byte for byte.
With `--edit`, the tree is copied, one test file is edited (a test appended) and one conftest.py or helper touched,
and the warm output after the edit must equal `--no-cache` on the edited copy.

Usage: python ci/check_cache_output.py TREE[::SCHEDULE_FILE] ... [--format text --format json] [--edit]
Prints the commit of this checkout, each command, and one line per tree and format; exit 1 on any difference.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def audit(tree: Path, schedule: str | None, fmt: str, cache: Path | None) -> tuple[int, bytes]:
    command = [sys.executable, "-m", "matrix", "pytest-audit", str(tree), "--format", fmt]
    if schedule:
        command += ["--schedule-file", schedule]
    command += ["--no-cache"] if cache is None else ["--cache-dir", str(cache)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stderr.decode(errors="replace"))
    return done.returncode, done.stdout


def edit(tree: Path) -> str:
    """Append a test to the last test file (by path) and touch a conftest.py: what the cache must notice."""
    tests = sorted(p for p in tree.rglob("test_*.py") if p.is_file() and not p.is_symlink())
    target = tests[-1]
    with target.open("a", encoding="utf-8") as handle:
        handle.write("\n\nimport pytest\n\n\n@pytest.mark.skip(reason='edited')\ndef test_added_by_the_check():\n    pass\n")
    for conftest in sorted(tree.rglob("conftest.py"))[:1]:
        conftest.touch()
    return str(target.relative_to(tree))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", help="TREE or TREE::SCHEDULE_FILE (relative to this checkout)")
    parser.add_argument("--format", action="append", dest="formats", choices=("text", "json"))
    parser.add_argument("--edit", action="store_true", help="also edit a copy of each tree and compare again")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    shape = "-m matrix pytest-audit TREE --format F [--no-cache | --cache-dir D]"
    print(f"specmatrix {commit.stdout.strip()}; {sys.executable} {shape}")
    bad = 0
    for spec in args.trees:
        tree_text, _, schedule = spec.partition("::")
        tree = Path(tree_text)
        for fmt in args.formats or ["text", "json"]:
            with tempfile.TemporaryDirectory(prefix="specmatrix-cache-check-") as scratch:
                cache = Path(scratch) / "cache"
                plain = audit(tree, schedule or None, fmt, None)
                cold = audit(tree, schedule or None, fmt, cache)
                warm = audit(tree, schedule or None, fmt, cache)
                same = plain == cold == warm
                line = (
                    f"{spec} {fmt}: cold {'same' if plain == cold else 'DIFFERS'}, warm {'same' if plain == warm else 'DIFFERS'}"
                )
                if args.edit:
                    copy = Path(scratch) / "tree"
                    shutil.copytree(tree, copy, symlinks=True)
                    audit(copy, schedule or None, fmt, cache)  # the copy's own cache, then edited
                    edited = edit(copy)
                    after = audit(copy, schedule or None, fmt, cache)
                    fresh = audit(copy, schedule or None, fmt, None)
                    line += f", after editing {edited}: {'same' if after == fresh else 'DIFFERS'}"
                    same = same and after == fresh
                print(line, f"(exit {plain[0]}, {len(plain[1])} bytes)", flush=True)
                bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
