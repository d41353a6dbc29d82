"""Baselines, SARIF URIs and annotations name files from the repository root, not from the folder typed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from matrix.cli.main import main

FIXTURE_SUITE = Path(__file__).parent.parent / "guards" / "fixture_suite"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def checkout(tmp_path: Path) -> Path:
    """A repository (its `.git` folder marks the top level) holding the fixture suite at test/registered."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(FIXTURE_SUITE, repo / "test" / "registered")
    return repo


def test_narrowing_the_folder_keeps_baseline_entries_matching(capsys, tmp_path):
    repo = checkout(tmp_path)
    base = tmp_path / "baseline.json"
    code, _, _ = run(capsys, "guards", str(repo / "test" / "registered"), "--no-workflows", "--write-baseline", str(base))
    assert code == 0
    entries = json.loads(base.read_text())["entries"]
    assert all(e["path"].startswith("test/registered/") for e in entries)
    assert any(e["path"].startswith("test/registered/attention/") for e in entries)
    code, out, _ = run(
        capsys, "guards", str(repo / "test" / "registered" / "attention"), "--no-workflows", "--baseline", str(base)
    )
    # The attention folder's errors are all acknowledged; the rest of the tree's entries are out of scope, not stale.
    assert code == 0, out
    assert "0 new error(s)" in out and "0 stale" in out
    assert "0 acknowledged" not in out


def test_narrowed_rewrite_keeps_the_rest_of_the_tree(capsys, tmp_path):
    repo = checkout(tmp_path)
    base = tmp_path / "baseline.json"
    run(capsys, "guards", str(repo / "test" / "registered"), "--no-workflows", "--write-baseline", str(base))
    before = base.read_bytes()
    run(capsys, "guards", str(repo / "test" / "registered" / "attention"), "--no-workflows", "--write-baseline", str(base))
    assert base.read_bytes() == before


def test_an_old_baseline_is_read_and_said_once(capsys, tmp_path):
    repo = checkout(tmp_path)
    suite = repo / "test" / "registered"
    base = tmp_path / "baseline.json"
    run(capsys, "guards", str(suite), "--no-workflows", "--write-baseline", str(base))
    doc = json.loads(base.read_text())
    head = "test/registered/"
    old = {
        "schema": "specmatrix.guards-baseline/1",
        "entries": [
            {
                k: v
                for k, v in {**e, "path": e["path"].removeprefix(head), "test": e["test"].removeprefix(head)}.items()
                if k != "fingerprint"
            }
            for e in doc["entries"]
        ],
    }
    base.write_text(json.dumps(old))
    code, out, err = run(capsys, "guards", str(suite), "--no-workflows", "--baseline", str(base))
    assert code == 0, out
    assert "0 new error(s)" in out and "0 stale" in out
    assert err.count("guards-baseline/1") == 1


def test_sarif_uris_resolve_from_the_repository_root(capsys, tmp_path):
    repo = checkout(tmp_path)
    _code, out, _ = run(capsys, "guards", str(repo / "test" / "registered" / "attention"), "--no-workflows", "--format", "sarif")
    doc = json.loads(out)
    uris = [loc["physicalLocation"]["artifactLocation"] for r in doc["runs"][0]["results"] for loc in r.get("locations", [])]
    assert uris and all("uriBaseId" not in u for u in uris)
    assert all((repo / u["uri"]).is_file() for u in uris)
    fingerprints = [r["partialFingerprints"] for r in doc["runs"][0]["results"]]
    assert all(fp for fp in fingerprints)
    assert doc["runs"][0]["tool"]["driver"]["version"] != "0+unknown"


def test_a_tree_without_git_metadata_is_rooted_at_its_github_folder(capsys, tmp_path):
    repo = checkout(tmp_path)
    (repo / ".git").rmdir()
    (repo / ".github").mkdir()
    _, out, _ = run(capsys, "guards", str(repo / "test" / "registered"), "--no-workflows", "--format", "sarif")
    uris = [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(out)["runs"][0]["results"]
        for loc in r.get("locations", [])
    ]
    assert uris and all(u.startswith("test/registered/") for u in uris)


def test_the_tool_version_is_never_unknown(monkeypatch):
    import importlib.metadata

    import matrix
    from matrix.core.output import tool_version

    assert tool_version() == importlib.metadata.version("specmatrix")

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    # Run from a source tree without the distribution installed (the Action): the package's own version.
    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert tool_version() == matrix.__version__ != "0+unknown"
