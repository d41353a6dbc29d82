"""The gate's command-line half, the same in every finding command: `--baseline`, `--write-baseline`, `--today`,
`--root` and `--help-uri`, and reading and writing the baseline they name."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path

from matrix.core.atomic import write_text_atomic
from matrix.core.baseline import Baseline, baseline_text, legacy_note, read_baseline, updated_entries
from matrix.core.finding import Finding
from matrix.core.gate import error_keys


def add_gate_options(p: argparse.ArgumentParser) -> None:
    base = p.add_mutually_exclusive_group()
    base.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="fail only on error findings FILE does not list (default: none, every error finding fails)",
    )
    base.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write the current error findings to FILE (keeps reasons and expiry; default: none)",
    )
    p.add_argument(
        "--today",
        type=dt.date.fromisoformat,
        metavar="YYYY-MM-DD",
        help="the date baseline expiry is checked on (default: today)",
    )
    p.add_argument(
        "--root",
        dest="repo_root",
        type=Path,
        metavar="DIR",
        help="the repository root SARIF URIs, annotations and baseline paths start from "
        "(default: the git top level, else the nearest folder holding .github)",
    )
    p.add_argument(
        "--help-uri",
        metavar="URL",
        help="SARIF: the page each rule's helpUri points at (default: none; the help text is inline)",
    )


def read_gate_baseline(path: Path | None, prefix: str, prog: str) -> Baseline | None:
    """`--baseline FILE` keyed from the repository root; an older file is read and said so in one line."""
    if path is None:
        return None
    baseline = read_baseline(path)
    if baseline.legacy:
        print(f"specmatrix {prog}: {legacy_note(path, prefix)}", file=sys.stderr)
    return baseline.keyed_from(prefix)


def write_gate_baseline(path: Path, findings: Sequence[Finding], prefix: str) -> int:
    """`--write-baseline FILE`: the current error findings, keeping what a maintainer wrote; the entries written."""
    previous = read_baseline(path).keyed_from(prefix) if path.is_file() else None
    entries = updated_entries(error_keys(findings, prefix), previous, prefix)
    write_text_atomic(path, baseline_text(entries))
    return len(entries)
