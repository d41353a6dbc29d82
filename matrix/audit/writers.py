"""Edge: write a finished report as JSON (schema specmatrix.report/1), JUnit XML and Markdown."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from matrix.audit.junit import render_junit
from matrix.audit.markdown import render_markdown
from matrix.core.atomic import append_text, write_text_atomic
from matrix.core.errors import OutputError, UsageError
from matrix.core.report import Report, in_progress_document, write_report

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


class ReportWriter(Protocol):
    @property
    def suffix(self) -> str: ...

    def write(self, report: Report, path: Path) -> None: ...


class JsonWriter:
    suffix = ".json"

    def write(self, report: Report, path: Path) -> None:
        write_report(report, path)


@dataclass(frozen=True)
class TextWriter:
    suffix: str
    render: Callable[[Report], str]

    def write(self, report: Report, path: Path) -> None:
        """Write atomically, like the JSON report: a killed run never leaves half a file."""
        write_text_atomic(path, self.render(report))


WRITERS: tuple[ReportWriter, ...] = (JsonWriter(), TextWriter(".xml", render_junit), TextWriter(".md", render_markdown))


def report_paths(json_path: Path) -> dict[str, Path]:
    """`--matrix-report out/run.json` -> out/run.json, out/run.xml, out/run.md."""
    if json_path.suffix in (".xml", ".md"):
        raise UsageError(
            f"--matrix-report {json_path}: name the JSON file ({json_path.with_suffix('.json')}); .xml and .md go beside it"
        )
    return {w.suffix: json_path if w.suffix == ".json" else json_path.with_suffix(w.suffix) for w in WRITERS}


def mark_in_progress(json_path: Path) -> None:
    """At session start: the JSON path gets an in-progress marker and last run's .xml/.md go.

    A run that dies before its end (a segfault without xdist, a killed job) then leaves nothing a reader could
    take for this run's result. A special file or unwritable folder fails here, before any test runs.
    """
    paths = report_paths(json_path)
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_text_atomic(paths[".json"], in_progress_document(created, os.getpid()))
    for suffix in (".xml", ".md"):
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(paths[suffix])
        except OSError as exc:  # a directory or an unwritable folder: the writer would fail at the end anyway
            raise OutputError(f"{paths[suffix]}: cannot remove the previous run's file: {exc.strerror or exc}") from None


def write_all(report: Report, json_path: Path) -> list[Path]:
    paths = report_paths(json_path)
    for writer in WRITERS:
        writer.write(report, paths[writer.suffix])
    return list(paths.values())


def append_step_summary(report: Report, env: Mapping[str, str]) -> Path | None:
    """Append the Markdown summary to $GITHUB_STEP_SUMMARY when GitHub Actions set it."""
    target = env.get(STEP_SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    # Appended, not replaced: GitHub owns this file and other steps' summaries share it.
    append_text(path, render_markdown(report))
    return path
