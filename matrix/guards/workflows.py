"""Which suite runs on which runner, with or without `--nightly`, read from GitHub workflow files.

sglang's workflows run `python3 run_suite.py --hw cuda --suite <suite> [--nightly] ...` in a job's `run:`
step (`.github/workflows/pr-test.yml`, `nightly-test.yml`); `test/run_suite.py` keeps a registration only
when its suite and its `nightly` flag equal the command's. A job's `runs-on` label names the runner, and its
`env:` (workflow, job and step level) is what guards that read the environment see. Jobs that are
commented out are not in the YAML at all, so they never count; `if: false` jobs are skipped too.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.textfiles import read_text

MAX_WORKFLOW_BYTES = 2 * 1024 * 1024
MAX_MATRIX_COMBINATIONS = 256
_EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
_RUN_SUITE = re.compile(r"run_suite\.py\b")


@dataclass(frozen=True, kw_only=True)
class SuiteRun:
    """One `run_suite.py` invocation: the suite, whether `--nightly`, where it runs and with which env."""

    suite: str
    nightly: bool
    labels: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    hw: str | None
    workflow: str
    job: str

    @property
    def where(self) -> str:
        return f"{self.workflow} job {self.job}"


@dataclass(frozen=True, kw_only=True)
class WorkflowSchedule:
    runs: tuple[SuiteRun, ...]
    sources: tuple[str, ...]

    def runs_of(self, suite: str, hw: str) -> tuple[SuiteRun, ...]:
        return tuple(r for r in self.runs if r.suite == suite and (r.hw is None or r.hw == hw))

    @property
    def suites(self) -> frozenset[str]:
        return frozenset(r.suite for r in self.runs)


def workflow_files(root: Path) -> list[Path]:
    """`root/.github/workflows/*.yml` (or `root` itself when it is the workflows folder)."""
    folder = root / ".github" / "workflows"
    if not folder.is_dir():
        folder = root
    if not folder.is_dir():
        raise ConfigError(f"--workflows {root}: not a folder")
    return sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())


def load_schedule(root: Path) -> WorkflowSchedule:
    """Every suite run found in the workflow files under `root`; a malformed file is one ConfigError line."""
    files = workflow_files(root)
    if not files:
        raise ConfigError(f"--workflows {root}: no .github/workflows/*.yml files")
    runs: list[SuiteRun] = []
    for path in files:
        text = read_text(path, ConfigError)
        if len(text) > MAX_WORKFLOW_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_WORKFLOW_BYTES} bytes")
        runs.extend(parse_workflow(text, path.name))
    return WorkflowSchedule(runs=tuple(dict.fromkeys(runs)), sources=tuple(str(p) for p in files))


def parse_workflow(text: str, name: str) -> list[SuiteRun]:
    import yaml  # only --workflows needs it; the audit's start-up stays short without

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{name}{where}: malformed YAML ({getattr(exc, 'problem', None) or 'parse error'})") from None
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{name}: a workflow must be a mapping with jobs")
    jobs = doc.get("jobs") or {}
    if not isinstance(jobs, Mapping):
        raise ConfigError(f"{name}: jobs must be a mapping")
    top_env = _env(doc.get("env"))
    out: list[SuiteRun] = []
    for job_id, job in jobs.items():
        if not isinstance(job, Mapping) or _never(job.get("if")):
            continue
        for values in _matrix(job.get("strategy"), f"{name} job {job_id}"):
            labels = _labels(_subst(job.get("runs-on"), values))
            job_env = {**top_env, **_env(_subst(job.get("env"), values))}
            for step in job.get("steps") or []:
                if not isinstance(step, Mapping) or _never(step.get("if")) or not isinstance(step.get("run"), str):
                    continue
                env = {**job_env, **_env(_subst(step.get("env"), values))}
                for suite, nightly, hw in _suite_commands(_subst(step["run"], values)):
                    out.append(
                        SuiteRun(
                            suite=suite,
                            nightly=nightly,
                            labels=labels,
                            env=tuple(sorted(env.items())),
                            hw=hw,
                            workflow=name,
                            job=str(job_id),
                        )
                    )
    return out


def _never(condition: Any) -> bool:
    return condition is False or (isinstance(condition, str) and condition.strip() in ("false", "${{ false }}"))


def _env(raw: Any) -> dict[str, str]:
    """Literal env values; `${{ ... }}` expressions are left out (their value is not known statically)."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int | float | str):
            text = str(value)
        else:
            continue
        if "${{" not in text:
            out[str(key)] = text
    return out


def _matrix(strategy: Any, where: str) -> Iterator[dict[str, str]]:
    """Each combination of `strategy.matrix` (with include/exclude), as strings; one empty one without a matrix."""
    matrix = strategy.get("matrix") if isinstance(strategy, Mapping) else None
    if not isinstance(matrix, Mapping):
        yield {}
        return
    axes = {k: v for k, v in matrix.items() if k not in ("include", "exclude") and isinstance(v, list)}
    combos = [
        dict(zip(axes, c, strict=True)) for c in itertools.islice(itertools.product(*axes.values()), MAX_MATRIX_COMBINATIONS)
    ]
    excludes = [e for e in matrix.get("exclude") or [] if isinstance(e, Mapping)]
    combos = [c for c in combos if not any(all(c.get(k) == v for k, v in e.items()) for e in excludes)]
    for extra in matrix.get("include") or []:
        if isinstance(extra, Mapping):
            fitting = [c for c in combos if all(c.get(k, v) == v for k, v in extra.items() if k in axes)]
            if fitting and any(k in axes for k in extra):
                for c in fitting:
                    c.update(extra)
            else:
                combos.append(dict(extra))
    if not combos:
        combos = [{}]
    for combo in combos[:MAX_MATRIX_COMBINATIONS]:
        yield {str(k): _scalar(v) for k, v in combo.items()}


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int | float | str) else ""


def _subst(value: Any, matrix: Mapping[str, str]) -> Any:
    """Put `${{ matrix.x }}` values into strings (and lists/mappings of strings)."""
    if isinstance(value, str):

        def put(match: re.Match[str]) -> str:
            key = match.group(1)
            return matrix.get(key.removeprefix("matrix."), match.group(0)) if key.startswith("matrix.") else match.group(0)

        return _EXPR.sub(put, value)
    if isinstance(value, list):
        return [_subst(v, matrix) for v in value]
    if isinstance(value, Mapping):
        return {k: _subst(v, matrix) for k, v in value.items()}
    return value


def _labels(runs_on: Any) -> tuple[str, ...]:
    if isinstance(runs_on, str):
        return (runs_on,)
    if isinstance(runs_on, list):
        return tuple(str(x) for x in runs_on if isinstance(x, str))
    if isinstance(runs_on, Mapping):
        return _labels(runs_on.get("labels"))
    return ()


def _suite_commands(script: str) -> Iterator[tuple[str, bool, str | None]]:
    """(suite, nightly, hw) for each `run_suite.py` command line of a `run:` script."""
    joined = re.sub(r"\\\r?\n", " ", script)
    for raw in joined.splitlines():
        line = raw.split(" #", 1)[0]
        found = _RUN_SUITE.search(line)
        if line.lstrip().startswith("#") or found is None:
            continue
        try:
            words = shlex.split(line[found.end() :])
        except ValueError:
            continue
        suite: str | None = None
        hw: str | None = None
        nightly = False
        for i, word in enumerate(words):
            if word in ("&&", "||", ";", "|"):
                break
            key, eq, inline = word.partition("=")
            value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
            if key == "--suite":
                suite = value
            elif key == "--hw":
                hw = value
            elif word == "--nightly":
                nightly = True
        if suite and "${{" not in suite:
            yield suite, nightly, hw
