"""A clone of the repository names no file outside it: no sibling folder, no private notes, no machine's path.

The patterns are written with character classes so that this file does not match itself.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = {
    "a sibling folder of the checkout": re.compile(r"\.\.[/\\]shar[e]d\b"),
    "notes that are not part of the repository": re.compile(r"\bDOM[A]IN\.md\b"),
    "an absolute path on a development machine": re.compile(r"(?<![\w.~-])/wor[k]/"),
}
# Folders a checkout may hold that are not the repository's own (build and tool output).
_NOT_OURS = frozenset({".git", ".nox", ".venv", ".devkit", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"})


def repository_files(root: Path) -> list[Path]:
    """The files a clone has (tracked, plus new files git would add); every file when `root` is not a git checkout."""
    done = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    if done.returncode == 0 and done.stdout:
        names = [n for n in done.stdout.decode().split("\0") if n]
        return [root / n for n in names if (root / n).is_file()]
    return [p for p in root.rglob("*") if p.is_file() and not _NOT_OURS.intersection(p.relative_to(root).parts)]


def outside_references(root: Path, files: list[Path]) -> list[str]:
    """`path:line: what` for every line naming something outside the repository; binary files are skipped."""
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for what, pattern in OUTSIDE.items():
                if pattern.search(line):
                    found.append(f"{path.relative_to(root).as_posix()}:{number}: {what}: {line.strip()[:120]}")
    return found


def test_repository_names_nothing_outside_itself() -> None:
    files = repository_files(ROOT)
    assert len(files) > 100  # the listing worked: README, matrix/, tests/, docs/ ...
    assert outside_references(ROOT, files) == []


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("DEFAULT = ROOT.parent / 'shared' / 'data'  # see .." + "/shared/data/x.json", "a sibling folder"),
        ("source = 'flashinfer XQA limits (DOM" + "AIN.md §3)'", "notes that are not part"),
        ("python ci/bench_shards.py --registrations /wo" + "rk/shared/data/x.json", "an absolute path"),
        ("See ..\\" + "shared\\data on Windows", "a sibling folder"),
    ],
)
def test_each_kind_of_outside_reference_is_found(tmp_path: Path, line: str, what: str) -> None:
    planted = tmp_path / "docs" / "planted.md"
    planted.parent.mkdir()
    planted.write_text(f"# fine\n{line}\n", encoding="utf-8")
    (tmp_path / "clean.md").write_text("python ci/bench_shards.py --registrations ci/data/x.json /tmp/out\n", encoding="utf-8")
    found = outside_references(tmp_path, repository_files(tmp_path))
    assert len(found) == 1 and found[0].startswith("docs/planted.md:2: " + what), found


def test_in_repository_paths_are_not_flagged(tmp_path: Path) -> None:
    ok = [
        "python ci/extract_registrations.py /tmp/sglang --out ci/data/sglang-registrations-2026-07.json",
        "git clone https://github.com/sgl-project/sglang /tmp/sglang",
        "ROOT = Path(__file__).resolve().parent.parent / 'ci' / 'data'",
        "cd ~/work/specmatrix && nox",
    ]
    (tmp_path / "ok.md").write_text("\n".join(ok) + "\n", encoding="utf-8")
    assert outside_references(tmp_path, repository_files(tmp_path)) == []


SOURCES = ROOT / "docs" / "sources.md"
_CITATION = re.compile(r"sources\.md#([A-Za-z0-9_-]+)")


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def dangling_citations(root: Path, files: list[Path], anchors: set[str]) -> list[str]:
    """`path:line: #anchor` for every citation of docs/sources.md whose section does not exist."""
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            found += [f"{path.relative_to(root).as_posix()}:{number}: #{a}" for a in _CITATION.findall(line) if a not in anchors]
    return found


def test_every_sources_citation_names_an_existing_section() -> None:
    files = repository_files(ROOT)
    cited = [p for p in files if _CITATION.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert len(cited) >= 5  # the rules, profiles and predicates cite it
    assert dangling_citations(ROOT, files, heading_anchors(SOURCES.read_text(encoding="utf-8"))) == []


def test_a_citation_of_a_missing_section_is_found(tmp_path: Path) -> None:
    anchors = heading_anchors("# Sources\n## XQA limits\n## Guard helpers\n")
    assert anchors == {"sources", "xqa-limits", "guard-helpers"}
    (tmp_path / "rules.toml").write_text(
        'source = "docs/sources.md#xqa-limits"\nsource = "docs/sources.md' + '#xqa-head-dims"\n', encoding="utf-8"
    )
    assert dangling_citations(tmp_path, repository_files(tmp_path), anchors) == ["rules.toml:2: #xqa-head-dims"]
