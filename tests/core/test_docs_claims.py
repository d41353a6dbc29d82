"""What the docs claim about the code, held to the code: each test reads the claim from the page and the fact from
the code (the parser, action.yml, the profile table, the noxfile, pre-commit itself), and fails when they part."""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from matrix.cli import options as cli_options
from matrix.cli.main import build_parser
from matrix.core.options import DEPRECATED
from tests.core.test_docs_commands import doc_files

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MAX_LINES = 400


# --- deprecated spellings: the table of docs/formats.md is the parser's ---------------------------------------------


def deprecated_spellings(parser: argparse.ArgumentParser | None = None) -> set[tuple[str, str, str]]:
    """(command, old spelling, replacement) for every old spelling a command still accepts with a warning."""
    parser = parser or build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = set()
    for name, command in sub.choices.items():
        for action in command._actions:
            if isinstance(action, cli_options._Format):
                found |= {(name, f"--format {old}", DEPRECATED[f"--format {old}"]) for old in action.renamed}
            elif isinstance(action, cli_options._DeprecatedFlag):
                found.add((name, action.option_strings[0], DEPRECATED[action.option_strings[0]]))
            elif isinstance(action, cli_options._DeprecatedValue):
                found.add((name, action.key, DEPRECATED[action.key]))
    return found


def documented_spellings(text: str) -> set[tuple[str, str, str]]:
    start, end = text.index("<!-- deprecated spellings -->"), text.index("<!-- end of deprecated spellings -->")
    rows = [line for line in text[start:end].splitlines() if line.startswith("| `")]
    return {tuple(cell.strip().strip("`") for cell in row.strip("|").split("|")) for row in rows}  # type: ignore[misc]


def test_the_old_spellings_table_is_the_parsers() -> None:
    assert documented_spellings((DOCS / "formats.md").read_text(encoding="utf-8")) == deprecated_spellings()


def test_a_spelling_the_parser_dropped_is_found() -> None:
    doc = "<!-- deprecated spellings -->\n| `guards` | `--format gha` | `--format github` |\n<!-- end of deprecated spellings -->"
    assert ("guards", "--format gha", "--format github") not in deprecated_spellings()
    assert documented_spellings(doc) == {("guards", "--format gha", "--format github")}


def test_no_page_says_an_old_spelling_works_everywhere() -> None:
    """The README once said `--format gha` "still works"; six commands rejected it."""
    for path in doc_files():
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert not re.search(r"--format gha`\) still work", text), path
    assert re.search(r"--format gha`\) still work", "Old spellings (`--json`, `--md`, `--allow`, `--format gha`) still work")


# --- the Action: what it installs, what each command takes ---------------------------------------------------------


def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def action_packages() -> tuple[set[str], set[str]]:
    """(the modules the install step checks for, the distributions it installs when one is missing)."""
    install = next(s for s in action()["runs"]["steps"] if s["name"] == "Install specmatrix")["run"]
    checked = re.search(r"-c 'import ([\w, ]+)'", install)
    installed = re.search(r"ci/constraints\.txt\" \\\s*\n\s*([\w -]+)\n", install)
    assert checked and installed, install
    return {m.strip() for m in checked.group(1).split(",")}, set(installed.group(1).split())


def project_dependencies() -> set[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0] for d in deps}


def test_the_action_installs_the_projects_dependencies_and_the_docs_name_them() -> None:
    checked, installed = action_packages()
    assert installed == project_dependencies()
    assert checked == {d.replace("-", "_").replace("pyyaml", "yaml") for d in installed}
    for page in ("adoption.md", "install.md"):
        text = " ".join((DOCS / page).read_text(encoding="utf-8").split())
        assert "six" in text, page
        for name in installed:
            assert f"`{name}`" in text, (page, name)
    adoption = " ".join((DOCS / "adoption.md").read_text(encoding="utf-8").split())
    assert "only `packaging`" not in adoption and "no package index for itself" not in adoption


def test_action_inputs_say_which_command_takes_them() -> None:
    """sarif and baseline work for both commands; only workflows is guards-only (the audit step refuses it)."""
    inputs = action()["inputs"]
    assert "guards only" not in inputs["sarif"]["description"]
    assert "guards only" not in inputs["baseline"]["description"]
    assert "guards only" in inputs["workflows"]["description"]
    table = (DOCS / "adoption.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)` \| [^|]+ \| (.+) \|$", table, re.M)}
    assert rows["sarif"].startswith("either command") and rows["baseline"].startswith("either command")
    assert rows["workflows"].startswith("guards only")


def test_the_pytest_audit_example_workflow_uses_what_the_action_takes() -> None:
    doc = yaml.safe_load((DOCS / "examples" / "specmatrix-pytest-audit.yml").read_text(encoding="utf-8"))
    (job,) = doc["jobs"].values()
    (step,) = [s for s in job["steps"] if "specmatrix@" in s.get("uses", "")]
    assert step["with"]["command"] == "pytest-audit"
    assert set(step["with"]) <= set(action()["inputs"]) - {"workflows"}
    assert job["permissions"] == {"contents": "read", "security-events": "write", "actions": "read"}


def test_the_audit_step_writes_sarif_and_honours_a_baseline_for_pytest_audit(tmp_path: Path) -> None:
    """The docs once said sarif was guards-only and pytest-audit took no baseline: both work."""
    from tests.registered_suite.test_adoption import _github_env, _outputs, _run_step

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "pytest-project", repo)
    (tmp_path / "runner-temp").mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    env = _github_env(tmp_path, {}, {})
    written = subprocess.run(
        ["specmatrix", "pytest-audit", ".", "--write-baseline", "specmatrix-baseline.json"],
        cwd=repo,
        env=env,
        capture_output=True,
        check=False,
    )
    assert written.returncode == 0, written.stderr
    inputs = {"command": "pytest-audit", "baseline": "specmatrix-baseline.json", "sarif": "true"}
    done = _run_step(tmp_path, "Audit", inputs)
    assert done.returncode == 0, done.stderr
    outputs = _outputs(tmp_path)
    assert outputs["exit-code"] == "0"
    sarif = json.loads(Path(outputs["sarif-file"]).read_text(encoding="utf-8"))
    assert sarif["runs"][0]["tool"]["driver"]["name"].startswith("specmatrix")
    (tmp_path / "output").unlink()
    unacknowledged = _run_step(tmp_path, "Audit", {"command": "pytest-audit", "sarif": "true"})
    assert _outputs(tmp_path)["exit-code"] == "1", unacknowledged.stdout


# --- counts and defaults the pages state ---------------------------------------------------------------------------

BUILTIN = re.compile(r"(\d+) built-in (?:runner )?profiles")


def test_a_stated_number_of_built_in_profiles_is_the_real_one() -> None:
    """adoption.md said "the 13 built-in profiles" when there were 24; a page states the number only if it is true."""
    from matrix.core.loader import load_runners

    real = len(load_runners())
    stated = [(p.name, int(n)) for p in doc_files() for n in BUILTIN.findall(p.read_text(encoding="utf-8"))]
    assert [(name, n) for name, n in stated if n != real] == []
    assert BUILTIN.findall("not the 13 built-in sglang ones") == [] and BUILTIN.findall("the 13 built-in profiles") == ["13"]


def nox_matrix_runner() -> str:
    """The runner `nox -s matrix` shows when given none: the literal fallback of its `runner = ...` line."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    session = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "matrix")
    (value,) = [n.value for n in ast.walk(session) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "runner"]
    assert isinstance(value, ast.IfExp) and isinstance(value.orelse, ast.Constant)
    return str(value.orelse.value)


def test_the_main_job_runner_the_pages_name_is_the_noxfiles() -> None:
    runner = nox_matrix_runner()
    for page in (DOCS / "install.md", ROOT / "README.md"):
        text = " ".join(page.read_text(encoding="utf-8").split())
        said = re.search(
            r"`nox -s matrix` prints the runner profiles, then the expected outcome of every cell on `([\w-]+)`", text
        )
        assert said and said.group(1) == runner, page
        assert "on the default runner" not in text, page  # the command's own default is `auto`, not this profile
    for line in ("python3 -m venv .venv && .venv/bin/pip install -q nox==", ".venv/bin/nox -s tests"):
        assert line in (ROOT / "README.md").read_text(encoding="utf-8") and line in (DOCS / "install.md").read_text(
            encoding="utf-8"
        )


# --- pre-commit: `autoupdate` needs no tags ------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def test_pre_commit_autoupdate_moves_a_sha_rev_without_tags(tmp_path: Path) -> None:
    """adoption.md once said autoupdate moves `rev` only once the repository has tags; it takes the newest commit."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    _git(hooks, "init", "-q")
    (hooks / ".pre-commit-hooks.yaml").write_text("- {id: noop, name: noop, entry: 'true', language: system}\n")
    _git(hooks, "add", ".")
    _git(hooks, "commit", "-qm", "one")
    first = _git(hooks, "rev-parse", "HEAD")
    (hooks / "README").write_text("two\n")
    _git(hooks, "add", ".")
    _git(hooks, "commit", "-qm", "two")
    newest = _git(hooks, "rev-parse", "HEAD")
    assert _git(hooks, "tag", "--list") == ""
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    config = project / ".pre-commit-config.yaml"
    config.write_text(yaml.safe_dump({"repos": [{"repo": str(hooks), "rev": first, "hooks": [{"id": "noop"}]}]}))
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "autoupdate"], cwd=project, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert yaml.safe_load(config.read_text())["repos"][0]["rev"] == newest
    text = " ".join((DOCS / "adoption.md").read_text(encoding="utf-8").split())
    assert "`pre-commit autoupdate` moves `rev` to the newest commit of the default branch" in text
    assert "only once the repository has tags" not in text


# --- the pages themselves ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_page_reads_in_minutes(page: Path) -> None:
    assert len(page.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_docs_hold_no_generated_listings() -> None:
    """Measured results and generated listings live in results/; docs/ keeps pages, examples and two pictures."""
    assert not (DOCS / "results").exists()
    big = [p for p in DOCS.rglob("*") if p.is_file() and p.stat().st_size > 400_000]
    assert big == []
    assert {p.suffix for p in DOCS.rglob("*") if p.is_file()} <= {".md", ".png", ".yml", ".yaml"}


LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def broken_links(pages: list[Path]) -> list[str]:
    """`page: target` for every relative link whose file, or whose heading anchor, does not exist."""
    broken = []
    for page in pages:
        text = CODE_SPAN.sub("", FENCED.sub("", page.read_text(encoding="utf-8")))
        for match in LINK.finditer(text):
            target = match.group("target")
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists() or (
                anchor and file.suffix == ".md" and anchor not in _anchors(file.read_text(encoding="utf-8"))
            ):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    return broken


FENCED = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`]*`")


def test_every_relative_link_of_the_docs_and_results_resolves() -> None:
    """Pages and results moved; a link to a moved file or a renamed section is a failing test."""
    pages = [*doc_files(), *sorted((ROOT / "results").glob("*.md"))]
    assert broken_links(pages) == []


def test_a_broken_link_is_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "a.md").write_text(
        "# A\n## 4. The GitHub Action\n[x](b.md) [y](a.md#4-the-github-action) [z](a.md#the-github-action)\n"
    )
    assert broken_links([tmp_path / "a.md"]) == ["a.md: b.md", "a.md: a.md#the-github-action"]


# --- formats.md: the fields of pytest-audit's JSON -----------------------------------------------------------------

ENVELOPE = {"schema", "tool", "counts", "exit_code", "failing", "findings"}


def pytest_audit_fields(text: str) -> str:
    """formats.md's paragraph on the fields pytest-audit's JSON adds (its own, `undetermined_tests`, `runs`)."""
    start = text.index("`pytest-audit --format json` adds its own fields")
    return text[start : text.index("\n\n", start)]


def undocumented(paragraph: str, names: set[str]) -> set[str]:
    return {name for name in names if f"`{name}`" not in paragraph}


def test_formats_md_names_every_field_pytest_audit_json_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from matrix.cli.main import main

    monkeypatch.setenv("SPECMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    junit = tmp_path / "cpu.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest" tests="1">'
        '<testcase classname="tests.test_norms" name="test_rms_norm_reference" time="0.01"/>'
        "</testsuite></testsuites>",
        encoding="utf-8",
    )
    project = str(ROOT / "examples" / "kernels-ci")
    main(["pytest-audit", project, "--format", "json", "--junit", f"ubuntu-24.04={junit}"])
    doc = json.loads(capsys.readouterr().out)
    names = set(doc) - ENVELOPE
    names |= {key for record in doc["undetermined_tests"] for key in record} | set(doc["runs"])
    names |= set(doc["runs"]["counts"]) | set(doc["runs"]["tests"][0])
    assert doc["undetermined_tests"] and doc["runs"]["tests"]
    paragraph = pytest_audit_fields((DOCS / "formats.md").read_text(encoding="utf-8"))
    assert undocumented(paragraph, names) == set()


def test_a_field_the_page_leaves_out_is_found() -> None:
    paragraph = "`pytest-audit --format json` adds its own fields to the envelope: `root`, `files`."
    assert undocumented(paragraph, {"root", "files", "undetermined_tests"}) == {"undetermined_tests"}
