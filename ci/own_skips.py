"""The skip audit applied to this project's own suite: every skip of a CI run must be one of a listed, reasoned set.

`nox -s tests` and `nox -s integration` write the pytest plugin's run report (`--matrix-report`) into the folder
named by SPECMATRIX_SKIP_REPORTS, one `SESSION.json` each (.ci/run sets it). This script reads those reports and
`ci/own-skips.toml`, where each `[[group]]` names its sessions (a glob), a node-id glob, a skip-reason regex, the
exact number of skips it accounts for in each of those sessions on CI, and why they skip. Every skipped test (a
matrix cell the matrix expects to skip, an unexpected skip, a test outside the matrix) must fall in a group of its
session, and each group must count exactly its listed number: a new skip, a group that grew, or one that shrank
(lower its count: the list only tightens) fails.
Stdlib only, so CI's base interpreter runs it.

Usage: python ci/own_skips.py REPORTS_DIR [--groups ci/own-skips.toml]
Exit status: 0 every skip listed and every count exact; 1 otherwise (one line each); 2 bad input (one line).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GROUPS = HERE / "own-skips.toml"
REPORT_SCHEMA = "specmatrix.report/1"
IN_PROGRESS_SCHEMA = "specmatrix.report-in-progress/1"  # the marker a run leaves until it writes its report
MAX_REPORT_BYTES = 64 * 1024 * 1024
_KEYS = {"session", "tests", "reason", "count", "why"}


class BadInput(Exception):
    """A groups file or a report that cannot be read; the message is one line."""


@dataclass(frozen=True, kw_only=True)
class Group:
    """One reasoned set of skips: which session, which tests, which reason, how many, and why."""

    label: str
    session: str
    tests: str
    reason: re.Pattern[str]
    count: int
    why: str


@dataclass(frozen=True, kw_only=True)
class Skip:
    session: str
    nodeid: str
    reason: str


def read_groups(path: Path) -> tuple[Group, ...]:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{path}: {exc}") from None
    raw = doc.get("group", [])
    if set(doc) - {"group"} or not isinstance(raw, list) or not all(isinstance(g, dict) for g in raw):
        raise BadInput(f"{path}: only [[group]] tables belong here")
    groups = []
    for i, entry in enumerate(raw):
        where = f"{path}: [[group]] #{i + 1}"
        if set(entry) != _KEYS:
            raise BadInput(f"{where}: needs exactly the keys {', '.join(sorted(_KEYS))}")
        texts = [entry[k] for k in ("session", "tests", "reason", "why")]
        if not all(isinstance(t, str) and t.strip() for t in texts):
            raise BadInput(f"{where}: session, tests, reason and why must be non-empty strings")
        count = entry["count"]
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise BadInput(f"{where}: count must be a positive integer (a group of no skip is dropped, not kept at 0)")
        try:
            reason = re.compile(entry["reason"])
        except re.error as exc:
            raise BadInput(f"{where}: reason is not a regular expression: {exc}") from None
        label = f"[[group]] #{i + 1} ({entry['session']}: {entry['tests']})"
        session, tests, why = entry["session"], entry["tests"], entry["why"]
        groups.append(Group(label=label, session=session, tests=tests, reason=reason, count=count, why=why))
    return tuple(groups)


def _text(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadInput(f"{where}: field {key!r} must be a string")
    return value


def skips_of(doc: Any, session: str, where: str) -> list[Skip]:
    """Every skipped test of one run report: matrix cells skipped (expected or not) and skipped tests outside it."""
    if isinstance(doc, dict) and doc.get("schema") == IN_PROGRESS_SCHEMA:
        raise BadInput(f"{where}: the session writing this report never finished (stopped or crashed)")
    if not isinstance(doc, dict) or doc.get("schema") != REPORT_SCHEMA:
        raise BadInput(f"{where}: not a run report ({REPORT_SCHEMA})")
    found: list[Skip] = []
    for key, skipped in (("cells", ("skipped-expected", "skipped-unexpected")), ("outside", ("skipped",))):
        items = doc.get(key)
        if not isinstance(items, list):
            raise BadInput(f"{where}: field {key!r} must be a list")
        for i, item in enumerate(items):
            at = f"{where}: {key}[{i}]"
            if not isinstance(item, dict):
                raise BadInput(f"{at}: not an object")
            if item.get("status") in skipped:
                found.append(Skip(session=session, nodeid=_text(item, "nodeid", at), reason=_text(item, "skip_reason", at)))
    return found


def read_reports(folder: Path) -> list[Skip]:
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not paths:
        raise BadInput(f"{folder}: no SESSION.json run report (run the sessions with SPECMATRIX_SKIP_REPORTS={folder})")
    skips: list[Skip] = []
    for path in paths:
        try:
            if path.stat().st_size > MAX_REPORT_BYTES:
                raise BadInput(f"{path}: over {MAX_REPORT_BYTES} bytes")
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise BadInput(f"{path}: {exc}") from None
        skips += skips_of(doc, path.stem, str(path))
    return skips


def judge(skips: Sequence[Skip], groups: Sequence[Group], sessions: Sequence[str]) -> list[str]:
    """One line per problem: a skip no group lists, a group whose count in a session it names is not what it says.
    A group's `session` is a glob: its count holds in each session it matches."""
    problems: list[str] = []
    counted: dict[tuple[Group, str], int] = {}
    for skip in skips:
        group = next((g for g in groups if _covers(g, skip)), None)
        if group is None:
            problems.append(
                f"{skip.session}: {skip.nodeid} skipped ({skip.reason[:200]!r}) and no group lists it: make it run on CI "
                "(.ci/run installs what tests need) or add a reasoned group"
            )
        else:
            counted[(group, skip.session)] = counted.get((group, skip.session), 0) + 1
    for group in groups:
        named = [s for s in sessions if fnmatch.fnmatchcase(s, group.session)]
        if not named:
            problems.append(f"{group.label}: no report of a session it names (reports: {', '.join(sessions)})")
        for session in named:
            n = counted.get((group, session), 0)
            if n > group.count:
                problems.append(f"{group.label} in {session}: {n} skips, {group.count} listed: more skip than it accounts for")
            elif n < group.count:
                problems.append(f"{group.label} in {session}: {n} skips, {group.count} listed: lower its count to {n}")
    return problems


def node_pattern(glob: str) -> re.Pattern[str]:
    """A node-id glob: `*` any text, `?` one character, everything else literal (brackets too: node ids carry
    their parameters in them, where fnmatch would read a character class)."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob) + r"\Z", re.DOTALL)


def _covers(group: Group, skip: Skip) -> bool:
    return (
        fnmatch.fnmatchcase(skip.session, group.session)
        and node_pattern(group.tests).match(skip.nodeid) is not None
        and group.reason.search(skip.reason) is not None
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", type=Path, help="the folder SPECMATRIX_SKIP_REPORTS named (one SESSION.json per session)")
    parser.add_argument("--groups", type=Path, default=GROUPS, help="the reasoned skip groups (default: ci/own-skips.toml)")
    args = parser.parse_args(argv)
    try:
        groups = read_groups(args.groups)
        skips = read_reports(args.reports)
    except BadInput as exc:
        print(f"own_skips: error: {exc}", file=sys.stderr)
        return 2
    sessions = sorted({p.stem for p in args.reports.glob("*.json")})
    problems = judge(skips, groups, sessions)
    for line in problems:
        print(f"own_skips: {line}", file=sys.stderr)
    verdict = f"{len(problems)} problem(s)" if problems else "every skip listed, every count exact"
    shown = ", ".join(sessions)
    print(f"own_skips: {len(skips)} skips in sessions {shown}; {len(groups)} groups in {args.groups.name}: {verdict}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
