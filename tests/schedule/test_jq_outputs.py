"""A test matrix a step builds with jq and a later job reads with `fromJSON`: read from the workflow itself (the jq
programs run with the jq library), with the shell conditions it rests on; programs that could run unbounded are
not run; the declared-schedule check against such a matrix. Every fixture is written here."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import ModuleType

from matrix.core.loader import load_runners
from matrix.schedule.github.jq_outputs import job_outputs, step_outputs
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.model import PytestSelection
from matrix.schedule.services.declared import parse_declared
from tests.ci_scripts import ci_script

RUNNERS = load_runners()
REPO = Path(__file__).resolve().parents[2]

WORKFLOW = textwrap.dedent(
    """\
    on: [push]
    jobs:
      plan:
        runs-on: ubuntu-latest
        outputs:
          grid: ${{ steps.grid.outputs.grid }}
        steps:
          - id: versions
            run: echo "list=$(jq -c '.toolkits' ci/versions.json)" >> "$GITHUB_OUTPUT"
          - id: grid
            env:
              SKIP_BIG: ${{ github.event.inputs.skip_big }}
              TOOLKITS: ${{ steps.versions.outputs.list }}
            run: |
              {
                for tk in $(jq -r '.[].name' <<< "${TOOLKITS}"); do
                  jq -nc --arg tk "$tk" '{name: "small \\($tk)", runner: ["self-hosted", "sm86"], folder: "tests/small_\\($tk)"}'
                done
                if [ "$SKIP_BIG" != "true" ]; then
                  jq -nc '{name: "big", runner: ["self-hosted", "h100"], folder: "tests/big"}'
                fi
              } | jq -sc '{include: .}' > grid.json
              # echo "grid={}" >> $GITHUB_OUTPUT
              echo "grid=$(cat grid.json)" >> $GITHUB_OUTPUT
      test:
        needs: plan
        strategy:
          matrix: ${{ fromJSON(needs.plan.outputs.grid) }}
        runs-on: ${{ matrix.runner }}
        steps:
          - run: pytest ${{ matrix.folder }}
    """
)
VERSIONS = json.dumps({"toolkits": [{"name": "cu12"}, {"name": "cu13"}]})


def repo(tmp_path: Path, workflow: str = WORKFLOW) -> Path:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(workflow, encoding="utf-8")
    (root / "ci").mkdir()
    (root / "ci" / "versions.json").write_text(VERSIONS, encoding="utf-8")
    return root


def test_a_matrix_built_with_jq_is_read_from_the_workflow(tmp_path: Path) -> None:
    schedule = load_schedule(repo(tmp_path), RUNNERS, all_readers(), follow_scripts=True)
    found = sorted((e.labels, e.selection.paths) for e in schedule.entries if isinstance(e.selection, PytestSelection))
    assert found == [
        (("self-hosted", "h100"), ("tests/big",)),
        (("self-hosted", "sm86"), ("tests/small_cu12",)),
        (("self-hosted", "sm86"), ("tests/small_cu13",)),
    ]
    big = next(e for e in schedule.entries if e.labels == ("self-hosted", "h100"))
    assert any('`[ "$SKIP_BIG" != "true" ]` holds' in a for a in big.assumptions)


def test_step_outputs_follow_files_and_skip_a_false_branch() -> None:
    run = 'if [ "$MODE" = "lite" ]; then\n  jq -nc \'{a: 1}\'\nfi > out.json\necho "x=$(cat out.json)" >> $GITHUB_OUTPUT\n'
    assert step_outputs(run, {"MODE": "full"}, lambda _p: None).values == {"x": ""}
    assert step_outputs(run, {"MODE": "lite"}, lambda _p: None).values == {"x": '{"a":1}'}


def test_a_jq_program_that_could_run_unbounded_is_not_run() -> None:
    for program in ("[range(1e9)]", "[repeat(1)]", '"ab" * 1000000000', "def f: f; f", "[..]"):
        run = f"echo \"x=$(jq -nc '{program}')\" >> $GITHUB_OUTPUT\n"
        assert step_outputs(run, {}, lambda _p: None).values == {}, program


def test_a_value_from_the_run_keeps_the_output_unknown() -> None:
    job = {"steps": [{"id": "s", "run": 'echo "m=$(jq -nc --arg v "$(date)" \'{v: $v}\')" >> $GITHUB_OUTPUT'}]}
    assert job_outputs(job, lambda _p: None) == {}


def checker() -> ModuleType:
    return ci_script("check_flashinfer_schedule")


def test_the_declared_schedule_check_names_a_stale_entry(tmp_path: Path) -> None:
    legs = [{"name": "big", "runner": ["self-hosted", "h100"], "script": "run_big.sh"}]
    good = {"entry": [{"job": "test (big)", "labels": ["self-hosted", "h100"], "script": "scripts/run_big.sh"}]}
    stale = {
        "entry": [
            {"job": "test (big)", "labels": ["self-hosted", "a100"], "pytest": "pytest tests"},
            {"job": "test (gone)", "labels": ["x"], "pytest": "pytest t"},
        ]
    }
    module = checker()
    assert module.mismatches(parse_declared(good, "good.toml"), legs) == []
    assert module.mismatches(parse_declared(stale, "stale.toml"), legs) == [
        "test (big): declared labels ['self-hosted', 'a100'], the matrix gives ['self-hosted', 'h100']",
        "test (gone): no leg of the workflow's matrix has this name",
    ]
