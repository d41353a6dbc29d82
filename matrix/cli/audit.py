"""Commands over saved reports: `audit` re-checks their statuses, `timeline` shows where their wall time went."""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from matrix.audit.findings import recheck
from matrix.audit.reports import render_markdown
from matrix.audit.timeline import Scaling, Timeline, render_scaling, render_timeline, timeline
from matrix.cli.gating import CELLS, add_gate_options, apply_gate
from matrix.cli.options import add_deprecated_path, add_output_options
from matrix.core import emit
from matrix.core.baseline import stamped
from matrix.core.errors import EXIT_FINDINGS, EXIT_OK, ReportError
from matrix.core.finding import Finding, Severity, Tool
from matrix.core.json_report import JsonReport, finding_entries, json_report
from matrix.core.jsonio import dumps_strict
from matrix.core.options import Options
from matrix.core.output import FINDING_FORMATS
from matrix.core.report import Report, read_report
from matrix.core.writers import View, text_report

AUDIT_SCHEMA = "specmatrix.audit/1"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "audit",
        help="re-check saved skip-audit reports (exit 1 on findings, 2 on a corrupt or truncated report)",
    )
    p.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="JSON report written by --matrix-report")
    add_output_options(p, FINDING_FORMATS, legacy_flags=("json",))
    add_gate_options(p, root=False)
    p.set_defaults(func=cmd_audit)
    p = sub.add_parser("timeline", help="per-worker start-up, busy time and finish spread of a run; --reference: speedup")
    p.add_argument("report", type=Path, metavar="REPORT", help="JSON report written by --matrix-report")
    p.add_argument(
        "--reference",
        type=Path,
        metavar="REPORT",
        help="the same work on fewer workers: print speedup and efficiency (default: none)",
    )
    add_deprecated_path(p, "--baseline", "reference", key="--baseline REPORT")
    add_output_options(p, ("text", "json"))
    p.set_defaults(func=cmd_timeline)


def _key(f: Finding) -> tuple[str, str]:
    return (f.kind, f.subject)


def _summary(path: Path, report: Report, findings: tuple[Finding, ...]) -> dict[str, Any]:
    return {
        "path": str(path),
        "runner": report.runner.name,
        "shard": report.shard,
        "planned": report.planned,
        "counts": report.counts,
        "consistent": sorted(map(_key, findings)) == sorted(map(_key, report.findings)),
        "findings": finding_entries(findings),
    }


def cmd_audit(args: argparse.Namespace, options: Options) -> int:
    # Read every report first: one corrupt file stops the command (exit 2) before anything is judged.
    loaded = [(path, read_report(path)) for path in args.reports]
    for path, report in loaded:
        if report.planned == 0:
            # A run that planned nothing proves nothing: a wrong selector, shard or runner emptied it.
            raise ReportError(f"{path}: planned 0 matrix items, so it audits nothing (wrong selector, shard or runner?)")
    judged = [(path, report, stamped(recheck(report), "")) for path, report in loaded]
    failed = any(f.failing for _, _, found in judged for f in found)
    code = EXIT_FINDINGS if failed else EXIT_OK
    everything = [f for _, _, found in judged for f in found]
    if args.baseline is not None or args.write_baseline is not None:
        # Report findings name matrix cells, not files: the baseline keys them as they are.
        gated = apply_gate(args, everything, "", "audit", code, anchor=CELLS)
        kept = {id(f) for f in gated.findings}
        judged = [(path, report, tuple(f for f in found if id(f) in kept)) for path, report, found in judged]
        everything = list(gated.findings)
        code, failed = gated.exit_code, gated.exit_code != EXIT_OK
    if args.format == "github":
        print(emit.github(everything, root="", prefix=None))
        return code
    if args.format == "sarif":
        print(emit.sarif(everything, tool=Tool.AUDIT, prefix=None, help_uri=args.help_uri))
        return code
    if args.format == "junit":
        print(emit.junit(everything, tool=Tool.AUDIT, root="", prefix=None))
        return code
    if args.format == "md":
        print("\n".join(render_markdown(replace(report, findings=found)) for _, report, found in judged), end="")
        return code
    summaries = [_summary(path, report, found) for path, report, found in judged]
    if args.format == "json":
        # Each report's summary keeps its own findings; the envelope's `findings` are all of them.
        fields = {"ok": not failed, "reports": summaries}
        print(json_report(JsonReport(schema=AUDIT_SCHEMA, findings=everything, exit_code=code, head=fields)))
        return code
    texts = []
    for s, (_, _, found) in zip(summaries, judged, strict=True):
        counts = " + ".join(f"{n} {status}" for status, n in s["counts"].items() if n) or "0"
        errors = sum(f.severity is Severity.ERROR for f in found)
        shard = f" shard {s['shard']}" if s["shard"] else ""
        tail = [] if s["consistent"] else [INCONSISTENT]
        tail.append(f"  {'FAILED' if errors else 'ok'}: {errors} error(s), {len(found) - errors} warning(s)")
        head = f"{s['path']}: runner {s['runner']}{shard}: planned {s['planned']} = {counts}"
        # Node ids and skip reasons come from the tests: escaped so no line forges a workflow command.
        texts.append(text_report(TEXT_VIEW, found, head=[head], tail=tail))
    print("\n".join(texts))
    return code


INCONSISTENT = "  note: the findings recorded in this report differ from its statuses; judged from the statuses"
TEXT_VIEW = View(tool=Tool.AUDIT, lines=lambda f: [f"  {f.severity.value}: {f.kind} {f.subject}: {f.message}"])


TIMELINE_SCHEMA = "specmatrix.timeline/1"


def _timeline_doc(name: str, t: Timeline) -> dict[str, Any]:
    return {
        "report": name,
        "wall": t.wall,
        "busy": t.busy,
        "other_busy": t.other_busy,
        "start_gap": t.start_gap,
        "spread": t.spread,
        "tail": t.tail,
        "utilisation": t.utilisation,
        "untimed_others": t.untimed_others,
        "workers": [asdict(w) for w in t.workers],
    }


def cmd_timeline(args: argparse.Namespace, options: Options) -> int:
    scaled = timeline(read_report(args.report), str(args.report))
    base = timeline(read_report(args.reference), str(args.reference)) if args.reference is not None else None
    if args.format == "json":
        doc: dict[str, Any] = {"schema": TIMELINE_SCHEMA, "timeline": _timeline_doc(str(args.report), scaled)}
        if base is not None:
            scaling = Scaling(base=base, scaled=scaled)
            doc["reference"] = _timeline_doc(str(args.reference), base)
            doc["scaling"] = {"speedup": scaling.speedup, "worker_ratio": scaling.worker_ratio, "efficiency": scaling.efficiency}
        print(dumps_strict(doc, where="timeline", indent=2))
        return EXIT_OK
    if base is not None:
        for line in render_timeline(str(args.reference), base):
            print(line)
    for line in render_timeline(str(args.report), scaled):
        print(line)
    if base is not None:
        for line in render_scaling(Scaling(base=base, scaled=scaled)):
            print(line)
    return EXIT_OK
