"""Generated sglang registered modules: right cells and est_time, importable in sglang, audit-clean, runnable."""

from __future__ import annotations

import ast
import importlib.util
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.errors import ConfigError
from matrix.core.expect import effective_versions, expectations
from matrix.core.levels import levels_for
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import RunnerProfile
from matrix.guards.model import GuardFindingKind
from matrix.guards.source import read_registrations
from matrix.register.modules import ALLOWED_IMPORTS, CELL_MODULE, cell_cases, generate, render_module
from matrix.registered_suite.tree import audit_tree
from matrix.shard.cost import workload_for
from matrix.shard.workload import work_seconds

from .conftest import run_cells


def imported_modules(text: str) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.add(node.module or "")
    return out


@pytest.fixture(scope="module")
def modules(default_matrix, runners):
    return generate(default_matrix, list(runners.values()))


def test_one_module_per_runner_config_with_the_cells_that_must_run(modules, default_matrix, runners):
    configs = {rc: p for p in runners.values() if p.gpus for rc in p.runner_configs}
    assert sorted(m.runner_config for m in modules) == sorted(configs)
    for module in modules:
        assert sorted(module.cells) == sorted(run_cells(default_matrix, configs[module.runner_config]))


def test_registration_carries_est_time_stage_and_runner_config(modules, default_matrix, runners):
    module = next(m for m in modules if m.runner_config == "4-gpu-b200")
    (reg,) = read_registrations(ast.parse(module.text), module.text)
    assert (reg.function, reg.problem) == ("register_cuda_ci", None)
    assert "stage='base-b'" in reg.source and "runner_config='4-gpu-b200'" in reg.source
    runner = runners["4-gpu-b200"]
    workload = workload_for(default_matrix, runner, expectations(default_matrix, runner, effective_versions(default_matrix, {})))
    assert f"est_time={math.ceil(work_seconds(workload, workload.items))}," in reg.source
    assert module.est_time == math.ceil(work_seconds(workload, workload.items))


@pytest.mark.parametrize("planted", [None, "import matrix.gpu.cellrun\n"], ids=["generated", "planted-import"])
def test_modules_import_only_what_an_sglang_tree_has(modules, planted):
    for module in modules:
        text = (planted or "") + module.text
        assert (imported_modules(text) <= set(ALLOWED_IMPORTS)) is (planted is None)


def test_the_cell_runner_the_tests_call_exists():
    assert importlib.util.find_spec(CELL_MODULE) is not None


GUARD = '@pytest.mark.skipif(not is_sm90_supported(), reason="hopper only")\n'


@pytest.mark.parametrize("planted", [False, True], ids=["generated", "planted-guard"])
def test_guard_audit_of_the_generated_tree_finds_no_silent_skip(tmp_path, modules, runners, planted):
    for module in modules:
        text = module.text
        if planted and module.runner_config == "4-gpu-b200":
            text = text.replace("import pytest\n", "import pytest\n\nfrom sglang.srt.utils import is_sm90_supported\n")
            text = text.replace("@pytest.mark.parametrize(", GUARD + "@pytest.mark.parametrize(", 1)
        (tmp_path / module.file_name).write_text(text)
    report = audit_tree(tmp_path, runners)
    skips = report.of_kind(GuardFindingKind.SILENT_SKIP) + report.of_kind(GuardFindingKind.NEVER_RUNS)
    assert bool(report.failing) is planted
    assert bool(skips) is planted
    if planted:  # registered only for 4-gpu-b200 and skipped there: the audit calls that never-runs
        assert skips[0].runners == ("4-gpu-b200",)


def test_parts_split_a_runner_config_into_disjoint_modules(default_matrix, runners):
    runner = runners["4-gpu-b200"]
    parts = generate(default_matrix, [runner], parts=3)
    assert [m.file_name for m in parts] == [f"test_specmatrix_4_gpu_b200_part{k}.py" for k in (1, 2, 3)]
    cells = [c for m in parts for c in m.cells]
    assert sorted(cells) == sorted(run_cells(default_matrix, runner)) and len(set(cells)) == len(cells)
    assert max(m.est_time for m in parts) < generate(default_matrix, [runner])[0].est_time / 2


def test_two_profiles_serving_one_runner_config_is_a_config_error(default_matrix):
    twins = [RunnerProfile(name=n, gpus=1, capability=(9, 0), runner_configs=("1-gpu-large",)) for n in ("a", "b")]
    with pytest.raises(ConfigError, match="served by both a and b"):
        generate(default_matrix, twins)


STUB_REGISTER = "CALLS = []\n\ndef register_cuda_ci(*args, **kwargs):\n    CALLS.append(kwargs)\n"
STUB_CELLRUN = textwrap.dedent(
    """
    import os, sys
    cell, flag, level = sys.argv[1:]
    assert flag == "--level", sys.argv
    with open(os.environ["STUB_CALLS"], "a") as calls:
        calls.write(f"{cell} {level}\\n")
    sys.exit(1 if (cell, level) == tuple(os.environ.get("STUB_FAIL", " ").split(" ")) else 0)
    """
)


def test_generated_module_runs_with_stubs_and_fails_a_failing_cell(tmp_path, modules):
    module = next(m for m in modules if m.runner_config == "4-gpu-b200")
    stubs = tmp_path / "stubs"
    for pkg in ("sglang", "sglang/test", "sglang/test/ci", "matrix", "matrix/gpu"):
        (stubs / pkg).mkdir(parents=True, exist_ok=True)
        (stubs / pkg / "__init__.py").write_text("")
    (stubs / "sglang/test/ci/ci_register.py").write_text(STUB_REGISTER)
    (stubs / "matrix/gpu/cellrun.py").write_text(STUB_CELLRUN)
    suite = tmp_path / "registered"
    suite.mkdir()
    (suite / module.file_name).write_text(module.text)
    chosen = [(c, lv.value) for c in module.cells if "topk4-page16-hd128" in c for lv in levels_for(c)]
    failing = next(pair for pair in chosen if pair[1] == "runner")
    calls = tmp_path / "calls.txt"
    # The stub `matrix` package shadows the real one, so the real pytest plugin must stay out.
    env = {
        **os.environ,
        "PYTHONPATH": str(stubs),
        "STUB_FAIL": " ".join(failing),
        "STUB_CALLS": str(calls),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "topk4-page16-hd128", str(suite)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"1 failed, {len(chosen) - 1} passed" in done.stdout
    assert f"{failing[0]} [runner] failed on 4-gpu-b200" in done.stdout
    called = sorted(tuple(line.split(" ")) for line in calls.read_text().splitlines())
    assert called == sorted(chosen)  # each cell ran exactly the checks of its own role and backend


def test_register_command_writes_the_modules(tmp_path, capsys):
    code = main(["register", "--out", str(tmp_path / "reg"), "--runner", "4-gpu-b200", "--stage", "base-c"])
    assert code == 0
    (written,) = sorted((tmp_path / "reg").iterdir())
    assert written.name == "test_specmatrix_4_gpu_b200.py"
    assert "stage='base-c'" in written.read_text()
    assert main(["register", "--out", str(tmp_path / "none"), "--runner", "cpu"]) == 2


def test_register_select_keeps_only_the_chosen_cells(tmp_path, default_matrix, runners):
    assert main(["register", "--out", str(tmp_path), "--runner", "4-gpu-b200", "--select", "draft-*"]) == 0
    text = (tmp_path / "test_specmatrix_4_gpu_b200.py").read_text()
    wanted = [c for c in run_cells(default_matrix, runners["4-gpu-b200"]) if c.startswith("draft-")]
    cases = ast.literal_eval(text.split("CASES = ", 1)[1].split("\n\n", 1)[0])
    assert sorted({cell for cell, _ in cases}) == sorted(wanted)


@pytest.mark.parametrize(
    ("cell", "levels"),
    [
        ("draft-triton-topk4-page16-hd128-gqa4-bf16-graph", ["sglang", "runner"]),
        ("draft-triton-topk4-page16-hd128-gqa4-bf16-eager", ["sglang"]),
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", ["kernel", "sglang", "runner"]),
        ("draft-flashinfer-topk1-page16-hd128-gqa4-bf16-graph", ["sglang"]),
        ("draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", ["sglang"]),
        ("target-trtllm_mha-topk1-page64-hd128-dt4-gqa4-bf16-graph", ["target"]),
        ("target-triton-topk1-page16-hd128-dt4-gqa4-bf16-graph", ["target-sglang"]),
        ("target-flashinfer-topk4-page16-hd128-dt4-gqa4-bf16-graph", ["target-sglang"]),
    ],
)
def test_each_cell_gets_the_checks_of_its_role_and_backend(cell, levels):
    assert cell_cases([cell]) == [(cell, level) for level in levels]


def test_a_cell_no_check_covers_is_a_config_error():
    with pytest.raises(ConfigError, match="no GPU check covers it"):
        cell_cases(["draft-nosuch-topk1-page1-hd128-gqa4-bf16-graph"])


INJECTION = 'x", runner_config="c"); open("PWNED", "w").write("1"); register_cuda_ci(est_time=1, stage="y'
HOSTILE = [
    INJECTION,
    'x"); open("PWNED", "w").write("1"); ("',
    "x'''\nopen('PWNED', 'w').write('1')\n'''",
    'x"""\nopen("PWNED", "w").write("1")\n"""',
    "a\\\nopen('PWNED', 'w')#{x}",
]


HOSTILE_IDS = ["injection", "dquote", "squote-block", "docstring", "backslash-newline-brace"]


def _hostile_module(hostile: str) -> str:
    cases = [(hostile, "kernel"), ("draft-" + hostile, "sglang")]
    return render_module(matrix_name=hostile, runner_name=hostile, runner_config=hostile, stage=hostile, cases=cases, est=5)


def _stub_sglang(stubs: Path) -> None:
    for pkg in ("sglang", "sglang/test", "sglang/test/ci"):
        (stubs / pkg).mkdir(parents=True, exist_ok=True)
        (stubs / pkg / "__init__.py").write_text("")
    (stubs / "sglang/test/ci/ci_register.py").write_text(STUB_REGISTER)


def _collect_only(folder: Path, suite: Path) -> subprocess.CompletedProcess[str]:
    """pytest --collect-only over `suite` in a fresh process with stub sglang packages, run from `folder`."""
    stubs = folder / "stubs"
    _stub_sglang(stubs)
    env = {**os.environ, "PYTHONPATH": str(stubs), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(suite)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def hostile_collection(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Every hostile module in one suite, collected by one pytest process (one interpreter instead of five)."""
    folder = tmp_path_factory.mktemp("hostile")
    suite = folder / "suite"
    suite.mkdir()
    for name, hostile in zip(HOSTILE_IDS, HOSTILE, strict=True):
        (suite / f"test_specmatrix_hostile_{name.replace('-', '_')}.py").write_text(_hostile_module(hostile))
    return folder, _collect_only(folder, suite)


@pytest.mark.parametrize("hostile", HOSTILE, ids=HOSTILE_IDS)
def test_hostile_values_stay_data(hostile, hostile_collection, request):
    """Quotes, newlines and code in every interpolated value: the module parses, collects, and runs nothing injected."""
    cases = [(hostile, "kernel"), ("draft-" + hostile, "sglang")]
    text = _hostile_module(hostile)
    tree = ast.parse(text)
    values = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}
    assert values["MATRIX"] == values["RUNNER"] == values["RUNNER_CONFIG"] == hostile
    assert [tuple(c) for c in values["CASES"]] == cases
    (reg,) = read_registrations(tree, text)
    assert reg.problem is None
    folder, done = hostile_collection
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(HOSTILE) * 2} tests collected" in done.stdout
    name = request.node.callspec.id.replace("-", "_")
    # This module's own two test ids are listed: it collected, not just the others.
    assert sum(line.startswith(f"suite/test_specmatrix_hostile_{name}.py::") for line in done.stdout.splitlines()) == 2
    assert not list(folder.rglob("PWNED"))


def test_hostile_stage_from_the_command_line(tmp_path):
    stage = 'base"); import os; os.system("touch PWNED"); ("'
    assert main(["register", "--out", str(tmp_path / "reg"), "--runner", "4-gpu-b200", "--stage", stage]) == 0
    (written,) = sorted((tmp_path / "reg").iterdir())
    text = written.read_text()
    (reg,) = read_registrations(ast.parse(text), text)
    call = ast.parse(reg.source).body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert {k.arg: ast.literal_eval(k.value) for k in call.value.keywords}["stage"] == stage


def _naive_render(**values: object) -> str:
    """The planted bug: the same module with one value pasted between quotes instead of written with repr()."""
    text = render_module(**values)  # type: ignore[arg-type]
    stage = values["stage"]
    return text.replace(f"stage={stage!r}", f'stage="{stage}"')


def test_the_hostile_test_catches_a_value_pasted_between_quotes(tmp_path):
    """Red on the planted bug: a `"` in --stage escapes the string and the injected call runs at collection."""
    hostile = INJECTION
    values = {
        "matrix_name": "m",
        "runner_name": "r",
        "runner_config": "c",
        "stage": hostile,
        "cases": [("x", "kernel")],
        "est": 1,
    }
    text = _naive_render(**values)
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_specmatrix_naive.py").write_text(text)
    _collect_only(tmp_path, suite)
    assert list(tmp_path.rglob("PWNED"))  # the naive module ran the injected code; the repr()-written one never does


@pytest.mark.parametrize(
    "configs",
    [("gpu-large", "gpu.large"), ("GPU-x", "gpu-x"), ("a b", "a_b"), ("--", "++")],
    ids=["dash-dot", "case", "space", "no-letters"],
)
def test_runner_configs_whose_module_names_collide_are_refused(tmp_path, configs):
    """One module would silently replace the other: refused, one line, exit 2, nothing written."""
    extra = tmp_path / "collide.toml"
    extra.write_text(
        "".join(
            f'[runner.r{i}]\ngpus = 1\ncapability = [10, 0]\nlabels = ["r{i}"]\nrunner_configs = [{config!r}]\n'
            for i, config in enumerate(configs)
        ).replace("'", '"'),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    argv = ["register", "--runners", str(extra), "--runner", "r0", "--runner", "r1", "--out", str(out), "--no-workflows"]
    profiles = load_runners([extra])
    with pytest.raises(ConfigError, match="both give the module name"):
        generate(load_matrix(), [profiles["r0"], profiles["r1"]])
    assert main(argv) == 2
    assert not out.exists() or not list(out.iterdir())
