"""`specmatrix report --html`: one page from run reports, guard audits and ledger joins; hostile text stays data."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.expect import effective_versions, expectations
from matrix.core.loader import load_matrix
from matrix.core.report import CellStatus, write_report
from matrix.coverage import html as page_html
from matrix.coverage.inputs import Document, RowSeverity, guard_audit, ledger_join
from matrix.coverage.merge import ReportSource, merge
from matrix.coverage.page import page_data

from .conftest import make_report, run_cells

# Strings that would break out of markup, a script element or an attribute if they were interpolated.
HOSTILE_HTML = [
    "<script>window.__pwned=1</script>",
    "</script><script>alert(1)</script>",
    "</details><img src=x onerror=alert(1)>",
    '" onmouseover="alert(1)" \'',
    '\' & "&amp;&lt;"',
    "line one\nline two\r\n<!-- -->",
    "\x00\x01\x1b[31m\x7f control",
    "lone \udc80 surrogate \ud800",
    "<![CDATA[ ]]> <!DOCTYPE x> \u2028\u2029",
]
HOSTILE_IDS = ["script", "close-script", "close-details", "attribute", "ampersand", "newlines", "control", "surrogate", "cdata"]


class Tags(HTMLParser):
    """Every element the browser's tokenizer would create, in order, and the text of each script element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[tuple[str, str | None], ...]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, tuple(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def parse(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    tags.close()
    return tags


def report(capsys: pytest.CaptureFixture[str], out: Path, *inputs: Path | str) -> tuple[int, str, str]:
    code = main(["report", "--html", str(out), *map(str, inputs)])
    o, e = capsys.readouterr()
    return code, o, e


def guards_doc(text: str) -> dict[str, object]:
    finding = {"kind": "silent-skip", "path": f"t/{text}.py", "line": 7, "test": text, "runners": [text], "guard": text}
    finding |= {"reason": text, "hint": text, "failing": True, "severity": "error"}
    return {"schema": "specmatrix.guards/1", "root": "test/registered", "files_scanned": 1, "exit_code": 1, "findings": [finding]}


def ledger_doc(text: str) -> dict[str, object]:
    finding = {"tool": "ledger", "kind": "silent-skip", "severity": "error", "failing": True, "subject": text}
    finding |= {"message": text, "path": "a.py", "line": 3, "runners": ["4-gpu-b200"], "hint": "", "detail": text}
    finding |= {"accepted_by": "", "evidence": text, "fingerprint": ""}
    return {
        "schema": "specmatrix.ledger-report/2",
        "root": ".",
        "ledgers": ["l"],
        "processes": 1,
        "exit_code": 1,
        "findings": [finding],
    }


def hostile_inputs(tmp_path: Path, default_matrix, runners, text: str) -> list[Path]:
    runner = runners["4-gpu-b200"]
    cells = run_cells(default_matrix, runner)[:2]
    rep = make_report(default_matrix, runner, {cells[0]: CellStatus.SKIPPED_UNEXPECTED, cells[1]: CellStatus.FAILED})
    first, second = rep.cells
    rep = type(rep)(**{**vars(rep), "cells": (
        type(first)(**{**vars(first), "skip_reason": text, "test": text, "nodeid": text}),
        type(second)(**{**vars(second), "message": text}),
    )})  # fmt: skip
    paths = [tmp_path / "run.json", tmp_path / "guards.json", tmp_path / "ledger.json"]
    write_report(rep, paths[0])
    paths[1].write_text(json.dumps(guards_doc(text)), encoding="utf-8")
    paths[2].write_text(json.dumps(ledger_doc(text)), encoding="utf-8")
    return paths


def strings_of(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(strings_of(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(strings_of(v) for v in value)) if value else set()
    return set()


def data_of(page: str) -> object:
    return json.loads(parse(page).scripts[0])


@pytest.fixture
def benign_tags(tmp_path, capsys, default_matrix, runners) -> list[tuple[str, tuple[tuple[str, str | None], ...]]]:
    folder = tmp_path / "benign"
    folder.mkdir()
    code, _, err = report(capsys, folder / "p.html", *hostile_inputs(folder, default_matrix, runners, "plain"))
    assert code == 0, err
    return [t for t in parse((folder / "p.html").read_text(encoding="utf-8")).tags if t[0] != "meta"]


@pytest.mark.parametrize("text", HOSTILE_HTML, ids=HOSTILE_IDS)
def test_hostile_text_stays_data(tmp_path, capsys, default_matrix, runners, benign_tags, text):
    """The page's elements are exactly those of a page built from plain text, and the data holds the text intact."""
    code, _, err = report(capsys, tmp_path / "p.html", *hostile_inputs(tmp_path, default_matrix, runners, text))
    assert code == 0, err
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert page.isascii()
    assert [t for t in parse(page).tags if t[0] != "meta"] == benign_tags
    embedded = parse(page).scripts[0]
    assert not set("<>&") & set(embedded)
    assert text in strings_of(json.loads(embedded))


def test_naive_embedding_is_caught(tmp_path, capsys, default_matrix, runners, benign_tags, monkeypatch):
    """Red: JSON put into the script element without escaping lets `</script>` end it and a new element begin."""
    monkeypatch.setattr(page_html, "embedded_json", json.dumps)
    code, _, _ = report(capsys, tmp_path / "p.html", *hostile_inputs(tmp_path, default_matrix, runners, HOSTILE_HTML[1]))
    assert code == 0
    assert [t for t in parse((tmp_path / "p.html").read_text(encoding="utf-8")).tags if t[0] != "meta"] != benign_tags


def test_policy_pins_the_page_script_and_style(tmp_path, capsys, default_matrix, runners):
    code, _, _ = report(capsys, tmp_path / "p.html", *hostile_inputs(tmp_path, default_matrix, runners, "x"))
    assert code == 0
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    tags = parse(page)
    policy = next(
        dict(a)["content"] for t, a in tags.tags if t == "meta" and dict(a).get("http-equiv") == "Content-Security-Policy"
    )
    assert policy and "unsafe-inline" not in policy and policy.startswith("default-src 'none'")
    script = tags.scripts[1]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    assert [dict(a).get("type") for t, a in tags.tags if t == "script"] == ["application/json", None]
    assert not re.search(r"\b(src|href)=", page), "the page loads nothing from outside itself"


def test_inputs_findings_and_trails(tmp_path, capsys, default_matrix, runners):
    code, out, err = report(capsys, tmp_path / "p.html", *hostile_inputs(tmp_path, default_matrix, runners, "t"))
    assert code == 0, err
    assert "3 input(s)" in out
    data = data_of((tmp_path / "p.html").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    assert [i["kind"] for i in data["inputs"]] == ["run report", "guard audit", "ledger join"]
    assert data["inputs"][0]["created"] == "2026-07-20T00:00:00Z"
    rows = {(r[0], r[1]): r for r in data["findings"]}
    assert rows[("guard audit", "silent-skip")][3:5] == ["test/registered/t/t.py", 7]
    assert rows[("ledger join", "silent-skip")][2:5] == ["error", "a.py", 3]
    assert ("run report", "unexpected-skip") in rows and ("run report", "never-ran") in rows
    # The trails are matrix.core.expect's, for every runner and cell.
    runner = runners["4-gpu-b200"]
    names = [r["name"] for r in data["runners"]]
    exps = expectations(default_matrix, runner, effective_versions(default_matrix, {}))
    column = data["trail_index"][names.index("4-gpu-b200")]
    for k, cell in enumerate(default_matrix.cells):
        trail = data["trails"][column[k]]
        assert trail["outcome"] == exps[cell.id].outcome.value
        assert [data["rules"][v[0]]["id"] for v in trail["verdicts"]] == [v.rule.id for v in exps[cell.id].trail]
    grid = data["grid"][names.index("4-gpu-b200")]
    assert grid.count("U") == 1 and grid.count("F") == 1
    assert len(grid) == len(default_matrix.cells)


OWN_MATRIX = """
name = "own"
[[axis]]
name = "family"
values = ["alpha", "beta"]
id = "{}"
[[axis]]
name = "size"
values = [1, 2, 3]
id = "s{}"
[[group]]
name = "g"
family = ["alpha", "beta"]
size = [1, 2, 3]
[[rule]]
id = "big-needs-two"
kind = "hardware"
reason = "size 3 needs two GPUs"
source = "own notes"
when = { size = { ge = 3 } }
require = { gpus = { ge = 2 } }
"""


def test_a_matrix_of_its_own(tmp_path, capsys, runners):
    path = tmp_path / "own.toml"
    path.write_text(OWN_MATRIX, encoding="utf-8")
    own = load_matrix(path)
    runner = runners["1-gpu-h200"]
    write_report(make_report(own, runner, {own.cells[0].id: CellStatus.PASSED}), tmp_path / "r.json")
    code = main(["--matrix", str(path), "report", "--html", str(tmp_path / "p.html"), str(tmp_path / "r.json")])
    capsys.readouterr()
    assert code == 0
    data = data_of((tmp_path / "p.html").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    assert data["axes"] == [{"name": "family", "values": ["alpha", "beta"]}, {"name": "size", "values": ["1", "2", "3"]}]
    assert data["cells"]["ids"] == [c.id for c in own.cells]
    sizes = data["cells"]["axes"][1]
    # Passed, never ran (RUN, no result) and expected skips (size 3 on one GPU), by the matrix's own rule.
    assert data["grid"] == ["".join("P" if k == 0 else ("S" if sizes[k] == 2 else "N") for k in range(len(own.cells)))]


def write_json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_refuses_two_matrices(tmp_path, capsys, default_matrix, runners):
    runner = runners["4-gpu-b200"]
    one = make_report(default_matrix, runner, {})
    write_report(one, tmp_path / "a.json")
    write_report(type(one)(**{**vars(one), "matrix": "other"}), tmp_path / "b.json")
    code, _, err = report(capsys, tmp_path / "p.html", tmp_path / "a.json", tmp_path / "b.json")
    assert code == 2 and err.count("\n") == 1
    assert "cannot mix matrices" in err and "'other'" in err
    assert not (tmp_path / "p.html").exists()
    code, _, err = report(capsys, tmp_path / "p.html", tmp_path / "b.json")
    assert code == 2 and "is from matrix 'other' but the matrix given is 'frozen-kv-mtp-draft-attention'" in err


def test_refuses_to_write_the_page_over_one_of_its_inputs(tmp_path, capsys, default_matrix, runners):
    write_report(make_report(default_matrix, runners["4-gpu-b200"], {}), tmp_path / "a.json")
    before = (tmp_path / "a.json").read_bytes()
    code, _, err = report(capsys, tmp_path / "a.json", tmp_path)
    assert code == 2 and err.count("\n") == 1 and "is one of this command's inputs" in err
    assert (tmp_path / "a.json").read_bytes() == before


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"schema": "specmatrix.other/1"}, "not an input `report` reads ('specmatrix.other/1'"),
        ([1, 2], "not an input `report` reads (no schema field"),
        (
            {**guards_doc("x"), "findings": [{**guards_doc("x")["findings"][0], "line": "7"}]},
            "findings[0]: field 'line' has the wrong type",
        ),  # type: ignore[index]
        ({**guards_doc("x"), "findings": [{**guards_doc("x")["findings"][0], "line": True}]}, "field 'line' has the wrong type"),  # type: ignore[index]
        ({**guards_doc("x"), "findings": [{**guards_doc("x")["findings"][0], "severity": "fatal"}]}, "unknown severity 'fatal'"),  # type: ignore[index]
        ({**ledger_doc("x"), "findings": ["x"]}, "findings[0]: not an object"),
        ({**ledger_doc("x"), "findings": [{**ledger_doc("x")["findings"][0], "line": -1}]}, "field 'line' must be a line number"),  # type: ignore[index]
        ({"schema": "specmatrix.report/1", "matrix": "m"}, "missing field 'runner'"),
    ],
    ids=["schema", "no-schema", "line-str", "line-bool", "severity", "not-object", "line-negative", "report-field"],
)
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, doc, message):
    code, _, err = report(capsys, tmp_path / "p.html", write_json(tmp_path / "in.json", doc))
    assert code == 2 and err.count("\n") == 1, err
    assert message in err


def test_truncated_and_empty_folder(tmp_path, capsys):
    (tmp_path / "cut.json").write_text('{"schema": "specmatrix.guards/1", "findings": [', encoding="utf-8")
    code, _, err = report(capsys, tmp_path / "p.html", tmp_path / "cut.json")
    assert code == 2 and "corrupt or truncated JSON" in err
    (tmp_path / "empty").mkdir()
    code, _, err = report(capsys, tmp_path / "p.html", tmp_path / "empty")
    assert code == 2 and "folder holds no *.json input" in err


def test_adapter_severities():
    ledger = ledger_doc("t")
    base = ledger["findings"][0]  # type: ignore[index]
    ledger["findings"] = [base, {**base, "kind": "settled", "failing": False}, {**base, "failing": False, "accepted_by": "allow"}]
    rows = ledger_join(Document(label="l.json", doc=ledger, modified="2026-01-01T00:00:00+00:00")).findings
    assert [r.severity for r in rows] == [RowSeverity.ERROR, RowSeverity.INFO, RowSeverity.INFO]
    assert rows[2].message.endswith("accepted by allow")
    adapted = guard_audit(Document(label="g.json", doc=guards_doc("t"), modified="2026-01-01T00:00:00+00:00"))
    assert adapted.file.created_from == "file modified" and adapted.file.created == "2026-01-01T00:00:00+00:00"
    assert adapted.findings[0].message == "t; guard: t; fix: t"


# One silent skip with the static audit's note and one settled guard, as `specmatrix ledger --format json` wrote them
# before its findings were core records (/1) and as it writes them now (/2).
LEDGER_V1_FINDINGS = [
    {"kind": "silent-skip", "path": "attn/test_a.py", "line": 9, "test": "attn/test_a.py::TestA::test_x"}
    | {"runner": "4-gpu-b200", "message": "skipped at runtime on 4-gpu-b200: 'sm90 only'", "static": "static: never-runs (g)"}
    | {"accepted_by": "", "evidence": "l.jsonl:4", "failing": True},
    {"kind": "settled", "path": "k/test_k.py", "line": 2, "test": "k/test_k.py::TestK", "runner": "4-gpu-b200"}
    | {"message": "static: undetermined (g); runtime on 4-gpu-b200: ran (1 passed)", "static": "HAVE is unknown"}
    | {"accepted_by": "", "evidence": "", "failing": False},
]
LEDGER_V2_FINDINGS = [
    {"tool": "ledger", "kind": "silent-skip", "severity": "error", "failing": True, "subject": "attn/test_a.py::TestA::test_x"}
    | {"message": "skipped at runtime on 4-gpu-b200: 'sm90 only'", "path": "attn/test_a.py", "line": 9}
    | {"runners": ["4-gpu-b200"], "hint": "", "detail": "static: never-runs (g)", "accepted_by": "", "evidence": "l.jsonl:4"}
    | {"fingerprint": ""},
    {"tool": "ledger", "kind": "settled", "severity": "info", "failing": False, "subject": "k/test_k.py::TestK"}
    | {"message": "static: undetermined (g); runtime on 4-gpu-b200: ran (1 passed)", "path": "k/test_k.py", "line": 2}
    | {"runners": ["4-gpu-b200"], "hint": "", "detail": "static reason: HAVE is unknown", "accepted_by": "", "evidence": ""}
    | {"fingerprint": ""},
]


def test_a_ledger_report_in_the_old_shape_reads_as_the_new_one(tmp_path, capsys):
    """A `specmatrix.ledger-report/1` file (test, runner, static) still reads, to the same rows as its /2 twin."""
    from matrix.cli.report import ADAPTERS

    head = {"root": "test/registered", "ledgers": ["l.jsonl"], "processes": 1, "exit_code": 1}
    old = {"schema": "specmatrix.ledger-report/1", **head, "findings": LEDGER_V1_FINDINGS}
    new = {"schema": "specmatrix.ledger-report/2", **head, "findings": LEDGER_V2_FINDINGS}
    rows = {}
    for name, doc in (("old", old), ("new", new)):
        rows[name] = ADAPTERS[doc["schema"]](Document(label=name, doc=doc, modified="2026-01-01T00:00:00+00:00")).findings
    assert rows["old"] == rows["new"]
    assert [(r.subject, r.runner) for r in rows["new"]] == [
        ("attn/test_a.py::TestA::test_x", "4-gpu-b200"),
        ("k/test_k.py::TestK", "4-gpu-b200"),
    ]
    assert rows["new"][1].message.endswith("; static reason: HAVE is unknown")
    (tmp_path / "old.json").write_text(json.dumps(old), encoding="utf-8")
    code, _, err = report(capsys, tmp_path / "p.html", tmp_path / "old.json")
    assert (code, err) == (0, "")


def test_unknown_cells_are_listed_not_dropped(default_matrix, runners):
    runner = runners["4-gpu-b200"]
    rep = make_report(default_matrix, runner, {run_cells(default_matrix, runner)[0]: CellStatus.PASSED})
    stray = type(rep.cells[0])(**{**vars(rep.cells[0]), "cell": "gone-cell", "nodeid": "t[gone-cell]"})
    rep = type(rep)(**{**vars(rep), "cells": (*rep.cells, stray)})
    result = merge(default_matrix, runners, [ReportSource(label="r.json", report=rep)])
    data = page_data(default_matrix, result, [], [], generated="now")
    assert any(row[1] == "unknown-cell" and "gone-cell" in row[7] for row in data["findings"])


def test_hostile_file_names_stay_data(tmp_path, capsys, default_matrix, runners, benign_tags):
    """Input paths are shown in the header: a file named like markup is text there too."""
    name = "<script>x<b onclick='x'>&\"\n.json"  # no slash: a file name
    folder = tmp_path / "in"
    folder.mkdir()
    paths = hostile_inputs(folder, default_matrix, runners, "plain")
    renamed = paths[0].rename(folder / name)
    code, _, err = report(capsys, tmp_path / "p.html", renamed, *paths[1:])
    assert code == 0, err
    page = (tmp_path / "p.html").read_text(encoding="utf-8")
    assert [t for t in parse(page).tags if t[0] != "meta"] == benign_tags
    assert str(renamed) in strings_of(data_of(page))


BROWSER_CHECK = Path(__file__).resolve().parents[2] / "ci" / "browser_report.py"


@pytest.mark.parametrize("chromium", [None, "no-such-chromium"], ids=["not-on-path", "bad-variable"])
def test_browser_check_without_chromium_fails_in_one_line(tmp_path, chromium):
    """Never a skip: with no Chromium the session fails, saying what to install."""
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)} | ({"CHROMIUM": chromium} if chromium else {})
    done = subprocess.run(
        [sys.executable, str(BROWSER_CHECK), "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("browser check could not run: ")
    assert (
        "apt-get install -y chromium" if chromium is None else "CHROMIUM='no-such-chromium' is not an executable"
    ) in done.stderr
    assert not (tmp_path / "out").exists()


def test_unfinished_run_and_missing_shard_are_findings(tmp_path, capsys, default_matrix, runners):
    """A shard that died leaves its in-progress marker, another uploaded nothing: the page still draws and says so."""
    cells = run_cells(default_matrix, runners["4-gpu-b200"])
    half = len(cells) // 2
    reports = tmp_path / "reports"
    write_report(
        make_report(default_matrix, runners["4-gpu-b200"], dict.fromkeys(cells[:half], CellStatus.PASSED)),
        reports / "shard-1.json",
    )
    (reports / "shard-2.json").write_text(
        '{"schema": "specmatrix.report-in-progress/1", "created": "2026-12-01T00:00:00+00:00", "pid": 7}'
    )
    plan = {
        "schema": "specmatrix.shard-plan/1",
        "runner": "4-gpu-b200",
        "shards": [{"index": 1, "cells": cells[:half]}, {"index": 2, "cells": cells[half:]}],
    }
    write_json(tmp_path / "plan.json", plan)
    code, _, err = report(capsys, tmp_path / "p.html", "--plan", tmp_path / "plan.json", reports)
    assert code == 0, err
    data = data_of((tmp_path / "p.html").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    kinds = [(r[1], r[3]) for r in data["findings"]]
    assert ("missing-report", str(reports / "shard-2.json")) in kinds  # the marker, at its path
    assert any(r[1] == "missing-report" and r[5] == "shard 2" for r in data["findings"])  # the plan's shard 2
    assert data["inputs"][1]["summary"].startswith("unfinished")
    assert data["grid"][0].count("N") == len(cells) - half
    # With a plan an empty folder is no error (nothing arrived; the plan says what was due); without one it is.
    (tmp_path / "none").mkdir()
    code, _, err = report(capsys, tmp_path / "q.html", "--plan", tmp_path / "plan.json", tmp_path / "none")
    assert code == 0, err
    assert data_of((tmp_path / "q.html").read_text(encoding="utf-8"))["grid"][0].count("N") == len(cells)  # type: ignore[index]


def test_own_matrix_findings_name_its_cells_not_missing_axes(tmp_path, capsys, runners):
    path = tmp_path / "own.toml"
    path.write_text(OWN_MATRIX, encoding="utf-8")
    own = load_matrix(path)
    write_report(make_report(own, runners["1-gpu-h200"], {}), tmp_path / "r.json")
    main(["--matrix", str(path), "report", "--html", str(tmp_path / "p.html"), str(tmp_path / "r.json")])
    capsys.readouterr()
    data = data_of((tmp_path / "p.html").read_text(encoding="utf-8"))
    messages = [r[7] for r in data["findings"] if r[1] == "never-ran"]  # type: ignore[index]
    # Grouped by the matrix's own coverage layout (first axis as rows, the next as columns): its axes, never "None".
    assert messages and messages[0].startswith("alpha size 1 expected to RUN but never ran on 1-gpu-h200"), messages
    assert not [m for m in messages if "None" in m]
