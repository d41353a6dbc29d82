"""The one JSON writer of findings: every finding command's `--format json` is this envelope around its findings.

Every report document has one envelope, in this order: `schema`, `tool` (`{"name": "specmatrix", "version": ...}`),
the audit's own top-level fields (`head`), `counts` (the audit's own, or the findings per kind), `exit_code` (what
the command returns), `failing` (how many findings fail the run: failing, and not acknowledged by a baseline), the
`findings`, then the audit's fields after them (`tail`, e.g. a gate's `baseline`). The audit gives its fields as
data; the writer decides how a finding is written, so the findings of every command carry the same verdict fields,
taken from the finding (`Finding.failing` and `Finding.severity` follow from the kind's `KindSpec`,
`Finding.fingerprint` is the one fingerprint baselines and SARIF use).

A finding is written in one of two shapes (`Shape`): the whole core record (`finding_doc`: `specmatrix.ledger/2`,
coverage, gaps, audit), or an audit's own named fields (`fields`, e.g. the guard schema's `test`, `guard`, `reason`)
followed by the verdict fields `failing`, `severity` and `fingerprint`.

The text is exactly `json.dumps(json_document(...), indent=2)`; the findings (nearly all of a large report's text)
are laid out entry by entry from their plain values rather than walked by the general encoder: a guard audit of a
real tree writes thousands.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix import __version__
from matrix.core.finding import Finding
from matrix.core.jsonio import dumps_indented, nested, string_literals
from matrix.core.output import finding_doc

FINDINGS = "findings"
VERDICT_FIELDS = ("failing", "severity", "fingerprint")
# The keys every report document has; the writer sets them, an audit's own fields may not.
ENVELOPE = ("schema", "tool", "counts", "exit_code", "failing", FINDINGS)


@dataclass(frozen=True, kw_only=True)
class Shape:
    """How one audit's findings are written: `fields` gives a finding's own named values (its verdict fields follow);
    without it the finding is the whole core record (`finding_doc`)."""

    fields: Callable[[Finding], Mapping[str, Any]] | None = None


CORE = Shape()


def finding_entry(finding: Finding, shape: Shape = CORE) -> dict[str, Any]:
    """One finding as the report holds it."""
    if shape.fields is None:
        return finding_doc(finding)
    return {
        **shape.fields(finding),
        "failing": finding.failing,
        "severity": finding.severity.value,
        "fingerprint": finding.fingerprint,
    }


def finding_entries(findings: Sequence[Finding], shape: Shape = CORE) -> list[dict[str, Any]]:
    """The findings as a report holds them (for a report that nests several lists of findings: `audit`)."""
    return [finding_entry(f, shape) for f in findings]


@dataclass(frozen=True, kw_only=True)
class JsonReport:
    """One report as the audit gives it: its schema, its findings, its own fields before (`head`) and after
    (`tail`) them, and the shape of its findings."""

    schema: str
    findings: Sequence[Finding]
    exit_code: int
    head: Mapping[str, Any] = field(default_factory=dict)
    tail: Mapping[str, Any] = field(default_factory=dict)
    shape: Shape = CORE
    counts: Mapping[str, Any] | None = None  # the audit's own counts; None: the findings per kind
    failing: int | None = None  # None: the failing findings among `findings` (a gate that keeps all of them says)

    def __post_init__(self) -> None:
        _check(self.head, self.tail)


def kind_counts(findings: Sequence[Finding]) -> dict[str, int]:
    """The findings per kind, kinds in name order."""
    return dict(sorted(Counter(f.kind for f in findings).items()))


def _envelope_head(report: JsonReport) -> dict[str, Any]:
    """What the document holds before its findings: `schema`, `tool`, the audit's head, `counts`, `exit_code`,
    `failing`."""
    return {
        "schema": report.schema,
        # The package's own version, which pyproject.toml's is (tests/core/test_json_report.py): reading the
        # installed distribution's would import importlib.metadata on every run.
        "tool": {"name": "specmatrix", "version": __version__},
        **report.head,
        "counts": dict(report.counts) if report.counts is not None else kind_counts(report.findings),
        "exit_code": report.exit_code,
        "failing": report.failing if report.failing is not None else sum(f.failing for f in report.findings),
    }


def json_document(report: JsonReport) -> dict[str, Any]:
    """The report as a document: the envelope, the audit's head, the findings, its tail."""
    return {**_envelope_head(report), FINDINGS: finding_entries(report.findings, report.shape), **report.tail}


def json_report(report: JsonReport) -> str:
    """`json.dumps(json_document(report), indent=2)`, the findings written by `findings_json`."""
    literal = string_literals()
    parts = [f"{literal(key)}: {nested(dumps_indented(value), 1)}" for key, value in _envelope_head(report).items()]
    parts.append(f"{literal(FINDINGS)}: {findings_json(report.findings, report.shape, literal)}")
    for key, value in report.tail.items():
        parts.append(f"{literal(key)}: {nested(dumps_indented(value), 1)}")
    return "{\n  " + ",\n  ".join(parts) + "\n}"


def _check(head: Mapping[str, Any], tail: Mapping[str, Any]) -> None:
    # The envelope's own keys are the writer's: an audit that sets them would write its own verdict.
    for fields in (head, tail):
        taken = set(ENVELOPE) & set(fields)
        if taken:
            raise ValueError(f"the report envelope writes {sorted(taken)} itself")
    both = set(head) & set(tail)
    if both:
        raise ValueError(f"fields both before and after the findings: {sorted(both)}")


def _value(value: Any, literal: Callable[[str], str]) -> str | None:
    """A plain value's JSON text two levels in (a string, an exact int or bool, None, a list of strings); None for
    any other value, which the general encoder writes."""
    kind = type(value)
    if kind is str:
        return literal(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if kind is list and all(type(v) is str for v in value):
        return "[]" if not value else "[\n        " + ",\n        ".join(map(literal, value)) + "\n      ]"
    return None


def findings_json(findings: Sequence[Finding], shape: Shape, literal: Callable[[str], str]) -> str:
    """The `findings` list as `dumps_indented` writes it one level into the report. An entry with a value of
    another type than `_value` lays out (a float, a mapping, a list of numbers) is written the general way."""
    if not findings:
        return "[]"
    items = []
    for f in findings:
        entry = finding_entry(f, shape)
        items.append(_entry_json(entry, literal) or nested(dumps_indented(entry), 2))
    return "[\n    " + ",\n    ".join(items) + "\n  ]"


def _entry_json(entry: Mapping[Any, Any], literal: Callable[[str], str]) -> str | None:
    """One entry laid out from its plain values; None when one is not plain."""
    lines = []
    for key, value in entry.items():
        text = _value(value, literal) if type(key) is str else None
        if text is None:
            return None
        lines.append(f"{literal(key)}: {text}")
    return "{\n      " + ",\n      ".join(lines) + "\n    }" if lines else "{}"
