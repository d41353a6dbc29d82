"""The wall clock of one cold `specmatrix guards` run, phase by phase, as a user would start it.

    python ci/phases_guards.py TREE [--jobs N]   # e.g. a tree written by `python ci/bench_guards.py --keep TREE`

Runs `specmatrix guards TREE --format json --no-workflows` once in this interpreter with an empty results cache
(default `--jobs`, or N) and prints when each phase ended, in wall seconds since the script started: the imports,
reading and hashing the tree (workers take the first misses while the rest is still read), the last worker
result, the cache written, and the report rendered and written; then the main process's own CPU seconds. Where
the per-file time goes inside the workers is `ci/profile_guards.py`'s part.
"""

from __future__ import annotations

import time

START = time.perf_counter()


def main(argv: list[str]) -> int:
    import tempfile
    from collections.abc import Iterator
    from pathlib import Path

    from matrix.cli.main import main as cli
    from matrix.registered_suite import tree

    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if not argv or not Path(argv[0]).is_dir():
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    marks: list[tuple[str, float]] = [("imports", time.perf_counter() - START)]
    results = tree._Misses.results
    save = tree.ResultCache.save

    def noted_results(self: tree._Misses) -> Iterator[tuple[str, str, object, object]]:
        marks.append(("tree read and hashed", time.perf_counter() - START))
        yield from results(self)
        marks.append(("last worker result", time.perf_counter() - START))

    def noted_save(self: tree.ResultCache) -> None:
        save(self)
        marks.append(("cache written", time.perf_counter() - START))

    tree._Misses.results = noted_results  # type: ignore[assignment,method-assign]
    tree.ResultCache.save = noted_save  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="phases-") as tmp:
        command = ["guards", argv[0], "--format", "json", "--no-workflows", "--cache-dir", tmp, "--output", f"{tmp}/r.json"]
        code = cli([*command, *argv[1:]])
    marks.append(("report rendered and written", time.perf_counter() - START))
    shown = ", ".join(f"{name} {at:.2f}" for name, at in marks)
    print(f"exit {code}; wall seconds since start: {shown}; main process CPU {time.process_time():.2f} s")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
