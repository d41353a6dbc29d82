"""GitHub's own rules for jobs, matrices, conditions and runners, each on a workflow written for the rule.

The rules, as GitHub documents them (docs.github.com, "Workflow syntax for GitHub Actions"):
- `jobs.<id>.needs`: "If a job fails or is skipped, all jobs that need it are skipped unless the jobs use a
  conditional expression that causes the job to continue"; a `needs` naming no job makes the workflow invalid.
- `jobs.<id>.strategy.matrix.include`: an entry's pairs are "added to each of the matrix combinations if none of the
  key:value pairs overwrite any of the original matrix values"; one that fits no combination becomes a new one.
- `jobs.<id>.strategy.matrix.exclude`: runs before include; a partial match excludes.
- `jobs.<id>.steps[*].if` may read the `env` (workflow and job) and `matrix` contexts.
- `defaults.run.working-directory` (workflow, then job) is where a `run:` step starts unless the step says.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from matrix.core.loader import load_runners
from matrix.schedule.commands.pytest_command import PytestCommandReader
from matrix.schedule.github.walk import read_github
from matrix.schedule.model import PytestSelection, Schedule, ScheduleEntry

RUNNERS = load_runners()
READERS = (PytestCommandReader(),)


def read(tmp_path: Path, workflow: str, extra: Mapping[str, str] | None = None) -> Schedule:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(workflow, encoding="utf-8")
    for path, text in (extra or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")

    def load(path: str) -> str | None:
        return (root / path).read_text(encoding="utf-8") if (root / path).is_file() else None

    return read_github(root, READERS, RUNNERS, scripts=load)


def jobs(schedule: Schedule) -> set[str]:
    return {e.origin.job for e in schedule.entries}


def paths(entries: list[ScheduleEntry] | tuple[ScheduleEntry, ...]) -> set[str]:
    out: set[str] = set()
    for e in entries:
        assert isinstance(e.selection, PytestSelection)
        out.update(e.selection.paths)
    return out


NEEDS = """on: [pull_request]
jobs:
  gate:
    if: false
    runs-on: ubuntu-latest
    steps:
      - run: echo never
  after-gate:
    needs: gate
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/test_after_gate.py
  after-after:
    needs: [after-gate]
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/test_after_after.py
  report-anyway:
    needs: gate
    if: always()
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/test_report_anyway.py
  orphan:
    needs: [no-such-job]
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/test_orphan.py
  plain:
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/test_plain.py
"""


def test_jobs_that_need_a_skipped_job_are_skipped_unless_their_condition_continues(tmp_path: Path) -> None:
    schedule = read(tmp_path, NEEDS)
    assert jobs(schedule) == {"report-anyway", "plain"}
    said = {u.origin.job: u.reason for u in schedule.not_run}
    assert "gate" in said["after-gate"] and "after-gate" in said["after-after"]
    assert "no-such-job" in said["orphan"]


MATRICES = """on: [push]
jobs:
  all-excluded:
    runs-on: [self-hosted, sm86]
    strategy:
      matrix:
        py: ["3.10"]
        exclude:
          - py: "3.10"
    steps:
      - run: pytest tests/test_all_excluded.py
  empty-axis:
    runs-on: [self-hosted, sm86]
    strategy:
      matrix:
        py: []
    steps:
      - run: pytest tests/test_empty_axis.py
  excluded-then-included:
    runs-on: [self-hosted, sm86]
    strategy:
      matrix:
        py: ["3.10"]
        exclude:
          - py: "3.10"
        include:
          - py: "3.12"
    steps:
      - run: pytest tests/test_included_${{ matrix.py }}.py
"""


def test_a_matrix_with_no_combination_makes_no_job(tmp_path: Path) -> None:
    schedule = read(tmp_path, MATRICES)
    assert jobs(schedule) == {"excluded-then-included"}
    assert paths(schedule.entries) == {"tests/test_included_3.12.py"}
    said = {u.origin.job for u in schedule.not_run}
    assert {"all-excluded", "empty-axis"} <= said


STEP_IF = """on: [push]
env:
  FROM_WORKFLOW: "off"
jobs:
  legs:
    runs-on: [self-hosted, "${{ matrix.gpu }}"]
    env:
      SKIP_GPU_TESTS: "true"
    strategy:
      matrix:
        gpu: [h100, b200]
    steps:
      - if: env.SKIP_GPU_TESTS != 'true'
        run: pytest tests/test_gpu_only.py
      - if: matrix.gpu == 'b200'
        run: pytest tests/test_b200_only.py
      - if: ${{ env.FROM_WORKFLOW == 'on' }}
        run: pytest tests/test_workflow_flag.py
      - if: github.event.pull_request.draft == false
        run: pytest tests/test_not_draft.py
"""


def test_a_step_condition_reads_the_job_env_and_the_matrix_and_keeps_its_assumption(tmp_path: Path) -> None:
    schedule = read(tmp_path, STEP_IF)
    by_path = {p: [e for e in schedule.entries if p in paths([e])] for p in paths(schedule.entries)}
    assert set(by_path) == {"tests/test_b200_only.py", "tests/test_not_draft.py"}
    assert [e.labels for e in by_path["tests/test_b200_only.py"]] == [("self-hosted", "b200")]
    not_draft = by_path["tests/test_not_draft.py"]
    assert len(not_draft) == 2 and all(any("draft == false assumed true" in a for a in e.assumptions) for e in not_draft)
    # The assumption belongs to that step only.
    assert not any("draft" in a for e in by_path["tests/test_b200_only.py"] for a in e.assumptions)


COMMENTED = """on: [push]
jobs:
  plan:
    runs-on: ubuntu-latest
    outputs:
      box: ${{ steps.pick.outputs.box }}
    steps:
      - id: pick
        run: |
          # echo "box=h100" >> $GITHUB_OUTPUT
          echo "picked at run time"
  run:
    needs: plan
    runs-on: [self-hosted, "${{ needs.plan.outputs.box }}"]
    steps:
      - run: |
          # echo "SUITE_DIR=tests/never" >> $GITHUB_ENV
          echo "SUITE_DIR=tests/real" >> $GITHUB_ENV
      - run: pytest ${{ env.SUITE_DIR }}
"""


def test_commented_out_output_and_env_writes_are_not_read(tmp_path: Path) -> None:
    schedule = read(tmp_path, COMMENTED)
    (entry,) = schedule.entries
    assert paths([entry]) == {"tests/real"}
    assert entry.profiles == () and any("known only at run time" in a for a in entry.assumptions)


RUNS_ON = """on: [push]
jobs:
  pieces:
    runs-on: ${{ matrix.n }}-gpu-${{ matrix.arch }}
    strategy:
      matrix:
        n: [1, 8]
        arch: [h100]
        exclude:
          - n: 8
        include:
          - n: 8
            arch: h200
    steps:
      - run: pytest tests/test_pieces.py
  listed:
    runs-on: [self-hosted, "${{ matrix.sm }}"]
    strategy:
      matrix:
        sm: [sm86, sm75]
    steps:
      - run: pytest tests/test_listed.py
"""


def test_runs_on_is_substituted_per_combination_in_text_and_list_form(tmp_path: Path) -> None:
    schedule = read(tmp_path, RUNS_ON)
    pieces = sorted(e.labels for e in schedule.entries if e.origin.job == "pieces")
    assert pieces == [("1-gpu-h100",), ("8-gpu-h200",)]
    listed = sorted((e.labels, e.profiles) for e in schedule.entries if e.origin.job == "listed")
    assert listed == [(("self-hosted", "sm75"), ("t4",)), (("self-hosted", "sm86"), ("a10g",))]
    assert schedule.unknown_labels == ()


INCLUDE_NEW_KEYS = """on: [push]
jobs:
  legs:
    runs-on: [self-hosted, "${{ matrix.sm }}"]
    strategy:
      matrix:
        sm: [sm86, sm75]
        include:
          - folder: tests/kernels
    steps:
      - run: pytest ${{ matrix.folder }}
"""


def test_an_include_entry_of_new_keys_joins_every_combination(tmp_path: Path) -> None:
    schedule = read(tmp_path, INCLUDE_NEW_KEYS)
    assert sorted((e.labels[1], *paths([e])) for e in schedule.entries) == [
        ("sm75", "tests/kernels"),
        ("sm86", "tests/kernels"),
    ]


DEFAULTS = """on: [push]
defaults:
  run:
    working-directory: python
jobs:
  from-workflow:
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/a
  from-job:
    runs-on: [self-hosted, sm86]
    defaults:
      run:
        working-directory: kernels
    steps:
      - run: pytest tests/b
      - run: pytest tests/c
        working-directory: other
"""


def test_defaults_run_working_directory_of_the_workflow_then_the_job(tmp_path: Path) -> None:
    schedule = read(tmp_path, DEFAULTS)
    found = set()
    for e in schedule.entries:
        assert isinstance(e.selection, PytestSelection)
        found.add((e.origin.job, e.selection.working_dir, e.selection.paths))
    assert found == {
        ("from-workflow", "python", ("python/tests/a",)),
        ("from-job", "kernels", ("kernels/tests/b",)),
        ("from-job", "other", ("other/tests/c",)),
    }


UNKNOWN_BESIDE_KNOWN = """on: [push]
jobs:
  odd:
    runs-on: [self-hosted, sm86, rack-seven]
    steps:
      - run: pytest tests/test_odd.py
"""


def test_an_unknown_label_beside_a_known_one_leaves_the_runner_unknown(tmp_path: Path) -> None:
    schedule = read(tmp_path, UNKNOWN_BESIDE_KNOWN)
    (entry,) = schedule.entries
    assert entry.profiles == ()
    assert any("rack-seven" in a for a in entry.assumptions)
    assert [u.label for u in schedule.unknown_labels] == ["rack-seven"]


def test_an_expression_with_more_values_than_the_bound_is_unread_not_cut(tmp_path: Path) -> None:
    echoes = "".join(
        f'          echo "o{i}=a{i}" >> $GITHUB_OUTPUT\n          echo "o{i}=b{i}" >> $GITHUB_OUTPUT\n' for i in range(6)
    )
    parts = "".join(f"${{{{ needs.plan.outputs.o{i} }}}}" for i in range(6))  # 2 ** 6 = 64 possible texts
    wide = f"""on: [push]
jobs:
  plan:
    runs-on: ubuntu-latest
    steps:
      - run: |
{echoes}
  wide:
    needs: plan
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/{parts}
  narrow:
    needs: plan
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/${{{{ needs.plan.outputs.o0 }}}}${{{{ needs.plan.outputs.o1 }}}}
"""
    schedule = read(tmp_path, wide)
    assert paths(schedule.entries) == {"tests/a0a1", "tests/a0b1", "tests/b0a1", "tests/b0b1"}
    # read with each expression of several values unknown (never cut to some of them): bounded by the rest
    (unread,) = schedule.unread
    assert unread.origin.job == "wide" and "one of 2 values" in unread.reason and unread.reach == ("tests",)


TABLE = "runner_configs:\n  small-box:\n    runs_on: 1-gpu-h100\n  big-box:\n    runs_on: 8-gpu-h200\n"
RUNS_ON_NAMED = """on: [push]
jobs:
  plan:
    runs-on: ubuntu-latest
    outputs:
      pick_runs_on: ${{ steps.pick.outputs.pick_runs_on }}
    steps:
      - id: pick
        run: echo "pick_runs_on=1-gpu-h100" >> $GITHUB_OUTPUT
  run:
    needs: plan
    runs-on: ${{ needs.plan.outputs.pick_runs_on }}
    steps:
      - run: pytest tests/test_named.py
"""


def test_an_output_named_like_the_table_is_read_as_what_it_echoes(tmp_path: Path) -> None:
    schedule = read(tmp_path, RUNS_ON_NAMED, {"scripts/ci/runner_configs.yml": TABLE})
    (entry,) = schedule.entries
    assert entry.labels == ("1-gpu-h100",) and entry.profiles == ("1-gpu-h100",)


BAD_MATRIX = """on: [push]
jobs:
  bad:
    runs-on: [self-hosted, sm86]
    strategy:
      matrix: ${{{{ fromJSON('{matrix}') }}}}
    steps:
      - run: pytest tests/test_bad.py
  good:
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest tests/test_good.py
"""


def test_a_matrix_of_the_wrong_shape_from_an_expression_is_an_unread_job(tmp_path: Path) -> None:
    for i, matrix in enumerate(('{"x":5}', '{"x":[1],"include":5}', '{"x":[1],"exclude":[1]}', "[1, 2]")):
        schedule = read(tmp_path / str(i), BAD_MATRIX.format(matrix=matrix))
        assert jobs(schedule) == {"good"}, matrix
        assert [u.origin.job for u in schedule.unread] == ["bad"], matrix


EXTERNAL = """on: [pull_request]
jobs:
  gpu-legs:
    strategy:
      matrix:
        include:
          - box: linux.g5.4xlarge.nvidia.gpu
            cuda: "12.6"
          - box: linux.g5.4xlarge.nvidia.gpu
            cuda: "12.8"
    uses: some-org/ci-kit/.github/workflows/container_job.yml@main
    with:
      runner: ${{ matrix.box }}
      gpu-arch-version: ${{ matrix.cuda }}
      docker-image: builder:latest
      script: |
        pip install -e .
        pytest tests/kernels -x
  no-script:
    uses: some-org/ci-kit/.github/workflows/publish.yml@v2
    with:
      target: pypi
"""


def test_another_repositorys_workflow_runs_its_with_script_on_its_with_runner(tmp_path: Path) -> None:
    schedule = read(tmp_path, EXTERNAL)
    legs = [e for e in schedule.entries if e.origin.job == "gpu-legs"]
    assert len(legs) == 2 and paths(legs) == {"tests/kernels"}
    assert {e.labels for e in legs} == {("linux.g5.4xlarge.nvidia.gpu",)} and {e.profiles for e in legs} == {("a10g",)}
    assert {next(a for a in e.assumptions if a.startswith("with: ")) for e in legs} == {
        "with: gpu-arch-version=12.6",
        "with: gpu-arch-version=12.8",
    }
    assert all(any("container builder:latest" in a for a in e.assumptions) for e in legs)
    assert [(u.origin.job, u.reason) for u in schedule.unread] == [
        ("no-script", "calls some-org/ci-kit/.github/workflows/publish.yml@v2, a workflow of another repository")
    ]


def test_include_follows_githubs_documented_rules() -> None:
    from matrix.schedule.github.strategy import expand_matrix

    matrix = {
        "os": ["a", "b"],
        "size": ["s", "m"],
        "include": [
            {"note": "x"},  # new keys only: every combination
            {"note": "y", "size": "s"},  # an added value may be overwritten, an axis value may not
            {"os": "a", "flag": 1},
            {"os": "c"},  # fits no combination: a new one
            {"os": "c", "size": "s"},  # fits no original combination: another new one
        ],
    }
    found = expand_matrix(matrix, lambda path: None)
    assert list(found.combos) == [
        {"os": "a", "size": "s", "note": "y", "flag": 1},
        {"os": "a", "size": "m", "note": "x", "flag": 1},
        {"os": "b", "size": "s", "note": "y"},
        {"os": "b", "size": "m", "note": "x"},
        {"os": "c"},
        {"os": "c", "size": "s"},
    ]


LEGS = """on: [push]
jobs:
  legs:
    runs-on: [self-hosted, sm86]
    strategy:
      matrix:
        cuda: ["12.6", "12.8"]
        shard: [1, 2]
    steps:
      - run: pytest tests/kernels
"""


def test_each_cuda_version_leg_is_its_own_entry(tmp_path: Path) -> None:
    schedule = read(tmp_path, LEGS)
    legs = sorted(a for e in schedule.entries for a in e.assumptions if a.startswith("matrix leg"))
    assert legs == ["matrix leg: cuda=12.6", "matrix leg: cuda=12.8"] and len(schedule.entries) == 2
