"""The core commands end to end, and every bad input as exit 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.cli.main import main

B200 = '{"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200", "versions": {"flashinfer": "0.7.2"}}'


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("SPECMATRIX_DETECT", "SPECMATRIX_MATRIX", "SPECMATRIX_RUNNERS", "SPECMATRIX_RUNNER", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("runner", ["4-gpu-b200", "1-gpu-h200"])
def test_cells_json_lists_every_cell_with_outcome_and_reason(capsys, default_matrix, runner):
    code, out, _ = run(capsys, "cells", "--runner", runner, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "specmatrix.cells/1"
    assert doc["runner"] == runner
    assert len(doc["cells"]) == len(default_matrix.cells)
    for cell in doc["cells"]:
        assert cell["outcome"] in ("run", "skip")
        assert cell["reason"]
    assert doc["detection_overridden"] is False


def test_cells_b200_vs_h200_differ_on_fa3(capsys):
    _, b200, _ = run(capsys, "cells", "--runner", "4-gpu-b200", "--format", "json")
    _, h200, _ = run(capsys, "cells", "--runner", "1-gpu-h200", "--format", "json")
    b = {c["id"]: c["outcome"] for c in json.loads(b200)["cells"]}
    h = {c["id"]: c["outcome"] for c in json.loads(h200)["cells"]}
    fa3 = "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph"
    assert (b[fa3], h[fa3]) == ("skip", "run")


def test_cells_text_table(capsys):
    code, out, _ = run(
        capsys, "cells", "--runner", "4-gpu-b200", "--select", "draft-trtllm_mha-topk{1,4}-page{1,16}-hd128-gqa4-bf16-graph"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "specmatrix cells: matrix frozen-kv-mtp-draft-attention on runner 4-gpu-b200 (4 GPU(s), sm100)"
    assert "summary: 4 cells: 2 run, 2 expected skips" in lines
    assert any(
        ln.startswith("RUN   draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph") and "[trtllm-gen]" in ln for ln in lines
    )
    skip_rows = [ln for ln in lines if ln.startswith("SKIP  ")]
    assert len(skip_rows) == 2 and all("topk1-page1-" in ln or "topk4-page1-" in ln for ln in skip_rows)
    assert lines.index("SKIP by trtllm-mha-page-size: 2 cells") < lines.index(skip_rows[0])
    assert any(ln.startswith("   2  trtllm-mha-page-size: trtllm_mha needs a paged KV cache") for ln in lines)


def table_problems(lines: list[str], summary_prefix: str, row_prefixes: tuple[str, ...]) -> list[str]:
    """What `nox -s matrix` promises a reader of a table: 100 columns, a legend, the summary before any row."""
    problems = [f"line {n} is {len(ln)} columns wide" for n, ln in enumerate(lines, 1) if len(ln) > 100]
    if "legend:" not in lines:
        problems.append("no legend")
    summary = next((n for n, ln in enumerate(lines) if ln.startswith(summary_prefix)), None)
    first_row = next((n for n, ln in enumerate(lines) if ln.startswith(row_prefixes)), None)
    if summary is None or first_row is None or summary > first_row:
        problems.append(f"summary at line {summary}, first row at line {first_row}")
    return problems


RUNNER_NAMES = ["cpu", "1-gpu-h200", "4-gpu-b200", "1-gpu-5090", "4-gpu-gb300"]


@pytest.mark.parametrize("runner", RUNNER_NAMES)
def test_cells_table_fits_100_columns_with_legend_and_summary_first(capsys, default_matrix, runner):
    _, out, _ = run(capsys, "cells", "--runner", runner)
    lines = out.splitlines()
    total = len(default_matrix.cells)
    assert table_problems(lines, f"summary: {total} cells", ("RUN  ", "SKIP  ")) == []
    for key in ("RUN / SKIP", "[impl]", "+N more", f"specmatrix explain CELL --runner {runner}"):
        assert any(key in ln for ln in lines), key
    assert sum(ln.startswith(("RUN   ", "SKIP  ")) for ln in lines) == total


def test_runners_table_fits_100_columns_with_legend_and_summary_first(capsys, default_matrix):
    _, out, _ = run(capsys, "runners")
    lines = out.splitlines()
    assert table_problems(lines, f"summary: 24 profiles, {len(default_matrix.cells)} cells", ("cpu ", "4-gpu-b200 ")) == []
    for key in ("  arch ", "  policy ", "  run/skip ", "  serves "):
        assert any(ln.startswith(key) for ln in lines), key
    b200 = next(ln for ln in lines if ln.startswith("4-gpu-b200 "))
    _, cells, _ = run(capsys, "cells", "--runner", "4-gpu-b200", "--format", "json")
    outcomes = [c["outcome"] for c in json.loads(cells)["cells"]]
    runs, skips = outcomes.count("run"), outcomes.count("skip")
    assert b200.split() == ["4-gpu-b200", "4", "sm100", "strict", str(runs), str(skips), "4-gpu-b200"]


def test_a_long_served_config_list_is_cut_at_100_columns(capsys, tmp_path):
    extra = tmp_path / "wide.toml"
    configs = ", ".join(f'"config-number-{k}"' for k in range(12))
    extra.write_text(f'[runner.wide]\ngpus = 1\ncapability = [9, 0]\nlabels = ["wide"]\nrunner_configs = [{configs}]\n')
    _, out, _ = run(capsys, "runners", "--runners", str(extra))
    wide = next(ln for ln in out.splitlines() if ln.startswith("wide "))
    assert len(wide) == 100 and wide.endswith("…")


@pytest.mark.parametrize(
    "planted",
    [
        ["summary: 2 cells", "legend:", "RUN   a" + "x" * 100],
        ["RUN   a", "summary: 2 cells", "legend:"],
        ["summary: 2 cells", "RUN   a"],
    ],
    ids=["over-wide-row", "summary-last", "no-legend"],
)
def test_table_check_catches_each_planted_layout_bug(planted):
    assert table_problems(planted, "summary:", ("RUN  ",))


def test_explain_prints_rule_trail(capsys):
    code, out, _ = run(capsys, "explain", "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", "--runner", "4-gpu-b200")
    assert code == 0
    assert "on 4-gpu-b200 (4 GPU(s), sm100): SKIP" in out
    assert "SKIP fa3-hopper-only (hardware)" in out
    assert "ok   needs-gpu" in out
    assert "source: sglang 0.5.23" in out


def test_runners_counts(capsys):
    code, out, _ = run(capsys, "runners", "--format", "json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["runners"]}
    assert rows["cpu"]["run"] == 0
    assert rows["4-gpu-b200"]["run"] > 0
    assert rows["4-gpu-b200"]["skip_policy"] == "strict"


def test_detect_under_override_says_so(capsys, monkeypatch):
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)
    code, out, _ = run(capsys, "detect")
    assert code == 0
    assert "4 x NVIDIA B200 (sm100) [detection overridden by SPECMATRIX_DETECT]" in out
    assert "runner profile: 4-gpu-b200" in out


def test_auto_runner_output_says_detection_overridden(capsys, monkeypatch):
    monkeypatch.setenv("SPECMATRIX_DETECT", '{"gpus": 1, "capability": [9, 0], "name": "NVIDIA H200"}')
    code, out, _ = run(capsys, "cells", "--select", "draft-fa3-topk1-page16-*")
    assert code == 0
    assert out.startswith(
        "specmatrix cells: matrix frozen-kv-mtp-draft-attention on runner 1-gpu-h200 (auto-detected; 1 GPU(s), sm90)"
    )
    assert "note: detection overridden by SPECMATRIX_DETECT" in out
    _, js, _ = run(capsys, "cells", "--format", "json", "--select", "draft-fa3-topk1-page16-*")
    assert json.loads(js)["detection_overridden"] is True


BAD_INPUT = [
    (["cells", "--runner", "4-gpu-b300"], "unknown runner '4-gpu-b300'; nearest runners: 4-gpu-gb300, 4-gpu-b200"),
    (["cells", "--runner", "cpu", "--select", "draft-cutlass-*"], "selector 'draft-cutlass-*' matches no cell"),
    (["cells", "--runner", "cpu", "--select", "draft-{a,b"], "is never closed"),
    (["explain", "draft-*", "--runner", "cpu"], "explain needs one cell id"),
    (["cells", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["--matrix", "nope.toml", "cells", "--runner", "cpu"], "nope.toml: cannot read"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_INPUT, ids=[m[:30] for _, m in BAD_INPUT])
def test_bad_input_exit_2_one_line(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith("specmatrix: error: ")
    assert message in err


def test_malformed_matrix_file_names_line(capsys, tmp_path):
    bad = tmp_path / "m.toml"
    bad.write_text('name = "m"\n[[axis]]\nname = "a"\nvalues = [1, 2\nid = "x"\n')
    code, _, err = run(capsys, "--matrix", str(bad), "cells", "--runner", "cpu")
    assert code == 2
    assert "m.toml: malformed TOML" in err and "line" in err


def test_matrix_naming_unknown_axis(capsys, tmp_path):
    bad = tmp_path / "m.toml"
    bad.write_text(
        'name = "m"\n[[axis]]\nname = "backend"\nvalues = ["triton"]\n[[group]]\nname = "g"\nbackend = ["triton"]\n'
        '[[rule]]\nid = "r"\nkind = "kernel"\nreason = "x"\nsource = "y"\nwhen = { topk = { eq = 2 } }\nrequire = { gpus = { ge = 1 } }\n'
    )
    code, _, err = run(capsys, "--matrix", str(bad), "cells", "--runner", "cpu")
    assert code == 2
    assert "no axis or runner fact named 'topk'" in err


@pytest.mark.parametrize(
    ("detect", "message"),
    [
        ("{not json", "SPECMATRIX_DETECT: not valid JSON"),
        ('{"gpus": 2}', "gpus given without capability"),
        ('{"gpus": 1, "capability": [9, 0], "colour": "green"}', "unknown key 'colour'"),
        ('{"gpus": 3, "capability": [7, 0]}', "no runner profile fits this machine (3 x GPU (sm70)"),
    ],
)
def test_bad_detection_override(capsys, monkeypatch, detect, message):
    monkeypatch.setenv("SPECMATRIX_DETECT", detect)
    code, _, err = run(capsys, "detect")
    assert code == 2
    assert message in err


def test_console_script_and_module_entry_points(tmp_path):
    """Both entry points run from a foreign folder with a bare environment, reading the packaged matrix and runners.

    `cells --runner` reads both data files as `runners` does, without judging every cell on all 24 profiles (about
    0.3 s of CPU per process); `runners` itself is tested in-process above.
    """
    env_free = {"PATH": str(Path(sys.executable).parent)}
    for argv in (
        ["specmatrix", "cells", "--runner", "4-gpu-b200"],
        [sys.executable, "-m", "matrix", "cells", "--runner", "4-gpu-b200"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env_free, check=False)
        assert proc.returncode == 0, proc.stderr
        assert "matrix frozen-kv-mtp-draft-attention on runner 4-gpu-b200 (4 GPU(s), sm100)" in proc.stdout


def test_no_traceback_for_bad_input_via_console_script(tmp_path):
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "specmatrix"), "cells", "--runner", "nope"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("specmatrix: error: unknown runner 'nope'")


# --- command-line conventions -------------------------------------------------------------------------------------


def test_version_prints_the_package_version(capsys):
    import matrix

    code, out, err = run(capsys, "--version")
    assert (code, out, err) == (0, f"specmatrix {matrix.__version__}\n", "")


def test_bare_command_prints_usage_and_one_prefixed_error(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert err.startswith("usage: specmatrix ")
    assert err.count("specmatrix: error:") == 1 and "specmatrix: error: specmatrix" not in err
    assert err.splitlines()[-1] == "specmatrix: error: a command is required; see 'specmatrix --help'"


def test_a_subcommand_error_names_the_subcommand_once(capsys):
    code, _, err = run(capsys, "shard", "--runner", "4-gpu-b200")
    assert code == 2
    assert err == "specmatrix: error: shard: one of the arguments --shards --budget is required\n"


def write_profile(path: Path, name: str) -> Path:
    path.write_text(f'[runner.{name}]\ngpus = 1\ncapability = [9, 0]\nlabels = ["{name}"]\n')
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["--runners", "{a}", "--runners", "{b}", "runners", "--format", "json"],
        ["runners", "--format", "json", "--runners", "{a}", "--runners", "{b}"],
        ["--runners", "{a}", "runners", "--runners", "{b}", "--format", "json"],
    ],
    ids=["before", "after", "both"],
)
def test_global_runners_option_before_or_after_the_command(capsys, tmp_path, argv):
    files = {"{a}": str(write_profile(tmp_path / "a.toml", "box-a")), "{b}": str(write_profile(tmp_path / "b.toml", "box-b"))}
    code, out, err = run(capsys, *[files.get(a, a) for a in argv])
    assert code == 0, err
    names = [r["name"] for r in json.loads(out)["runners"]]
    assert {"box-a", "box-b", "4-gpu-b200"} <= set(names)


@pytest.mark.parametrize("position", ["before", "after"])
def test_global_matrix_option_before_or_after_the_command(capsys, position):
    argv = ["--matrix", "nope.toml", "cells", "--runner", "cpu"]
    if position == "after":
        argv = [*argv[2:], *argv[:2]]
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "nope.toml: cannot read" in err


def test_matrix_after_the_command_wins_over_the_one_before(capsys):
    code, _, err = run(capsys, "--matrix", "first.toml", "cells", "--runner", "cpu", "--matrix", "second.toml")
    assert code == 2 and "second.toml: cannot read" in err


def help_problems(parser) -> list[str]:
    """Options whose help hides their default, or that show a metavar made up from an internal dest."""
    import argparse

    from matrix.cli.parsing import HelpFormatter

    valueless = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction, argparse._VersionAction)
    problems = []
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    commands = [("", parser)] + [(f" {n}", p) for a in subparsers for n, p in a.choices.items()]
    for name, command in commands:
        formatter = HelpFormatter(prog=command.prog)
        for action in command._actions:
            if not action.option_strings or isinstance(action, valueless) or action.help == argparse.SUPPRESS:
                continue
            option = f"specmatrix{name} {action.option_strings[-1]}"
            if not action.required and "default" not in formatter._get_help_string(action) % {"default": action.default}:
                problems.append(f"{option}: help does not show the default")
            shown = formatter._format_args(action, formatter._get_default_metavar_for_optional(action))
            implied = action.option_strings[-1].lstrip("-").upper().replace("-", "_")
            if action.metavar is None and action.dest.upper() != implied:
                problems.append(f"{option}: help shows the internal metavar {shown}")
    return problems


def test_every_option_shows_its_default_and_no_internal_metavar():
    from matrix.cli.main import build_parser

    assert help_problems(build_parser()) == []


def test_help_check_catches_a_hidden_default_and_an_internal_metavar():
    from matrix.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    sub.choices["cells"].add_argument("--limit", type=int, help="at most this many")
    sub.choices["cells"].add_argument("--only", dest="only_these", action="append", default=[], help="keep")
    problems = help_problems(parser)
    assert "specmatrix cells --limit: help does not show the default" in problems
    assert "specmatrix cells --only: help does not show the default" in problems
    assert "specmatrix cells --only: help shows the internal metavar ONLY_THESE" in problems


def test_help_of_a_command_lists_defaults(capsys):
    code, out, _ = run(capsys, "register", "--help")
    assert code == 0
    assert "--runner NAME" in out and "REGISTER_RUNNERS" not in out
    assert "(default: 1)" in out and "(default: base-b)" in out
    assert "global options (before or after the command):" in out


def test_shard_error_names_the_auto_detected_runner(capsys):
    code, _, err = run(capsys, "shard", "--shards", "2")
    assert code == 2
    assert err == (
        "specmatrix: error: no cell is expected to RUN on runner cpu (auto-detected: this machine has no GPU); "
        "there is nothing to shard (name a GPU profile with --runner; `specmatrix runners` lists them)\n"
    )


@pytest.mark.parametrize(
    ("argv", "cause"),
    [
        (["--runner", "1-gpu-h200"], "1-gpu-h200 serves no sglang runner config (runner_configs is empty)"),
        (["--runner", "cpu"], "cpu has no GPU"),
        (["--runner", "4-gpu-b200", "--select", "draft-fa3-*"], "no selected cell is expected to RUN on 4-gpu-b200"),
    ],
    ids=["serves-nothing", "no-gpu", "selection-skips"],
)
def test_register_error_names_the_real_cause(capsys, tmp_path, argv, cause):
    code, _, err = run(capsys, "register", "--out", str(tmp_path / "out"), *argv)
    assert code == 2
    assert err.startswith("specmatrix: error: nothing to write: ") and cause in err


def test_register_notes_a_named_runner_it_skipped(capsys, tmp_path):
    code, out, err = run(capsys, "register", "--out", str(tmp_path / "o"), "--runner", "1-gpu-h200", "--runner", "4-gpu-b200")
    assert code == 0 and "test_specmatrix_4_gpu_b200.py" in out
    assert "note: nothing written for 1-gpu-h200 serves no sglang runner config" in err


def test_console_script_conventions(tmp_path):
    script = str(Path(sys.executable).parent / "specmatrix")
    bare = subprocess.run([script], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert bare.returncode == 2 and bare.stdout == ""
    assert bare.stderr.startswith("usage: specmatrix ") and bare.stderr.count("specmatrix: error:") == 1
    version = subprocess.run([script, "--version"], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert version.returncode == 0 and version.stdout.startswith("specmatrix ")
