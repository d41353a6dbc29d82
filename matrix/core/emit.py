"""The emitters every finding command shares for the formats code hosts read: GitHub annotations, SARIF and JUnit.

Both name files from the repository root (`matrix.core.gate.repo_prefix`): the runner resolves an annotation's
`file` and code scanning a SARIF URI against the checkout. With no repository root known, annotations fall back
to the path from the current directory (the checkout in CI) and SARIF to the path from the folder audited.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path, PurePosixPath

from matrix.core.finding import Finding, Tool
from matrix.core.jsonio import dumps_indented
from matrix.core.junit import junit as junit_document
from matrix.core.output import finding_annotation, message_of, sarif_document, tool_version


def cwd_path(root: str, path: str, cwd: Path) -> str:
    """A finding's file relative to the current directory `cwd`, POSIX style (its full path when outside)."""
    full = Path(root) / path
    try:
        return PurePosixPath(full.resolve().relative_to(cwd)).as_posix()
    except ValueError:
        return full.as_posix()


def repo_files(root: str, prefix: str | None) -> Callable[[str], str]:
    """A finding path's file as annotations name it, worked out once per file (it may stat every parent)."""
    known: dict[str, str] = {}
    cwd: list[Path] = []

    def file_of(path: str) -> str:
        shown = known.get(path)
        if shown is None:
            if prefix is not None:
                shown = f"{prefix}/{path}" if prefix and path else path or prefix
            else:
                if not cwd:
                    cwd.append(Path.cwd().resolve())
                shown = cwd_path(root, path, cwd[0])
            known[path] = shown
        return shown

    return file_of


def github(findings: Sequence[Finding], *, root: str, prefix: str | None) -> str:
    """One workflow command per finding, in the order given (worst first)."""
    file_of = repo_files(root, prefix)
    return "\n".join(finding_annotation(f, file_of(f.path) if f.path else "") for f in findings)


def sarif(findings: Sequence[Finding], *, tool: Tool, prefix: str | None, help_uri: str | None = None) -> str:
    """The SARIF 2.1.0 document of `findings`, indented."""
    doc = sarif_document(findings, tool=tool, prefix=prefix or "", version=tool_version(), help_uri=help_uri)
    return dumps_indented(doc)


def junit(
    findings: Sequence[Finding], *, tool: Tool, root: str, prefix: str | None, checked: Collection[str] | None = None
) -> str:
    """The JUnit XML of `findings` (`matrix.core.junit`), files named as annotations name them; `checked`: the
    kinds this run checked, when not every kind of the tool."""
    file_of = repo_files(root, prefix)
    return junit_document(findings, tool=tool, file_of=file_of, message_of=message_of, checked=checked)
