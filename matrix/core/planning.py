"""Pick the runner and versions a listing or run is judged against; the glue every command shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from matrix.core.detect import detect
from matrix.core.expect import effective_versions, expectations
from matrix.core.machine import AUTO, MachineFacts, auto_runner, claim_runner, find_runner
from matrix.core.model import Expectation, RunnerProfile
from matrix.core.options import Loaded


@dataclass(frozen=True, kw_only=True)
class Plan:
    """The expected outcome of every cell on one runner, and what it was judged with."""

    runner: RunnerProfile
    versions: Mapping[str, str]
    facts: MachineFacts
    expectations: Mapping[str, Expectation]

    @property
    def detection_note(self) -> str | None:
        if self.facts.overridden:
            return "detection overridden by SPECMATRIX_DETECT"
        return None


def plan_for(loaded: Loaded, runner_name: str, env: Mapping[str, str], *, claim: bool = False) -> Plan:
    """Judge every cell on `runner_name`; `claim=True` also checks this machine satisfies it."""
    needs_gpu_facts = claim or runner_name == AUTO
    facts = detect(env, gpus=needs_gpu_facts)
    if claim:
        runner = claim_runner(loaded.runners, runner_name, facts)
    elif runner_name == AUTO:
        runner = auto_runner(loaded.runners, facts)
    else:
        runner = find_runner(loaded.runners, runner_name)
    versions = effective_versions(loaded.matrix, facts.versions)
    return Plan(runner=runner, versions=versions, facts=facts, expectations=expectations(loaded.matrix, runner, versions))
