"""Where a cold guard audit's CPU time goes, stage by stage, in one process (no profiler, no workers, no cache).

    python ci/profile_guards.py TREE          # e.g. a tree written by `python ci/bench_guards.py --keep TREE`

Prints the CPU seconds of each stage of `analyse_source` and `audit_file` summed over the tree's files:
`ast.parse` (with reading the file), the module's names (imports, aliases, functions), the line marks, the guard walk, the
registrations, and the audit of every guard on every profile. Each file is parsed once; the later stages
read that tree, as the audit does. The garbage collector is paused, as in the audit.
"""

from __future__ import annotations

import ast
import gc
import sys
import time
from pathlib import Path

from matrix.core.loader import load_runners
from matrix.guards.audit import AuditSettings, audit_file
from matrix.guards.finder import TEST_FILE, _GuardFinder
from matrix.guards.model import FileAnalysis
from matrix.guards.names import collect_module_names
from matrix.guards.registrations import read_registrations
from matrix.guards.suites import load_suite_map

STAGES = ("parse", "names", "marks", "walk", "registrations", "audit")


def main() -> int:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    settings = AuditSettings(runners=load_runners(), suite_map=load_suite_map())
    spent = dict.fromkeys(STAGES, 0.0)
    clock = time.process_time
    files = sorted(root.rglob("*.py"))
    skipped = 0
    gc.disable()
    for file in files:
        path = file.relative_to(root).as_posix()
        t0 = clock()
        try:
            text = file.read_text(encoding="utf-8")
            tree = ast.parse(text, filename=path)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            skipped += 1  # the audit reports such a file as unparsable; it has no later stages to time
            continue
        t1 = clock()
        names = collect_module_names(tree)
        t2 = clock()
        finder = _GuardFinder(path, text, names)  # splits the lines and marks the skip-related ones
        t3 = clock()
        finder.module(tree)
        t4 = clock()
        registrations = read_registrations(tree, finder.source)
        t5 = clock()
        analysis = FileAnalysis(
            path=path,
            is_test_file=TEST_FILE.match(file.name) is not None,
            registrations=registrations,
            scopes=tuple(finder.scopes),
            guards=tuple(finder.guards),
            names=names,
            helpers=tuple(finder.helpers),
        )
        audit_file(analysis, settings)
        t6 = clock()
        for stage, seconds in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5), strict=True):
            spent[stage] += seconds
    total = sum(spent.values())
    shown = ", ".join(f"{stage} {seconds:.2f}" for stage, seconds in spent.items())
    print(
        f"{len(files) - skipped} files ({skipped} unreadable or unparsable left out), CPU seconds: {shown}; "
        f"all {total:.2f}, beyond the parse {total - spent['parse']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
