"""The gate's command-line half, the same in every finding command: `--baseline`, `--write-baseline`, `--today`,
`--root` and `--help-uri`, and reading and writing the baseline they name."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from matrix.core.atomic import write_text_atomic
from matrix.core.baseline import Baseline, baseline_text, legacy_note, read_baseline, updated_entries
from matrix.core.errors import EXIT_OK
from matrix.core.finding import Finding, Severity
from matrix.core.gate import error_keys, gate, gate_line
from matrix.core.targets import refuse_read_outputs


def add_gate_options(p: argparse.ArgumentParser, *, root: bool = True) -> None:
    """The gate's options; `root=False` for a command whose findings name matrix cells, not files (no `--root`:
    nothing of its output would start from it)."""
    add_baseline_options(p)
    if root:
        _root_option(p)
    p.add_argument(
        "--help-uri",
        metavar="URL",
        help="SARIF: the page each rule's helpUri points at (default: none; the help text is inline)",
    )


def add_baseline_options(p: argparse.ArgumentParser, baseline_help: str | None = None, *, today: bool = True) -> None:
    """`--baseline`, `--write-baseline` and `--today`: the gate's options a command with its own `--root` takes
    (`today=False` where the command checks no expiry)."""
    base = p.add_mutually_exclusive_group()
    base.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help=baseline_help or "fail only on error findings FILE does not list (default: none, every error finding fails)",
    )
    base.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write the current error findings to FILE (keeps reasons and expiry; default: none)",
    )
    if not today:
        return
    p.add_argument(
        "--today",
        type=dt.date.fromisoformat,
        metavar="YYYY-MM-DD",
        help="the date baseline expiry is checked on (default: today)",
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
    refuse_read_outputs([("--write-baseline", path)])  # before the previous baseline is read, which notes it
    previous = read_baseline(path).keyed_from(prefix) if path.is_file() else None
    entries = updated_entries(error_keys(findings, prefix), previous, prefix)
    write_text_atomic(path, baseline_text(entries))
    return len(entries)


# The path a baseline entry gives a finding on a matrix cell (audit, coverage, gaps): cells live in no file.
CELLS = "(matrix cells)"


@dataclass(frozen=True, kw_only=True)
class Gated:
    """A command's findings after `--baseline`/`--write-baseline`: those still to report and the exit code."""

    findings: tuple[Finding, ...]
    exit_code: int
    wrote: str | None = None


def apply_gate(
    args: argparse.Namespace, findings: Sequence[Finding], prefix: str, prog: str, exit_code: int, *, anchor: str = ""
) -> Gated:
    """The gate's options over a command whose own output lists `findings`: without either option nothing changes
    (the findings and `exit_code` as they are); `--write-baseline` writes the error findings and exits 0;
    `--baseline` drops the findings it acknowledges and exits as the gate says (new errors or expired entries).
    A finding that names no file (a matrix cell's) is keyed under `anchor`, as a baseline entry names a path."""
    keyed = [replace(f, path=f.path or anchor) for f in findings]
    if getattr(args, "write_baseline", None) is not None:
        written = write_gate_baseline(args.write_baseline, keyed, prefix)
        wrote = f"wrote {written} baseline entries to {args.write_baseline}"
        print(f"specmatrix {prog}: {wrote}", file=sys.stderr)
        return Gated(findings=tuple(findings), exit_code=EXIT_OK, wrote=wrote)
    baseline = read_gate_baseline(getattr(args, "baseline", None), prefix, prog)
    if baseline is None:
        return Gated(findings=tuple(findings), exit_code=exit_code)
    result = gate(keyed, show=Severity.INFO, baseline=baseline, today=getattr(args, "today", None), prefix=prefix)
    kept = {id(f) for f in result.shown}
    line = gate_line(result)
    if line:
        print(f"specmatrix {prog}: {line}", file=sys.stderr)
    for entry in result.expired:
        print(f"specmatrix {prog}: expired baseline entry: {entry.path}: {entry.kind}: {entry.test}", file=sys.stderr)
    return Gated(findings=tuple(f for f, k in zip(findings, keyed, strict=True) if id(k) in kept), exit_code=result.exit_code)


def _root_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        dest="repo_root",
        type=Path,
        metavar="DIR",
        help="the repository root SARIF URIs, annotations and baseline paths start from "
        "(default: the git top level, else the nearest folder holding .github)",
    )
