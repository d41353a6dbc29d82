"""Verdicts of two commits of specmatrix on the same trees, side by side: what a change to the readers decided.

Usage:
    python ci/compare_verdicts.py TREE [TREE ...]                    # b0462aa against HEAD
    python ci/compare_verdicts.py --old REV --new REV TREE ...
    python ci/compare_verdicts.py --schedule-file flashinfer=ci/schedules/flashinfer-pr-test.toml TREE ...
    python ci/compare_verdicts.py --format json --output diff.json TREE ...

Each commit is checked out into a temporary worktree (`git worktree add --detach`, removed afterwards) and run as a
user runs it, the cache off: `pytest-audit TREE --format json` (and again with a tree's declared schedule where
`--schedule-file NAME=FILE` names one for the tree folder NAME and that commit holds FILE; flashinfer's by default)
and, for a tree holding `test/registered` (sglang), `guards TREE/test/registered --format json`. Beside the JSON,
each test's outcome over the whole schedule (runs, skips, not-selected, undetermined) is read through
`matrix.pytest_suites.run.item_outcomes`, the function the pytest oracle checks, where that commit has it.

Printed per tree: tests, decided share before and after (1 - (undetermined + undetermined_unread) / tests, from
each commit's own counts), every test whose certain verdict changed (its outcome, or the findings that name it:
silent-skip, never-runs, unscheduled, disabled-by-skip, ... with their runners), and the counts of tests newly
decided and newly undetermined. What one commit's output does not carry (an `undetermined_tests` list, per-test
outcomes) is said, never guessed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SCHEDULES = ("flashinfer=ci/schedules/flashinfer-pr-test.toml",)
UNDETERMINED = "undetermined"
CERTAIN_OUTCOMES = frozenset({"runs", "skips", "not-selected"})
# Run inside a commit's worktree: each collected test's outcome over the whole schedule, as JSON.
PROBE = """
import json, sys
from pathlib import Path
from matrix.core.runner_files import load_runners
from matrix.pytest_suites.run import AuditInput, item_outcomes
found, broken = item_outcomes(
    AuditInput(root=Path(sys.argv[1]), schedule_files=tuple(Path(p) for p in sys.argv[2:])), load_runners()
)
json.dump({"outcomes": {k: str(v) for k, v in found.items()}, "broken": list(broken)}, sys.stdout)
"""


@dataclass(frozen=True, kw_only=True)
class Side:
    """One commit's output on one tree: the command's JSON, and the per-test outcomes where they could be read."""

    audit: Mapping[str, Any]
    outcomes: Mapping[str, str] | None = None
    missing: tuple[str, ...] = ()  # what could not be read for this side, said in the report


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What one commit says of one test (or of a file, for a file-level finding): its outcome and its findings."""

    outcome: str | None
    findings: frozenset[str]

    @property
    def certain(self) -> bool:
        return bool(self.findings) or self.outcome in CERTAIN_OUTCOMES

    def text(self) -> str:
        return "; ".join([*([self.outcome] if self.outcome else []), *sorted(self.findings)]) or "nothing"


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Two commits' verdicts on one tree."""

    title: str
    tests: tuple[int, int]
    shares: tuple[float, float]
    changed: tuple[tuple[str, Verdict, Verdict], ...]
    newly_decided: tuple[tuple[str, Verdict], ...]
    newly_undetermined: tuple[tuple[str, Verdict], ...]
    only_old: int = 0
    only_new: int = 0
    notes: tuple[str, ...] = field(default=())


def decided_share(audit: Mapping[str, Any]) -> float:
    """1 - (undetermined + undetermined_unread) / tests, from a pytest-audit JSON report ('undetermined' findings
    for a guards report)."""
    if "test_files" in audit:
        total = int(audit["test_files"])
        return 1 - int(audit["counts"].get(UNDETERMINED, 0)) / total if total else 1.0
    total = int(audit["tests"])
    return 1 - (int(audit["undetermined"]) + int(audit.get("undetermined_unread", 0))) / total if total else 1.0


def _runners(finding: Mapping[str, Any]) -> str:
    names = sorted({str(r).split(":", 1)[0] for r in finding.get("runners", ())})
    return f"({', '.join(names)})" if names else ""


def verdicts(side: Side) -> dict[str, Verdict]:
    """Each test's (or file's, for a file-level finding) verdict on one side: findings by the key they name, the
    outcome where the side has per-test outcomes (a guards report has none: its findings name files)."""
    found: dict[str, set[str]] = {}
    for f in side.audit.get("findings", ()):
        found.setdefault(str(f["test"]), set()).add(f"{f['kind']}{_runners(f)}")
    if side.outcomes is None:
        listed = {str(t["test"]) for t in side.audit.get("undetermined_tests", ())}
        out = {k: Verdict(outcome=None, findings=frozenset(v)) for k, v in found.items()}
        out.update({k: Verdict(outcome=UNDETERMINED, findings=frozenset(found.get(k, ()))) for k in listed})
        return out
    keys = set(found) | set(side.outcomes)
    return {k: Verdict(outcome=side.outcomes.get(k), findings=frozenset(found.get(k, ()))) for k in keys}


def doubted(verdict: Verdict | None) -> bool:
    """Whether a side leaves a test undetermined: its outcome is, and no finding names it; or a finding of kind
    `undetermined` names it (a guards report's file)."""
    if verdict is None:
        return False
    return (verdict.outcome == UNDETERMINED and not verdict.findings) or any(f.startswith(UNDETERMINED) for f in verdict.findings)


def _open_files(found: Mapping[str, Verdict]) -> set[str]:
    """The files one of whose tests a side leaves undetermined."""
    return {key.split("::", 1)[0] for key, v in found.items() if "::" in key and doubted(v)}


def compare(title: str, old: Side, new: Side) -> Comparison:
    """What changed between two sides: certain verdicts that differ, tests newly decided or newly undetermined."""
    before, after = verdicts(old), verdicts(new)
    notes = [f"before: {m}" for m in old.missing] + [f"after: {m}" for m in new.missing]
    comparable = old.outcomes is not None and new.outcomes is not None
    if not comparable and not ("test_files" in old.audit and "test_files" in new.audit):
        notes.append("per-test outcomes are missing on one side: only the findings (and listed undetermined tests) compared")
    changed, decided, undecided = [], [], []
    open_before, open_after = _open_files(before), _open_files(after)
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key), after.get(key)
        old_doubt, new_doubt = doubted(was), doubted(now)
        if "::" not in key:
            # A file-level finding (never-runs, unscheduled) one side does not give: that side had no say where
            # one of the file's tests was undetermined there.
            old_doubt = old_doubt or (was is None and key in open_before)
            new_doubt = new_doubt or (now is None and key in open_after)
        if was is None or now is None:
            # A key one side does not name: a test collected on one side only, or a finding that appeared/went.
            if "::" in key and comparable:
                continue
            was = was or Verdict(outcome=None, findings=frozenset())
            now = now or Verdict(outcome=None, findings=frozenset())
        if old_doubt and not new_doubt:
            decided.append((key, now))
        elif new_doubt and not old_doubt:
            undecided.append((key, was))
        elif not old_doubt and not new_doubt and was != now:
            changed.append((key, was, now))
    only_old = only_new = 0
    if comparable:
        assert old.outcomes is not None and new.outcomes is not None
        only_old, only_new = len(set(old.outcomes) - set(new.outcomes)), len(set(new.outcomes) - set(old.outcomes))
    listed = ["undetermined_tests" in s.audit for s in (old, new)]
    if "test_files" not in old.audit and listed != [True, True]:
        which = " and ".join(n for n, has in zip(("before", "after"), listed, strict=True) if not has)
        notes.append(
            f"no undetermined_tests list {which}: newly decided/undetermined come from per-test outcomes (a test that "
            "runs on one runner and is unknown on another is undetermined there, decided in the share)"
        )
    return Comparison(
        title=title,
        tests=(_tests(old.audit), _tests(new.audit)),
        shares=(decided_share(old.audit), decided_share(new.audit)),
        changed=tuple(changed),
        newly_decided=tuple(decided),
        newly_undetermined=tuple(undecided),
        only_old=only_old,
        only_new=only_new,
        notes=tuple(notes),
    )


def _tests(audit: Mapping[str, Any]) -> int:
    return int(audit["test_files"] if "test_files" in audit else audit["tests"])


def render(c: Comparison, *, limit: int = 0) -> list[str]:
    """A comparison as text lines; `limit` > 0 lists that many newly decided/undetermined tests (0: counts only)."""
    unit = "test files" if c.title.startswith("guards") else "tests"
    lines = [
        f"== {c.title}",
        f"{unit}: {c.tests[0]} before, {c.tests[1]} after; decided share {c.shares[0]:.1%} -> {c.shares[1]:.1%}",
        f"certain verdicts changed: {len(c.changed)}",
    ]
    kinds = Counter(f"{w.text()}  ->  {n.text()}" for _, w, n in c.changed)
    lines += [f"  {count:5d} x {shape}" for shape, count in kinds.most_common()]
    lines += [f"  {key}: {w.text()} -> {n.text()}" for key, w, n in c.changed]
    lines.append(f"newly decided: {len(c.newly_decided)}; newly undetermined: {len(c.newly_undetermined)}")
    if c.only_old or c.only_new:
        lines.append(f"collected on one side only: {c.only_old} before, {c.only_new} after (not compared)")
    for what, rows in (("newly decided", c.newly_decided), ("newly undetermined", c.newly_undetermined)):
        shapes = Counter(v.text() for _, v in rows)
        lines += [f"  {what}: {count:5d} x {shape}" for shape, count in shapes.most_common()]
        lines += [f"    {key}: {v.text()}" for key, v in rows[:limit]]
    lines += [f"note: {n}" for n in c.notes]
    return lines


def to_json(c: Comparison) -> dict[str, Any]:
    def doc(v: Verdict) -> dict[str, Any]:
        return {"outcome": v.outcome, "findings": sorted(v.findings)}

    return {
        "title": c.title,
        "tests": list(c.tests),
        "decided_share": [round(s, 4) for s in c.shares],
        "changed": [{"test": k, "before": doc(w), "after": doc(n)} for k, w, n in c.changed],
        "newly_decided": [{"test": k, "after": doc(v)} for k, v in c.newly_decided],
        "newly_undetermined": [{"test": k, "before": doc(v)} for k, v in c.newly_undetermined],
        "collected_only_before": c.only_old,
        "collected_only_after": c.only_new,
        "notes": list(c.notes),
    }


# ---- the edges: worktrees and the commands run in them


class BadInput(Exception):
    """Input the script cannot use: said in one line, exit 2."""


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached worktree of `rev`, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="compare-verdicts-"))
    path = folder / "tree"
    add = ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev]
    made = subprocess.run(add, check=False, capture_output=True, text=True)
    if made.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise BadInput(
            f"{rev}: cannot check it out: {made.stderr.strip().splitlines()[-1] if made.stderr.strip() else 'git failed'}"
        )
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)], check=False, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _run(checkout: Path, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "SPECMATRIX_NO_CACHE": "1"}
    return subprocess.run([sys.executable, *argv], cwd=checkout, env=env, capture_output=True, text=True, check=False)


def run_side(checkout: Path, command: str, target: Path, schedules: Sequence[Path]) -> Side | str:
    """One command's JSON (and, for pytest-audit, the per-test outcomes) on one commit, or why it did not run."""
    extra = [a for s in schedules for a in ("--schedule-file", str(s))]
    done = _run(checkout, ["-m", "matrix", command, str(target), *extra, "--format", "json"])
    if done.returncode not in (0, 1):
        return f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
    try:
        audit = json.loads(done.stdout)
    except ValueError:
        return f"exit {done.returncode}, and its output is not JSON"
    if command != "pytest-audit":
        return Side(audit=audit)
    probe = _run(checkout, ["-c", PROBE, str(target), *map(str, schedules)])
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return Side(audit=audit, missing=(f"per-test outcomes not read ({last})",))
    return Side(audit=audit, outcomes=json.loads(probe.stdout)["outcomes"])


def _schedules(names: Sequence[str]) -> dict[str, str]:
    out = {}
    for spec in names:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise BadInput(f"--schedule-file {spec!r}: expected NAME=FILE")
        out[name] = path
    return out


def tree_runs(tree: Path, schedules: Mapping[str, str]) -> list[tuple[str, str, Path, str | None]]:
    """(title, command, target, schedule file relative to a checkout) for each run a tree gets."""
    runs: list[tuple[str, str, Path, str | None]] = [(f"pytest-audit {tree.name}", "pytest-audit", tree, None)]
    if (plan := schedules.get(tree.name)) is not None:
        runs.append((f"pytest-audit {tree.name} --schedule-file {plan}", "pytest-audit", tree, plan))
    if (tree / "test" / "registered").is_dir():
        runs.append((f"guards {tree.name}/test/registered", "guards", tree / "test" / "registered", None))
    return runs


def _compare_all(old_rev: str, new_rev: str, trees: Sequence[Path], schedules: Mapping[str, str]) -> list[Comparison | str]:
    """Each tree's comparison (or why it was not compared), the two commits checked out once for all of them."""
    results: list[Comparison | str] = []
    with worktree(old_rev) as old, worktree(new_rev) as new:
        for tree in trees:
            for title, command, target, schedule in tree_runs(tree.resolve(), schedules):
                print(f"{title} ...", file=sys.stderr, flush=True)
                sides: list[Side | str] = []
                for checkout in (old, new):
                    plan = [checkout / schedule] if schedule else []
                    if schedule and not plan[0].is_file():
                        sides.append(f"{schedule} is not in this commit")
                        continue
                    sides.append(run_side(checkout, command, target, plan))
                if isinstance(sides[0], Side) and isinstance(sides[1], Side):
                    results.append(compare(title, sides[0], sides[1]))
                else:
                    why = "; ".join(f"{n}: {s}" for n, s in zip(("before", "after"), sides, strict=True) if isinstance(s, str))
                    results.append(f"== {title}\nnot compared: {why}")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--old", default="b0462aa", help="the commit before the change (default: b0462aa)")
    parser.add_argument("--new", default="HEAD", help="the commit after it (default: HEAD)")
    parser.add_argument("--schedule-file", action="append", default=None, help="NAME=FILE: tree folder NAME's schedule")
    parser.add_argument("--list", type=int, default=10, help="newly decided/undetermined tests listed per tree")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--output", type=Path, help="write to FILE (atomically) instead of stdout")
    args = parser.parse_args(argv)
    try:
        schedules = _schedules(args.schedule_file if args.schedule_file is not None else DEFAULT_SCHEDULES)
        missing = [str(tree) for tree in args.trees if not tree.is_dir()]
        if missing:
            raise BadInput(f"{missing[0]}: not a folder")
        results = _compare_all(args.old, args.new, args.trees, schedules)
    except BadInput as exc:
        print(f"compare_verdicts: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        text = json.dumps([r if isinstance(r, str) else to_json(r) for r in results], indent=1) + "\n"
    else:
        text = "\n\n".join(r if isinstance(r, str) else "\n".join(render(r, limit=args.list)) for r in results) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return 0
    sys.path.insert(0, str(REPO))
    from matrix.core.atomic import write_text_atomic
    from matrix.core.errors import OutputError

    try:
        write_text_atomic(args.output, text)
    except OutputError as exc:
        print(f"compare_verdicts: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
