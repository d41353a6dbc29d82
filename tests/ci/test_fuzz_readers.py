"""Generated junk into every reader through the CLI's `main()`: the exit code is 0, 1 or 2 and nothing escapes.

Readers: run reports (audit, timeline, coverage, shard --durations), the coverage page's inputs (report), shard plans (coverage --plan), suite
lists (guards --suites), matrix and runner TOML, selectors, and SPECMATRIX_DETECT. Bounded example counts
keep the whole module to a few seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from matrix.cli.main import main

# How many examples each property draws comes from the hypothesis profile (tests/conftest.py): "ci", the default,
# draws 20; `--hypothesis-profile=deep` draws 300 for a longer hunt.
SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,  # the same examples on every run and machine: a CI failure reproduces locally
    database=None,
)
B200 = '{"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}'

VALID_REPORT: dict[str, Any] = {
    "schema": "specmatrix.report/1",
    "matrix": "frozen-kv-mtp-draft-attention",
    "runner": {"name": "4-gpu-b200", "gpus": 4, "capability": [10, 0], "labels": ["4-gpu-b200"], "skip_policy": "strict"},
    "versions": {"sglang": "0.5.23"},
    "detection_overridden": True,
    "created": "2026-11-30T00:00:00+00:00",
    "cells": [
        {
            "nodeid": "t.py::test_cell[draft-triton-topk1-page1-hd128-gqa4-bf16-graph]",
            "cell": "draft-triton-topk1-page1-hd128-gqa4-bf16-graph",
            "test": "t.py::test_cell",
            "expected": "run",
            "rule": None,
            "reason": "no rule applies",
            "status": "passed",
            "duration": 1.5,
            "started": 0.5,
            "worker": "gw0",
        }
    ],
    "outside": [{"nodeid": "t.py::test_plain", "status": "passed", "duration": 0.1, "started": 0.1}],
    "findings": [],
    "wall_seconds": 3.0,
    "planned": 1,
}
VALID_PLAN = {
    "schema": "specmatrix.shard-plan/1",
    "runner": "4-gpu-b200",
    "shards": [{"index": 1, "cells": ["draft-triton-topk1-page1-hd128-gqa4-bf16-graph"]}],
}

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
# Text the JSON encoder never makes: NaN, Infinity, huge exponents, thousands of digits, deep nesting, bad UTF-8.
json_hazard = st.sampled_from(
    ["NaN", "Infinity", "-Infinity", "1e999", "9" * 5000, "[" * 50_000, '"\\ud800"', "{" * 3000 + "}" * 3000, "\x00"]
)


@st.composite
def mangled(draw: st.DrawFn, valid: dict[str, Any]) -> str:
    """A valid document with one field (at any depth) replaced by junk, or junk text spliced in."""
    doc = json.loads(json.dumps(valid))
    paths: list[list[Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        paths.append(path)
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, [*path, key])
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, [*path, index])

    walk(doc, [])
    path = draw(st.sampled_from(paths[1:]))
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    choice = draw(st.integers(0, 3))
    if choice == 0:
        parent[path[-1]] = draw(json_value)
    elif choice == 1 and isinstance(parent, dict):
        del parent[path[-1]]
    elif choice == 2:
        text = json.dumps(doc)
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(json_hazard) + text[at:]
    else:
        parent[path[-1]] = draw(json_leaf)
    return json.dumps(doc)


junk_text = st.one_of(st.text(max_size=200), json_hazard, json_value.map(json.dumps))
junk_bytes = st.binary(max_size=200)


@contextlib.contextmanager
def workspace(env: dict[str, str] | None = None) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        base = {k: v for k, v in os.environ.items() if not k.startswith("SPECMATRIX_") and k != "GITHUB_STEP_SUMMARY"}
        base["SPECMATRIX_DETECT"] = B200
        with mock.patch.dict(os.environ, {**base, **(env or {})}, clear=True):
            old = Path.cwd()
            os.chdir(folder)
            try:
                yield Path(folder)
            finally:
                os.chdir(old)


def run_cli(argv: Sequence[str]) -> int:
    """main() with captured streams; it must return (not raise), with 0, 1 or 2 and no traceback text."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # only argparse's --help (or an abbreviation of it) exits this way
            assert exc.code == 0 and "usage:" in out.getvalue(), argv
            return 0
    assert code in (0, 1, 2), (code, err.getvalue())
    assert "Traceback" not in err.getvalue()
    if code == 2:
        # A missing command prints the usage block first (`usage: ...` and its indented continuation lines).
        lines = [line for line in err.getvalue().splitlines() if not line.startswith(("usage: ", " "))]
        assert len(lines) == 1 and lines[0].startswith("specmatrix: "), err.getvalue()
    return code


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8", "surrogatepass"))
    return path


REPORT_COMMANDS = [
    ["audit", "{f}"],
    ["audit", "--format", "json", "{f}"],
    ["timeline", "{f}"],
    ["coverage", "--out", "out", "--no-heatmap", "{f}"],
    ["shard", "--runner", "4-gpu-b200", "--shards", "2", "--format", "github", "--durations", "{f}"],
]


@SETTINGS
@given(content=st.one_of(mangled(VALID_REPORT), junk_text, junk_bytes), command=st.sampled_from(REPORT_COMMANDS))
@example(content="[" * 50_000, command=REPORT_COMMANDS[0])  # RecursionError once
@example(content=json.dumps(VALID_REPORT).replace('"planned": 1', '"planned": ' + "9" * 5000), command=REPORT_COMMANDS[2])
@example(content=json.dumps(VALID_REPORT).replace("1.5", "1e999"), command=REPORT_COMMANDS[4])  # Infinity in gha
@example(content=json.dumps(VALID_REPORT).replace('"0.5.23"', '"garbage"'), command=REPORT_COMMANDS[3])
@example(content=json.dumps(VALID_REPORT).replace('"wall_seconds": 3.0', '"wall_seconds": 0'), command=REPORT_COMMANDS[2])
def test_report_readers_survive_junk(content: str | bytes, command: list[str]) -> None:
    with workspace() as folder:
        path = _write(folder / "report.json", content)
        run_cli([a.replace("{f}", str(path)) for a in command])


VALID_GUARDS: dict[str, Any] = {
    "schema": "specmatrix.guards/1",
    "root": "test/registered",
    "files_scanned": 2,
    "exit_code": 1,
    "findings": [
        {"kind": "silent-skip", "path": "a/test_x.py", "line": 12, "test": "TestX", "runners": ["4-gpu-b200"], "guard": "g"}
        | {"reason": "skips", "hint": "add sm100", "failing": True, "severity": "error"}
    ],
}
VALID_LEDGER: dict[str, Any] = {
    "schema": "specmatrix.ledger-report/2",
    "root": "test/registered",
    "ledgers": ["l.jsonl"],
    "processes": 1,
    "exit_code": 1,
    "findings": [
        {"tool": "ledger", "kind": "never-executed", "severity": "error", "failing": True, "subject": "b.py"}
        | {"message": "no record", "path": "b.py", "line": 1, "runners": ["4-gpu-b200"], "hint": "", "detail": ""}
        | {"accepted_by": "", "evidence": "", "fingerprint": ""}
    ],
}
# The shape written before the ledger's findings were core records; `report` still reads it.
VALID_LEDGER_V1: dict[str, Any] = {
    **VALID_LEDGER,
    "schema": "specmatrix.ledger-report/1",
    "findings": [
        {"kind": "never-executed", "path": "b.py", "line": 1, "test": "b.py", "runner": "4-gpu-b200", "message": "no record"}
        | {"static": "", "accepted_by": "", "evidence": "", "failing": True}
    ],
}


@settings(SETTINGS, max_examples=min(settings().max_examples, 15))  # each example draws a whole page: keep it short
@given(
    content=st.one_of(mangled(VALID_REPORT), mangled(VALID_GUARDS), mangled(VALID_LEDGER), mangled(VALID_LEDGER_V1), junk_text)
)
def test_report_page_inputs_survive_junk(content: str) -> None:
    """`specmatrix report --html` reads all three input kinds: junk in any of them is exit 2, never a traceback."""
    with workspace() as folder:
        path = _write(folder / "input.json", content)
        run_cli(["report", "--html", str(folder / "page.html"), str(path)])


@SETTINGS
@given(content=st.one_of(mangled(VALID_PLAN), junk_text, junk_bytes))
def test_plan_reader_survives_junk(content: str | bytes) -> None:
    with workspace() as folder:
        path = _write(folder / "plan.json", content)
        run_cli(["coverage", "--out", "out", "--no-heatmap", "--plan", str(path)])


@SETTINGS
@given(content=st.one_of(junk_text, junk_bytes, st.lists(json_value, max_size=4).map(json.dumps)))
def test_suites_reader_survives_junk(content: str | bytes) -> None:
    with workspace() as folder:
        path = _write(folder / "suites.json", content)
        (folder / "suite").mkdir()
        run_cli(["guards", str(folder / "suite"), "--suites", str(path)])


toml_scalar = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.sampled_from(["nan", "inf", "-inf", "true", "1.5", '""', '"x"', "[]", "[1, 2]", "{}", '"0.5.23-dirty"']),
    st.text(max_size=10).map(json.dumps),
)
MATRIX_KEYS = ["name", "pins", "axis", "group", "rule", "cost", "impl", "page_promotion"]
RUNNER_KEYS = ["gpus", "capability", "device_name", "labels", "runner_configs", "skip_policy", "description"]


@SETTINGS
@given(
    key=st.sampled_from(MATRIX_KEYS),
    value=toml_scalar,
    table=st.sampled_from(["", "[pins]\n", "[cost]\n", "[cost.backend.triton]\n", "[[axis]]\n", "[[group]]\n", "[[rule]]\n"]),
    subkey=st.sampled_from(["sglang", "shard_seconds", "cell_seconds", "config_axes", "name", "values", "id", "versions"]),
    junk=st.one_of(junk_text, junk_bytes),
    pick=st.integers(0, 2),
)
def test_matrix_toml_reader_survives_junk(key: str, value: str, table: str, subkey: str, junk: str | bytes, pick: int) -> None:
    from matrix.core.loader import default_matrix_text

    base = default_matrix_text()
    content: str | bytes = {0: f"{key} = {value}\n" + base, 1: base + f"\n{table}{subkey} = {value}\n", 2: junk}[pick]
    with workspace() as folder:
        path = _write(folder / "matrix.toml", content)
        run_cli(["--matrix", str(path), "cells", "--runner", "4-gpu-b200"])


@SETTINGS
@given(
    values=st.dictionaries(st.sampled_from(RUNNER_KEYS), toml_scalar, max_size=4),
    name=st.sampled_from(["mine", "4-gpu-b200", "cpu"]),
    junk=st.one_of(junk_text, junk_bytes),
    pick=st.integers(0, 1),
    replace=st.booleans(),
)
def test_runner_toml_reader_survives_junk(values: dict[str, str], name: str, junk: str | bytes, pick: int, replace: bool) -> None:
    body = "".join(f"{k} = {v}\n" for k, v in values.items())
    content = f"[runner.{json.dumps(name)}]\n{body}" if pick == 0 else junk
    with workspace() as folder:
        path = _write(folder / "runners.toml", content)
        extra = ["--replace-runner", name] if replace and pick == 0 else []
        run_cli(["--runners", str(path), *extra, "runners"])


@SETTINGS
@given(
    pyproject=st.one_of(
        st.builds(
            lambda k, v: f"[tool.specmatrix]\n{k} = {v}\n",
            st.sampled_from(["matrix", "runner", "runners", "allowlist", "replace_runners", "x"]),
            toml_scalar,
        ),
        st.builds(lambda v: f"tool = {v}\n", toml_scalar),
        junk_text,
    )
)
def test_pyproject_table_survives_junk(pyproject: str) -> None:
    with workspace() as folder:
        _write(folder / "pyproject.toml", pyproject)
        run_cli(["cells", "--runner", "cpu", "--select", "draft-triton-*"])


selector_alphabet = st.sampled_from([*"{},!*?[]-ab ", "draft", "triton", "topk1", "\x00", "\udcff"])


@SETTINGS
@given(selector=st.lists(selector_alphabet, max_size=60).map("".join), command=st.sampled_from(["cells", "register", "explain"]))
@example(selector="!*", command="cells")  # max() of an empty table once
@example(selector="{" * 40 + "}" * 40, command="cells")
@example(selector="a}{b", command="cells")  # a '}' before its '{': the expander must never see it
@example(selector="draft}", command="register")
def test_selectors_survive_junk(selector: str, command: str) -> None:
    with workspace() as folder:
        argv = {
            "cells": ["cells", "--runner", "4-gpu-b200", "--select", selector],
            "register": ["register", "--out", str(folder / "reg"), "--runner", "4-gpu-b200", "--select", selector],
            "explain": ["explain", selector or "x", "--runner", "4-gpu-b200"],
        }[command]
        run_cli(argv)


detect_docs = st.fixed_dictionaries(
    {},
    optional={
        "gpus": st.one_of(st.integers(-5, 10**8), json_leaf),
        "capability": st.one_of(st.lists(st.integers(-1, 200), max_size=3), json_leaf),
        "name": st.one_of(st.sampled_from(["NVIDIA B200", "NVIDIA H200", "H20", ""]), json_leaf),
        "versions": st.one_of(
            st.dictionaries(
                st.sampled_from(["sglang", "torch"]),
                st.one_of(st.sampled_from(["0.5.23", "2.11.0+cu130", "0.5.23-dirty", "x"]), json_leaf),
            ),
            json_leaf,
        ),
        "colour": json_leaf,
    },
)


@SETTINGS
@given(
    detect=st.one_of(detect_docs.map(json.dumps), junk_text),
    command=st.sampled_from([["detect"], ["detect", "--format", "json"], ["cells", "--select", "draft-*"], ["runners"]]),
)
def test_detection_override_survives_junk(detect: str, command: list[str]) -> None:
    # An environment variable holds neither NUL nor a lone surrogate.
    detect = "".join(c for c in detect if c != "\x00" and not 0xD800 <= ord(c) <= 0xDFFF)
    with workspace({"SPECMATRIX_DETECT": detect}):
        run_cli(command)


@SETTINGS
@given(
    argv=st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "cells",
                    "shard",
                    "--runner",
                    "auto",
                    "--shards",
                    "0",
                    "--budget",
                    "nan",
                    "-1",
                    "--format",
                    "json",
                    "--select",
                    "audit",
                    "--format",
                    "github",
                    "detect",
                    "runners",
                    "explain",
                    "timeline",
                    "--replace-runner",
                    "--matrix",
                    "/dev/null",
                    "coverage",
                    "--out",
                    "register",
                ]
            ),
            st.text(max_size=8),
        ),
        max_size=6,
    )
)
@example(argv=["cells", "\n"])  # a newline in an argument once made the error two lines
@example(argv=["cells", "\x0c"])  # a form feed: str.splitlines breaks the error line there too
def test_arbitrary_command_lines_survive(argv: list[str]) -> None:
    with workspace():
        run_cli(argv)


# -- GitHub workflows: expressions, matrices, needs, reusable-workflow calls (local and of another repository) ------

expression = st.recursive(
    st.sampled_from(
        [
            "matrix.v",
            "inputs.x",
            "env.E",
            "github.event_name",
            "needs.a.outputs.o",
            "secrets.T",
            "'sm86'",
            "'h100'",
            "1",
            "true",
            "null",
            "fromJSON('[1, 2]')",
            "fromJSON('{\"v\": [3]}')",
            "toJSON(matrix)",
            "format('{0}-{1}', inputs.x, matrix.v)",
            "join(fromJSON('[\"a\", \"b\"]'), ' ')",
            "always()",
        ]
    ),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["||", "&&", "==", "!="]), inner).map(" ".join),
        inner.map(lambda e: f"!({e})"),
        inner.map(lambda e: f"fromJSON({e})"),
        inner.map(lambda e: f"({e})[0]"),
    ),
    max_leaves=5,
)
wrapped = expression.map(lambda e: "${{ " + e + " }}")
matrix_value = st.one_of(
    st.dictionaries(st.sampled_from(["v", "w"]), st.lists(st.sampled_from(["sm86", "h100", 1, "x"]), max_size=3), max_size=2),
    json_value.map(lambda v: "${{ fromJSON('" + json.dumps(v).replace("'", "''") + "') }}"),
    st.fixed_dictionaries(
        {"v": st.lists(st.integers(0, 2), max_size=2)},
        optional={
            "include": st.one_of(json_value, st.lists(st.dictionaries(st.sampled_from(["v", "n"]), json_leaf, max_size=2))),
            "exclude": st.one_of(json_value, st.lists(st.dictionaries(st.sampled_from(["v"]), json_leaf, max_size=1))),
        },
    ),
    wrapped,
)
runs_on = st.one_of(
    st.sampled_from(["sm86", "rack-nine", "macos-14"]),
    wrapped,
    st.lists(st.one_of(st.just("self-hosted"), wrapped, st.just("sm75")), max_size=3),
)


@st.composite
def job(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    kind = draw(st.sampled_from(["run", "local", "external"]))
    if draw(st.booleans()):
        body["strategy"] = {"matrix": draw(matrix_value)}
    if draw(st.booleans()):
        body["needs"] = draw(st.sampled_from([*names, "nowhere"]))
    if draw(st.booleans()):
        body["if"] = draw(st.one_of(expression, wrapped, st.booleans()))
    command = "pytest tests/test_k.py " + draw(st.one_of(st.just(""), wrapped))
    if kind == "run":
        body["runs-on"] = draw(runs_on)
        body["env"] = {"E": draw(st.one_of(wrapped, st.just("on")))}
        step: dict[str, Any] = {"run": command}
        if draw(st.booleans()):
            step["if"] = draw(st.one_of(expression, wrapped))
        body["steps"] = [step]
    elif kind == "local":
        body["uses"] = "./.github/workflows/callee.yml"
        body["with"] = {"x": draw(st.one_of(wrapped, st.just("h100")))}
    else:
        body["uses"] = "someone/kit/.github/workflows/job.yml@main"
        body["with"] = draw(st.fixed_dictionaries({}, optional={"runner": runs_on, "script": st.just(command)}))
    return body


@st.composite
def workflows(draw: st.DrawFn) -> tuple[str, str]:
    names = ["a", "b", "c"][: draw(st.integers(1, 3))]
    jobs = {name: draw(job([n for n in names if n != name])) for name in names}
    caller = {"on": draw(st.sampled_from(["push", "pull_request", "schedule"])), "jobs": jobs}
    callee = {
        "on": {"workflow_call": {"inputs": {"x": {"type": "string", "default": "sm86"}}}},
        "jobs": {"inner": draw(job([]))},
    }
    return json.dumps(caller), json.dumps(callee)  # JSON is YAML


def _workflow_repo(base: Path, texts: tuple[str, str]) -> Path:
    folder = base / "repo" / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "ci.yml").write_text(texts[0], encoding="utf-8")
    (folder / "callee.yml").write_text(texts[1], encoding="utf-8")
    (base / "repo" / "tests").mkdir()
    (base / "repo" / "tests" / "test_k.py").write_text("def test_k():\n    pass\n", encoding="utf-8")
    (base / "repo" / "tests" / "test_other.py").write_text("def test_o():\n    pass\n", encoding="utf-8")
    return base / "repo"


@SETTINGS
@given(texts=workflows())
def test_workflow_reader_survives_generated_workflows_and_never_calls_unread_unscheduled(texts: tuple[str, str]) -> None:
    """Expressions, matrices (of any JSON shape), needs and calls: `schedule` exits 0 or 2 without a traceback, and
    `pytest-audit` never says `unscheduled` while a CI job is unread (that job may run any test)."""
    with workspace() as folder:
        root = _workflow_repo(folder, texts)
        assert run_cli(["schedule", str(root), "--format", "json"]) in (0, 2)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
        assert code in (0, 1, 2)
        if code != 2:
            doc = json.loads(out.getvalue())
            if doc["unread"]:
                assert doc["counts"]["unscheduled"] == {}, doc["unread"]
