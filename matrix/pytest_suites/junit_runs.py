"""Read the JUnit XML pytest writes (`--junitxml`): each testcase's name and outcome, from untrusted files, bounded.

What it models is pytest's own writer (`_pytest/junitxml.py`, pytest 8 and 9): `<testsuites>` holding one or more
`<testsuite>` (named by `junit_suite_name`; pytest writes one, merged files hold several), each `<testcase>` with
`classname` and `name` (and `file` and `line` in the `xunit1`/`legacy` families, not in `xunit2`), and at most one
outcome child: `<skipped type="pytest.skip">` (message: the skip reason), `<skipped type="pytest.xfail">` (an xfail),
`<skipped message="xfail-marked test passes unexpectedly">` (an old pytest's strict xpass), `<failure>`, `<error>`
(setup or teardown, or `message="collection failure"` for a file that did not collect). A module or folder skipped
at collection (a module-level `importorskip`) is one testcase with an empty classname, the dotted path as its name,
`<skipped message="collection skipped">` and the collect report's `(path, line, reason)` tuple as text. Anything
else in the file (properties, captured output, attributes of other writers) is not read.

Parsed with the standard library's expat, never with entity expansion: a document type declaration (and so any
entity definition: the "billion laughs" file) is refused, as are files past `MAX_BYTES`, elements nested past
`MAX_DEPTH` and files of more than `MAX_ELEMENTS` elements; each is one error line (exit 2).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any
from xml.parsers import expat

from matrix.core.errors import ReportError

MAX_BYTES = 256 * 1024 * 1024
MAX_DEPTH = 32
MAX_ELEMENTS = 4_000_000
MAX_TEXT = 4096  # characters kept of a skip or error text (the message attribute is kept whole up to this too)
MAX_FILES = 10_000  # files read from one folder
_CHUNK = 1 << 20


class Observed(StrEnum):
    """What one testcase of a run did."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # setup or teardown raised (the test was not skipped)
    SKIPPED = "skipped"
    XFAILED = "xfailed"
    XPASSED = "xpassed"
    COLLECTION_ERROR = "collection-error"  # its file did not collect: it neither ran nor skipped

    @property
    def ran(self) -> bool:
        """The test was not skipped: its body ran (or its setup or teardown failed around it)."""
        return self not in (Observed.SKIPPED, Observed.COLLECTION_ERROR)


@dataclass(frozen=True, kw_only=True)
class RunCase:
    """One `<testcase>`: pytest's names for the node, its outcome and the message pytest gave it.

    `collector` marks a collection report (its classname empty or the `--junit-prefix`; its name a file's or folder's
    dotted path).
    """

    classname: str
    name: str
    observed: Observed
    message: str = ""
    file: str = ""  # `file` attribute (xunit1), relative to the run's rootdir
    suite: int = 0  # index of its `<testsuite>` in the file
    collector: bool = False


@dataclass(frozen=True, kw_only=True)
class RunFile:
    """One JUnit file of a run: its testsuites' names and its testcases in file order."""

    path: str
    suites: tuple[str, ...]
    cases: tuple[RunCase, ...]


class _Refused(Exception):
    """Raised inside an expat handler: the parse stops at once with this reason."""


_XFAIL_PASSED = "xfail-marked test passes unexpectedly"  # pytest's `append_failure` for an xfail that passed


class _Reader:
    """Expat handlers building `RunCase`s; keeps only the attributes and texts the join reads."""

    def __init__(self) -> None:
        self.depth = 0
        self.elements = 0
        self.suites: list[str] = []
        self.cases: list[RunCase] = []
        self.case: dict[str, str] | None = None
        self.outcome: tuple[str, dict[str, str]] | None = None  # the outcome child being read: tag, attributes
        self.text: list[str] = []
        self.text_size = 0
        self.capturing = False  # inside the outcome child: its text is the skip or error text
        self.root: str | None = None

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        self.elements += 1
        if self.depth > MAX_DEPTH:
            raise _Refused(f"elements nested deeper than {MAX_DEPTH}")
        if self.elements > MAX_ELEMENTS:
            raise _Refused(f"more than {MAX_ELEMENTS:,} elements")
        if self.root is None:
            self.root = tag
            if tag not in ("testsuites", "testsuite"):
                raise _Refused(f"its root element is <{tag[:40]}>, not <testsuites> or <testsuite>")
        if tag == "testsuite":
            self.suites.append(attrs.get("name", ""))
        elif tag == "testcase":
            self.case = attrs
            self.outcome = None
        elif self.case is not None and tag in ("skipped", "failure", "error") and self._ranks_before(tag):
            self.outcome = (tag, attrs)
            self.text, self.text_size, self.capturing = [], 0, True

    def _ranks_before(self, tag: str) -> bool:
        """A failure outranks an error (teardown after a failed call), both outrank a skip."""
        order = {"failure": 0, "error": 1, "skipped": 2}
        return self.outcome is None or order[tag] < order[self.outcome[0]]

    def data(self, text: str) -> None:
        if self.capturing and self.text_size < MAX_TEXT:
            self.text.append(text)
            self.text_size += len(text)

    def end(self, tag: str) -> None:
        self.depth -= 1
        if tag in ("skipped", "failure", "error"):
            self.capturing = False
        elif tag == "testcase" and self.case is not None:
            self.cases.append(self._case(self.case))
            self.case = None
            self.outcome = None

    def _case(self, attrs: dict[str, str]) -> RunCase:
        classname, name = attrs.get("classname", ""), attrs.get("name", "")
        suite = max(0, len(self.suites) - 1)
        observed, message, collector = Observed.PASSED, "", False
        if self.outcome is not None:
            tag, child = self.outcome
            message = child.get("message", "")[:MAX_TEXT]
            text = "".join(self.text)[:MAX_TEXT]
            if tag == "failure":
                observed = Observed.FAILED
            elif tag == "error":
                collector = message == "collection failure"
                observed = Observed.COLLECTION_ERROR if collector else Observed.ERROR
            elif child.get("type") == "pytest.xfail":
                observed = Observed.XFAILED
            elif message == _XFAIL_PASSED:
                observed = Observed.XPASSED
            else:
                observed = Observed.SKIPPED
                # pytest's collect reports carry no `type` (a test's skip is `pytest.skip`); the classname is
                # empty, or the --junit-prefix
                collector = message == "collection skipped" and "type" not in child
                if collector:
                    message = collected_skip_reason(text) or message
        return RunCase(
            classname=classname,
            name=name,
            observed=observed,
            message=message,
            file=attrs.get("file", ""),
            suite=suite,
            collector=collector,
        )


def collected_skip_reason(text: str) -> str:
    """The reason of a collection-time skip: pytest writes the collect report's `(path, line, 'Skipped: why')`."""
    try:
        value = ast.literal_eval(text.strip()) if len(text) < MAX_TEXT else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ""
    if isinstance(value, tuple) and len(value) == 3 and isinstance(value[2], str):
        return value[2].removeprefix("Skipped: ")
    return ""


def _refuse_doctype(*_: Any) -> None:
    raise _Refused("it has a document type declaration (DTDs and entities are not read)")


def parse_junit(data: bytes | Sequence[bytes], where: str) -> RunFile:
    """One JUnit document (its bytes, or its chunks in order); anything but a bounded, well-formed JUnit file is
    one `ReportError` line naming `where`."""
    reader = _Reader()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_doctype
    parser.EntityDeclHandler = _refuse_doctype
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.data
    parser.buffer_text = True
    chunks = [data] if isinstance(data, bytes) else data
    try:
        for chunk in chunks:
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except _Refused as exc:
        raise ReportError(f"{where}: not read: {exc}") from None
    except expat.ExpatError as exc:
        raise ReportError(f"{where}: not well-formed XML ({expat.ErrorString(exc.code)}, line {exc.lineno})") from None
    except RecursionError:
        raise ReportError(f"{where}: not read: nested too deeply") from None
    if reader.root is None:
        raise ReportError(f"{where}: not a JUnit XML file (no element)")
    return RunFile(path=where, suites=tuple(reader.suites), cases=tuple(reader.cases))


def read_junit(path: Path) -> RunFile:
    """A JUnit file from disk, read in chunks up to `MAX_BYTES`."""
    where = str(path)
    chunks: list[bytes] = []
    size = 0
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                size += len(chunk)
                if size > MAX_BYTES:
                    raise ReportError(f"{where}: larger than {MAX_BYTES // (1024 * 1024)} MiB; not read")
                chunks.append(chunk)
    except OSError as exc:
        raise ReportError(f"{where}: cannot be read: {exc.strerror or exc}") from None
    return parse_junit(chunks, where)


def junit_files(path: Path) -> list[Path]:
    """The JUnit files a `--junit` path names: the file itself, or a folder's `*.xml` files (recursively, sorted)."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*.xml") if p.is_file())
        if not found:
            raise ReportError(f"{path}: folder holds no *.xml file")
        if len(found) > MAX_FILES:
            raise ReportError(f"{path}: more than {MAX_FILES:,} *.xml files; not read")
        return found
    if not path.exists():
        raise ReportError(f"{path}: no such file or folder")
    if not path.is_file():
        raise ReportError(f"{path}: not a regular file")
    return [path]
