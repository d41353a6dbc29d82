"""Decide what a file's registrations and guards mean on the runners it is registered for; pure.

Where each registration runs (the suite map, or the schedule read from CI), which guard skips where, and
what to change so a skip on a registered runner goes away (the hints). `audit_file` is the entry point.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.errors import ConfigError, UsageError
from matrix.core.finding import Finding
from matrix.core.jsonio import loads_untrusted
from matrix.core.kinds import DELIBERATE_SKIP
from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import package_text, read_text
from matrix.core.tomlfields import read_toml, read_toml_file
from matrix.guards.env_writes import written_names
from matrix.guards.evaluate import GuardEvaluator
from matrix.guards.evaluation import Evaluation, Tri
from matrix.guards.model import (
    IN_SCOPE_PLATFORMS,
    FileAnalysis,
    Guard,
    GuardFindingKind,
    GuardKind,
    Platform,
    Registration,
    guard_finding,
)
from matrix.guards.predicates import PREDICATES, Predicate, RunnerFacts, container_note
from matrix.registered_suite.gated import gated_guards
from matrix.registered_suite.intent import MatrixIntent
from matrix.registered_suite.judge import Placement, SkipCase, judge_skip
from matrix.registered_suite.scripted import script_findings
from matrix.registered_suite.tested import file_server_args

if TYPE_CHECKING:  # the records load with the workflow readers, which a run without workflows never imports
    from matrix.schedule.model import Schedule, ScheduleEntry

# --- the suite map ----------------------------------------------------------------------------------------------------
# Suite names -> runner profiles, scheduling conventions, and the list of suites CI runs.

DEFAULT_SOURCE = "matrix/data/suites.toml"


@dataclass(frozen=True, kw_only=True)
class SuiteMap:
    """Explicit suite -> profiles entries (exact names and globs) and the nightly-only prefixes."""

    entries: tuple[tuple[str, tuple[str, ...]], ...] = ()
    nightly_prefixes: tuple[str, ...] = ("nightly-", "weekly-")
    sources: tuple[str, ...] = ()

    def explicit(self, suite: str) -> tuple[str, ...] | None:
        for pattern, profiles in self.entries:
            if pattern == suite:
                return profiles
        for pattern, profiles in self.entries:
            if fnmatch.fnmatchcase(suite, pattern):
                return profiles
        return None

    def is_nightly_only(self, suite: str) -> bool:
        return suite.startswith(self.nightly_prefixes)


@dataclass(frozen=True, kw_only=True)
class SuiteTarget:
    """Where a registration runs: profile names (empty when unmapped) and how that was decided."""

    profiles: tuple[str, ...]
    how: str


def parse_suite_map(data: Mapping[str, Any], source: str, base: SuiteMap | None = None) -> SuiteMap:
    """Validate a suite-map document; its entries take precedence over `base`'s."""
    unknown = sorted(set(data) - {"schedule", "suite"})
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r} (allowed: schedule, suite)")
    schedule = data.get("schedule", {})
    if not isinstance(schedule, dict) or set(schedule) - {"nightly_prefixes"}:
        raise ConfigError(f"{source}: [schedule] takes only nightly_prefixes")
    prefixes = schedule.get("nightly_prefixes", list(base.nightly_prefixes) if base else ["nightly-", "weekly-"])
    if not isinstance(prefixes, list) or not all(isinstance(p, str) and p for p in prefixes):
        raise ConfigError(f"{source}: schedule.nightly_prefixes must be a list of non-empty strings")
    table = data.get("suite", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [suite] must be a table of suite = [profile, ...]")
    entries: list[tuple[str, tuple[str, ...]]] = []
    for suite, profiles in table.items():
        items = profiles if isinstance(profiles, list) else [profiles]
        if not items or not all(isinstance(p, str) and p for p in items):
            raise ConfigError(f"{source}: suite {suite!r}: expected a profile name or a list of them")
        entries.append((suite, tuple(items)))
    inherited = base.entries if base else ()
    return SuiteMap(
        entries=(*entries, *inherited),
        nightly_prefixes=tuple(prefixes),
        sources=(*(base.sources if base else ()), source),
    )


def load_suite_map(extra: Path | None = None) -> SuiteMap:
    """The built-in suite map, overlaid by `extra` when given."""
    text = package_text("data/suites.toml")
    built_in = parse_suite_map(read_toml(text, DEFAULT_SOURCE), DEFAULT_SOURCE)
    if extra is None:
        return built_in
    return parse_suite_map(read_toml_file(extra), str(extra), built_in)


def check_suite_map(suite_map: SuiteMap, runners: Mapping[str, RunnerProfile]) -> None:
    """Every profile a suite map names must exist."""
    for suite, profiles in suite_map.entries:
        for name in profiles:
            if name not in runners:
                where = ", ".join(suite_map.sources)
                raise ConfigError(f"{where}: suite {suite!r} maps to unknown runner profile {name!r}")


def target_of(registration: Registration, suite_map: SuiteMap, runners: Mapping[str, RunnerProfile]) -> SuiteTarget:
    """The profiles a well-formed, in-scope registration runs on."""
    suite = registration.suite or ""
    wants_gpu = registration.platform is Platform.CUDA
    explicit = suite_map.explicit(suite)
    if explicit is not None:
        return _fitting(explicit, runners, wants_gpu, f"suite map entry for {suite}")
    configs = _runner_configs(runners)
    if registration.runner_config is not None and registration.runner_config in configs:
        config = registration.runner_config
        return _fitting(configs[config], runners, wants_gpu, f"runner_config {config}")
    found = longest_config_in(suite, configs)
    if found is not None:
        return _fitting(configs[found], runners, wants_gpu, f"runner_config {found} in the suite name")
    if registration.platform is Platform.CPU:
        cpu = tuple(n for n, p in runners.items() if p.gpus == 0)
        return SuiteTarget(profiles=cpu, how="a CPU registration runs on the GPU-less profiles")
    return SuiteTarget(profiles=(), how=f"no runner profile serves suite {suite!r} (add it with --suite-map)")


def longest_config_in(suite: str, configs: Mapping[str, tuple[str, ...]]) -> str | None:
    """The longest runner_config that is a whole dash-separated run of parts of `suite`."""
    parts = suite.split("-")
    best: str | None = None
    for config in configs:
        size = config.count("-") + 1
        found = any("-".join(parts[i : i + size]) == config for i in range(len(parts) - size + 1))
        if found and (best is None or len(config) > len(best)):
            best = config
    return best


def _runner_configs(runners: Mapping[str, RunnerProfile]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for name, profile in runners.items():
        for config in profile.runner_configs:
            out.setdefault(config, []).append(name)
    return {config: tuple(names) for config, names in out.items()}


def _fitting(names: Sequence[str], runners: Mapping[str, RunnerProfile], wants_gpu: bool, how: str) -> SuiteTarget:
    fit = tuple(n for n in names if n in runners and (runners[n].gpus > 0) == wants_gpu)
    if fit:
        return SuiteTarget(profiles=fit, how=how)
    kind = "GPU" if wants_gpu else "GPU-less"
    return SuiteTarget(profiles=(), how=f"{how} names no {kind} profile ({', '.join(names)})")


def read_suite_list(path: Path) -> frozenset[str]:
    """Suite names CI workflows run: text (one a line, # comments), JSON list or {"suites": [...]}, TOML suites = [...]."""
    text = read_text(path, UsageError, f"--suites {path}")
    names: Any
    if path.suffix == ".json":
        names = loads_untrusted(text, f"--suites {path}", UsageError, malformed="malformed")
        if isinstance(names, dict):
            names = names.get("suites")
    elif path.suffix == ".toml":
        try:
            names = tomllib.loads(text).get("suites")
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"--suites {path}: malformed TOML: {exc}") from None
    else:
        names = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        names = [n for n in names if n]
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise UsageError(
            f'--suites {path}: expected a list of suite names (JSON list or {{"suites": [...]}}, TOML suites = [...])'
        )
    if not names:
        raise UsageError(f"--suites {path}: no suite names in the file")
    return frozenset(n.strip() for n in names)


# --- hints ------------------------------------------------------------------------------------------------------------
# What to change so a skip on a registered runner goes away: the predicate that would admit it, or the
# registration to drop. Read from the facts the evaluation consulted.

# sglang.srt.utils.common: one predicate per compute-capability major.
_ARCH_PREDICATE = {9: "is_sm90_supported()", 10: "is_sm100_supported()", 12: "is_sm120_supported()"}
_ARCH_FACTS = frozenset(
    {
        "is_sm90_supported",
        "is_sm100_supported",
        "is_sm120_supported",
        "is_blackwell",
        "is_blackwell_supported",
        "get_device_sm",
        "torch.cuda.get_device_capability",
        "torch.cuda.get_device_name",
    }
)
_GPU_COUNT = frozenset({"torch.cuda.device_count"})
_CI = frozenset({"is_in_ci", "is_in_amd_ci", "env"})
# Guards that do not skip: the test runs and passes having tested nothing (silent-pass).
_NOT_SKIPS = frozenset({GuardKind.EARLY_RETURN, GuardKind.GATED_ASSERTIONS})
_PLATFORM = frozenset({"is_hip", "is_npu", "is_xpu", "torch.version.hip"})


def silent_skip_hint(evaluation: Evaluation, facts: RunnerFacts, every: tuple[str, ...] = ()) -> str:
    """One sentence: which predicate would admit the runner, or which registration to drop."""
    profile = facts.profile
    runners = ", ".join(every) if every else profile.name
    drop = f"drop the {runners} registration{'s' if len(every) > 1 else ''}"
    if len(every) > 1 and evaluation.facts and set(evaluation.facts) <= _ARCH_FACTS and profile.capability is not None:
        drop = f"drop the {runners} registrations"
    used = set(evaluation.facts)
    if used & _PLATFORM:
        return f"the guard wants another platform (ROCm/NPU/XPU): register it with that platform's register_*_ci, or {drop}"
    if used & _ARCH_FACTS and profile.capability is not None and profile.sm is not None:
        arch = f"sm{profile.sm}"
        predicate = _ARCH_PREDICATE.get(profile.capability[0], f"get_device_sm() == {profile.sm}")
        return f"guard excludes {arch}, the runner is {arch}: add `{predicate}`, or {drop}"
    if used & _GPU_COUNT:
        gpus = f"the runner has {profile.gpus} GPU(s), fewer than the guard needs"
        return f"{gpus}: register it on a suite with enough GPUs, or {drop}"
    if used & _CI:
        return f"the guard skips in CI on {profile.name}: make the skip depend on the hardware, or {drop} (or set disabled=)"
    if "torch.version.cuda" in used:
        return f"the guard rejects the runner's CUDA {profile.cuda}: relax the version check, or {drop}"
    if not profile.gpus:
        return f"the guard needs a GPU: register it with register_cuda_ci on a GPU suite, or {drop}"
    return f"change the guard so {profile.name} passes it, or {drop}"


# --- the audit of one file --------------------------------------------------------------------------------------------
# Decide what a file's registrations and guards mean on the runners it is registered for; pure.

Kind = GuardFindingKind


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    """What the audit knows besides the files: profiles, suite conventions, installed modules."""

    runners: Mapping[str, RunnerProfile]
    suite_map: SuiteMap = field(default_factory=SuiteMap)
    known_suites: frozenset[str] | None = None
    only_runners: tuple[str, ...] = ()
    installed: frozenset[str] = frozenset()
    predicates: Mapping[str, Predicate] = field(default_factory=lambda: PREDICATES)
    # What CI runs, read from its files (matrix.schedule): which runner, --nightly or not, which env.
    schedule: Schedule | None = None
    # The matrix, to judge a skip by what the test tests (None: every skip is judged by where the test runs).
    intent: MatrixIntent | None = None
    # Where each registration runs depends only on these settings: worked out once per distinct registration.
    targets: dict[tuple[str, str | None, str, bool], SuiteTarget] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class FileAudit:
    findings: tuple[Finding, ...]
    registered: bool
    runners: tuple[str, ...]


def audit_file(analysis: FileAnalysis, settings: AuditSettings, text: str | None = None) -> FileAudit:
    """Findings for one analysed file; `--only-runners` keeps those that concern a named runner. `text`, the
    file's source, is read for server args when a skip is judged, and for what the file runs as a script."""
    if analysis.syntax_error is not None:
        finding = guard_finding(
            Kind.UNPARSABLE,
            path=analysis.path,
            line=analysis.error_line,
            test=analysis.path,
            reason=f"{analysis.syntax_error}; the audit cannot read its registrations or guards",
        )
        return FileAudit(findings=(finding,), registered=False, runners=())
    findings, runners = registration_findings(analysis, settings)
    env = runner_env(analysis, runners, settings)
    if not analysis.registrations and analysis.is_test_file:
        findings.append(
            guard_finding(
                Kind.UNREGISTERED,
                path=analysis.path,
                line=1,
                test=analysis.path,
                reason="no register_*_ci(...) call: no CI suite runs this file",
            )
        )
    gated = gated_guards(analysis, text) if text is not None else ()
    findings.extend(
        guard_findings(
            replace(analysis, guards=(*analysis.guards, *gated)) if gated else analysis,
            runners,
            settings,
            elsewhere=elsewhere_of(analysis, settings),
            env=env,
            text=text,
            containers=runner_containers(analysis, runners, settings),
        )
    )
    if text is not None and analysis.is_test_file:
        guarded = frozenset(g.scope for g in analysis.guards)
        # How the files are started is read from the schedule: a run_suite.py job runs each one as a script.
        schedule = settings.schedule
        as_script = schedule is not None and any(
            selecting_runs(r, schedule)
            for r in analysis.registrations
            if r.problem is None and r.disabled is None and r.platform in IN_SCOPE_PLATFORMS
        )
        findings.extend(script_findings(analysis.path, analysis.scopes, runners, text, guarded, as_script=as_script))
    findings = merge_findings(findings)
    if settings.only_runners:
        chosen = set(settings.only_runners)
        findings = [f for f in findings if chosen & set(f.runners) or f.kind == Kind.UNPARSABLE]
        runners = tuple(r for r in runners if r in chosen)
    return FileAudit(findings=tuple(findings), registered=bool(analysis.registrations), runners=runners)


def registration_findings(analysis: FileAnalysis, settings: AuditSettings) -> tuple[list[Finding], tuple[str, ...]]:
    """Findings about the registrations, and the runners the file really runs on."""
    findings: list[Finding] = []
    active: list[str] = []
    pending: list[tuple[Registration, str, tuple[str, ...]]] = []  # unscheduled: judged once `active` is known
    elsewhere: list[str] = []  # registrations of other platforms a job selects: the file runs there
    for reg in analysis.registrations:

        def finding(kind: Kind, reason: str, runners: tuple[str, ...] = (), reg: Registration = reg) -> Finding:
            return guard_finding(
                kind, path=analysis.path, line=reg.line, test=analysis.path, runners=runners, guard=reg.source, reason=reason
            )

        if reg.problem is not None:
            findings.append(finding(Kind.UNPARSABLE, reg.problem))
            continue
        if reg.platform not in IN_SCOPE_PLATFORMS:
            if reg.disabled is not None:
                findings.append(finding(Kind.DISABLED, f"{reg.function} disabled: {reg.disabled}"))
                continue
            reason = f"{reg.function} targets {reg.platform.value}; runner profiles describe CUDA and GPU-less machines only"
            findings.append(finding(Kind.OUT_OF_SCOPE, reason))
            if settings.schedule is not None and reg.platform is not Platform.OTHER:
                # run_suite.py's --hw names the platform: a job selecting it runs the file on that platform's runner
                ran = settings.schedule.suite_entries(reg.suite or "", reg.platform.value, reg.nightly)
                labels = dict.fromkeys(label for e in ran for label in (e.other_runners or e.labels))
                if ran:
                    elsewhere.append(f"{reg.function} (suite {reg.suite}) on {', '.join(labels) or 'its runner'}")
            continue
        suite = reg.suite or ""
        target = target_for(reg, settings)
        if reg.disabled is not None:
            findings.append(finding(Kind.DISABLED, f"suite {suite} disabled: {reg.disabled}", target.profiles))
            continue
        unscheduled = unscheduled_reasons(reg, settings)
        unread = settings.schedule.unread if settings.schedule is not None else ()
        if unread and any("--suites list" not in r for r in unscheduled):
            # A CI job the reader could not read may run this suite: "cannot read" is never "does not run".
            first = unread[0]
            reason = (
                f"{'; '.join(unscheduled)}; but {len(unread)} CI job(s) could not be read "
                f"(first: {first.origin}: {first.reason}), so whether it runs is undetermined"
            )
            findings.append(finding(Kind.UNDETERMINED, reason, target.profiles))
            continue
        if unscheduled:
            pending.append((reg, "; ".join(unscheduled), target.profiles))
            continue
        unknown = unknown_label_reason(reg, settings, target)
        if unknown:
            findings.append(finding(Kind.UNKNOWN_LABEL, unknown, target.profiles))
        if not target.profiles:
            if not unknown:
                findings.append(finding(Kind.UNMAPPED, f"suite {suite}: {target.how}; its guards are not evaluated"))
            continue
        active.extend(p for p in target.profiles if p not in active)
    for reg, reason, profiles in pending:
        findings.append(unscheduled_finding(analysis.path, reg, reason, profiles, active, elsewhere=elsewhere))
    ordered = tuple(name for name in settings.runners if name in active)
    return findings, ordered


def unscheduled_finding(
    path: str, reg: Registration, reason: str, profiles: tuple[str, ...], active: Sequence[str], *, elsewhere: Sequence[str] = ()
) -> Finding:
    """An unscheduled registration: dead (a warning) when another registration still runs the file (also one of
    another platform a job selects), else an error (the file runs nowhere). The reason says where it still runs."""
    kind = Kind.UNSCHEDULED
    if not active and elsewhere:
        kind = Kind.DEAD_REGISTRATION
        reason += f"; the file still runs through {'; '.join(elsewhere)}, which no runner profile describes"
    if active:
        kind = Kind.DEAD_REGISTRATION
        runs = ", ".join(active)
        missing = [p for p in profiles if p not in active]
        if missing:
            reason += f"; the file still runs through another registration, on {runs} (not on {', '.join(missing)})"
        else:
            reason += f"; the file still runs through another registration on the same runner ({runs})"
    return guard_finding(kind, path=path, line=reg.line, test=path, runners=profiles, guard=reg.source, reason=reason)


def _hw(reg: Registration) -> str:
    return "cpu" if reg.platform is Platform.CPU else "cuda"


def selecting_runs(reg: Registration, schedule: Schedule) -> tuple[ScheduleEntry, ...]:
    """The schedule entries that select this registration: same suite and hw, `--nightly` equal to its flag."""
    return schedule.suite_entries(reg.suite or "", _hw(reg), reg.nightly)


def suite_runs(schedule: Schedule, suite: str, hw: str) -> tuple[ScheduleEntry, ...]:
    """Entries running `suite` on `hw`, with or without `--nightly`."""
    return schedule.suite_entries(suite, hw, False) + schedule.suite_entries(suite, hw, True)


def target_for(reg: Registration, settings: AuditSettings) -> SuiteTarget:
    """Profiles of the selecting schedule entries (their runs-on labels) when a schedule is read, else the suite map."""
    key = (reg.suite or "", reg.runner_config, reg.platform.value, reg.nightly)
    if key not in settings.targets:
        settings.targets[key] = _target_for(reg, settings)
    return settings.targets[key]


def _target_for(reg: Registration, settings: AuditSettings) -> SuiteTarget:
    if settings.schedule is not None:
        entries = selecting_runs(reg, settings.schedule)
        names = {name for e in entries for name in e.profiles}
        # The machines the selecting jobs run on, as they are: `run_suite.py --hw cpu` in an H100 job runs the
        # CPU registrations on that H100 host.
        found = tuple(n for n in settings.runners if n in names)
        if found:
            labels = sorted({label for e in entries if set(e.profiles) & set(found) for label in e.labels})
            return SuiteTarget(profiles=found, how=f"runs-on {', '.join(labels)} in the workflows")
    return target_of(reg, settings.suite_map, settings.runners)


def unknown_label_reason(reg: Registration, settings: AuditSettings, target: SuiteTarget) -> str:
    """Why the selecting jobs' runners are not known: their labels name no profile (of this platform)."""
    if settings.schedule is None:
        return ""
    entries = selecting_runs(reg, settings.schedule)
    lost = [e for e in entries if not any(n in settings.runners for n in e.profiles)]
    if not lost or (len(lost) < len(entries) and target.how.endswith("in the workflows")):
        return ""
    labels = list(dict.fromkeys(", ".join(e.labels) or "(none)" for e in lost))
    unknown = {str(u.origin): u for u in settings.schedule.unknown_labels}
    nearest = list(dict.fromkeys(n for e in lost for n in (unknown[str(e.origin)].nearest if str(e.origin) in unknown else ())))
    origin = lost[0].origin
    reason = (
        f"suite {reg.suite} runs on runs-on {' | '.join(labels)} ({origin}), a label no runner profile knows"
        + (f" (nearest profiles: {', '.join(nearest)})" if nearest else "")
        + "; add it to a profile's labels or former_labels"
    )
    if target.profiles:
        reason += f"; its guards are evaluated on {', '.join(target.profiles)} from the suite map instead"
    else:
        reason += "; its guards are not evaluated"
    return reason


def runner_env(analysis: FileAnalysis, runners: tuple[str, ...], settings: AuditSettings) -> dict[str, dict[str, str]]:
    """Per runner, the env every selecting workflow job sets alike (a variable set differently is unknown)."""
    if settings.schedule is None:
        return {}
    out: dict[str, dict[str, str]] = {}
    for name in runners:
        envs = [
            dict(entry.env)
            for reg in analysis.registrations
            if reg.problem is None and reg.platform in IN_SCOPE_PLATFORMS
            for entry in selecting_runs(reg, settings.schedule)
            if name in entry.profiles
        ]
        if envs:
            out[name] = {k: v for k, v in envs[0].items() if all(e.get(k) == v for e in envs[1:])}
            for k in {k for e in envs for k in e} - set(out[name]):
                out[name][k] = RUN_TIME  # set by some selecting jobs only, or differently: not known
    return out


RUN_TIME = "${{ run time }}"


def runner_containers(analysis: FileAnalysis, runners: tuple[str, ...], settings: AuditSettings) -> dict[str, tuple[str, str]]:
    """Per runner whose selecting jobs run the file inside a container they start: (which, why its environment may
    hold more than `runner_env` says, "" when fully read); a runner where only some jobs do so is not fully read."""
    if settings.schedule is None:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for name in runners:
        entries = [
            entry
            for reg in analysis.registrations
            if reg.problem is None and reg.platform in IN_SCOPE_PLATFORMS
            for entry in selecting_runs(reg, settings.schedule)
            if name in entry.profiles
        ]
        boxed = [e for e in entries if e.container is not None]
        if not boxed:
            continue
        where = "; ".join(
            dict.fromkeys(
                f"the container {c.name} of job {e.origin.job} ({e.origin.file}:{e.origin.line})"
                for e in boxed
                if (c := e.container)
            )
        )
        unread = "; ".join(dict.fromkeys(e.container.unread for e in boxed if e.container and e.container.unread))
        if len(boxed) < len(entries):
            unread = "; ".join(x for x in (unread, "other selecting jobs run it on the runner itself") if x)
        out[name] = (where, unread)
    return out


def unscheduled_reasons(reg: Registration, settings: AuditSettings) -> list[str]:
    """Why no workflow would pick this registration up; empty when one does."""
    suite = reg.suite or ""
    reasons: list[str] = []
    schedule = settings.schedule
    if schedule is not None:
        from matrix.schedule.model import SuiteSelection  # loaded already: the schedule is made of its records

        runs = suite_runs(schedule, suite, _hw(reg))
        if not runs:
            suites = sorted({e.selection.suite for e in schedule.entries if isinstance(e.selection, SuiteSelection)})
            close = difflib.get_close_matches(suite, suites, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            reasons.append(f"no workflow job runs suite {suite}{hint}")
        elif not selecting_runs(reg, schedule):
            first = runs[0]
            how = (
                "with --nightly"
                if isinstance(first.selection, SuiteSelection) and first.selection.nightly
                else "without --nightly"
            )
            reasons.append(
                f"registered with nightly={reg.nightly}, but suite {suite} only runs {how} ({first.origin}); "
                "run_suite.py keeps a registration only when its nightly flag matches"
            )
    elif settings.suite_map.is_nightly_only(suite) and not reg.nightly:
        reasons.append(
            f"suite {suite} is run only by scheduled workflows, which select nightly=True registrations; "
            "this one has nightly=False"
        )
    if settings.known_suites is not None and suite not in settings.known_suites:
        close = difflib.get_close_matches(suite, sorted(settings.known_suites), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        reasons.append(f"suite {suite} is not in the --suites list{hint}")
    return reasons


def placements_of(analysis: FileAnalysis, runners: tuple[str, ...], settings: AuditSettings) -> tuple[Placement, ...]:
    """Each registration that runs the file: its suite and the runners (of `runners`) it puts the file on."""
    out: list[Placement] = []
    for reg in analysis.registrations:
        if reg.problem is not None or reg.disabled is not None or reg.platform not in IN_SCOPE_PLATFORMS:
            continue
        if unscheduled_reasons(reg, settings):
            continue
        on = tuple(p for p in target_for(reg, settings).profiles if p in runners)
        if on:
            out.append(Placement(suite=reg.suite or "", runners=on))
    return tuple(out)


def elsewhere_of(analysis: FileAnalysis, settings: AuditSettings) -> tuple[str, ...]:
    """Registrations that may run the file where no profile can tell: other platforms and unmapped suites."""
    out: list[str] = []
    for reg in analysis.registrations:
        if reg.problem is not None or reg.disabled is not None:
            continue
        if reg.platform not in IN_SCOPE_PLATFORMS:
            out.append(f"{reg.function} (suite {reg.suite})")
        elif not target_for(reg, settings).profiles:
            out.append(f"{reg.function} (suite {reg.suite}, unmapped)")
    return tuple(dict.fromkeys(out))


def merge_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per test and kind: runners, guards and reasons of the same (path, test, kind) are joined."""
    merged: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        key = (f.kind, f.path, f.subject)
        seen = merged.get(key)
        if seen is None:
            merged[key] = f
            continue
        merged[key] = replace(
            seen,
            runners=tuple(dict.fromkeys((*seen.runners, *f.runners))),
            source=_join(seen.source, f.source),
            message=_join(seen.message, f.message),
            hint=seen.hint or f.hint,
        )
    return list(merged.values())


def _join(a: str, b: str) -> str:
    parts = [p for p in (a, b) if p]
    return " | ".join(dict.fromkeys(" | ".join(parts).split(" | ")))


def guard_findings(
    analysis: FileAnalysis,
    runners: tuple[str, ...],
    settings: AuditSettings,
    *,
    elsewhere: tuple[str, ...] = (),
    env: Mapping[str, Mapping[str, str]] | None = None,
    text: str | None = None,
    containers: Mapping[str, tuple[str, str]] | None = None,
) -> list[Finding]:
    """Silent skips, tests that never run, deliberate disables and undetermined guards, over the file's runners."""
    if not runners or not analysis.guards:
        return []
    env = env or {}
    open_names = frozenset(settings.schedule.ci_names) if settings.schedule is not None else frozenset()
    if text is not None:
        open_names |= written_names(text)  # set by the test module itself (`matrix.guards.env_writes`)
    facts = {
        name: RunnerFacts(
            profile=settings.runners[name],
            installed=settings.installed,
            env=env.get(name, {}),
            env_closed=name in env,
            env_open=open_names,
            container=(containers or {}).get(name, ("", ""))[0],
            container_unread=(containers or {}).get(name, ("", ""))[1],
        )
        for name in runners
    }
    early = tuple(g for g in analysis.guards if g.kind in _NOT_SKIPS)
    guards = tuple(g for g in analysis.guards if g.kind not in _NOT_SKIPS)
    evaluate = GuardEvaluator(analysis.names, settings.predicates)
    # A guard is evaluated on a runner only when a finding depends on it: not behind an outer guard that
    # already skips there (the outer one decides), which spares a good share of a densely guarded file.
    verdicts: dict[tuple[int, str], Evaluation] = {}

    def verdict(index: int, runner: str) -> Evaluation:
        found = verdicts.get((index, runner))
        if found is None:
            found = verdicts[(index, runner)] = evaluate(guards[index], facts[runner])
        return found

    by_scope: dict[str, list[int]] = {}
    for index, guard in enumerate(guards):
        by_scope.setdefault(guard.scope, []).append(index)
    parents = {s.nodeid: s.parent for s in analysis.scopes}

    chains: dict[str, list[str]] = {}

    def chain(nodeid: str) -> list[str]:
        if nodeid not in chains:
            out: list[str] = []
            current: str | None = nodeid
            while current is not None:
                out.append(current)
                current = parents.get(current)
            chains[nodeid] = out[::-1]
        return chains[nodeid]

    skips: dict[tuple[str, str], int | None] = {}

    def skipper(nodeid: str, runner: str) -> int | None:
        """The outermost guard that certainly skips `nodeid` on `runner`: an enclosing scope's answer, else the
        first of its own guards that skips. Each scope is answered once a runner, for itself and its children."""
        decided = skips.get((nodeid, runner), -1)
        if decided != -1:
            return decided
        decided = None
        for scope in chain(nodeid):
            known = skips.get((scope, runner), -1)
            if known != -1:
                decided = known
                continue
            if decided is None:
                for index in by_scope.get(scope, ()):
                    if verdict(index, runner).skips is Tri.TRUE:
                        decided = index
                        break
            skips[(scope, runner)] = decided
        return decided

    findings: list[Finding] = []
    never: set[str] = set()

    def server_args() -> frozenset[str]:
        return file_server_args(text) if text is not None else frozenset()

    for scope in analysis.scopes:
        if any(s in never for s in chain(scope.nodeid)[:-1]):
            continue
        deciders = {r: skipper(scope.nodeid, r) for r in runners}
        if all(d is not None for d in deciders.values()):
            never.add(scope.nodeid)
            findings.append(
                _never_runs(
                    nodeid=scope.nodeid,
                    deciders=deciders,
                    guards=guards,
                    verdict=verdict,
                    facts=facts,
                    path=analysis.path,
                    elsewhere=elsewhere,
                    platforms=frozenset(r.platform for r in analysis.registrations if r.problem is None and r.disabled is None),
                )
            )
    hidden: dict[str, bool] = {}  # whether a scope or one around it never runs (`never` is complete from here)

    def never_runs(nodeid: str) -> bool:
        found = hidden.get(nodeid)
        if found is None:
            found = hidden[nodeid] = any(s in never for s in chain(nodeid))
        return found

    for scope in analysis.scopes:
        if never_runs(scope.nodeid):
            continue
        by_guard: dict[int, list[str]] = {}
        for runner in runners:
            hit = skipper(scope.nodeid, runner)
            if hit is not None and guards[hit].scope == scope.nodeid:
                by_guard.setdefault(hit, []).append(runner)
        for hit, skipped in by_guard.items():
            case = SkipCase(
                path=analysis.path,
                nodeid=scope.nodeid,
                guard=guards[hit],
                skipped=tuple(skipped),
                others=tuple(r for r in runners if skipper(scope.nodeid, r) is None),
                evaluations={r: verdict(hit, r) for r in skipped},
                facts=facts,
                placements=placements_of(analysis, runners, settings),
                imports=tuple(target for _, target in analysis.names.imports),
            )
            first = skipped[0]
            fallback = functools.partial(silent_skip_hint, verdict(hit, first), facts[first], every=tuple(skipped))
            findings.extend(judge_skip(case, settings.intent, server_args=server_args, fallback_hint=fallback))
    for guard in early:
        if never_runs(guard.scope):
            continue
        passing: list[str] = []
        reasons: list[str] = []
        unsure: list[tuple[str, str]] = []
        for runner in runners:
            if skipper(guard.scope, runner) is not None:
                continue  # skipped before the body runs: already reported as a skip
            result = evaluate(guard, facts[runner])
            if result.skips is Tri.UNKNOWN and guard.kind is GuardKind.GATED_ASSERTIONS:
                unsure.append((runner, "; ".join(result.steps)))
            if result.skips is Tri.TRUE and not result.constant:
                passing.append(runner)
                said = "it returns early" if guard.kind is GuardKind.EARLY_RETURN else "none of its assertions runs"
                why = result.explain(facts[runner]).replace("the guard is true, so it skips", said)
                reasons.append("; ".join(x for x in (why, container_note(facts[runner], result.facts)) if x))
        if passing:
            hint = (
                "the test returns before testing anything and is counted as a pass: make it a visible skip "
                "(self.skipTest(...) / pytest.skip(...)) so CI reports it, or drop the early return"
                if guard.kind is GuardKind.EARLY_RETURN
                else "the test passes having checked nothing: set the variable where the job runs the tests "
                "(`docker exec -e`, the job's env), or assert unconditionally"
            )
            findings.append(_finding(Kind.SILENT_PASS, guard, tuple(passing), " | ".join(reasons), hint))
        if unsure:
            reason = f"cannot tell whether its assertions run on {', '.join(r for r, _ in unsure)}: " + "; ".join(
                dict.fromkeys(why for _, why in unsure)
            )
            findings.append(_finding(Kind.UNDETERMINED, guard, tuple(r for r, _ in unsure), reason))
    for index, guard in enumerate(guards):
        if never_runs(guard.scope):
            continue
        unknown = [r for r in runners if skipper(guard.scope, r) is None and verdict(index, r).skips is Tri.UNKNOWN]
        if unknown:
            steps = list(dict.fromkeys(s for r in unknown for s in verdict(index, r).steps))
            reason = f"cannot tell whether it skips on {', '.join(unknown)}: {'; '.join(steps)}"
            findings.append(_finding(Kind.UNDETERMINED, guard, tuple(unknown), reason))
    return findings


def _never_runs(
    *,
    nodeid: str,
    deciders: Mapping[str, int | None],
    guards: tuple[Guard, ...],
    verdict: Callable[[int, str], Evaluation],
    facts: Mapping[str, RunnerFacts],
    path: str,
    elsewhere: tuple[str, ...] = (),
    platforms: frozenset[Platform] = frozenset(),
) -> Finding:
    used = [i for i in dict.fromkeys(deciders.values()) if i is not None]
    first = guards[used[0]]
    evaluations = {r: verdict(i, r) for r, i in deciders.items() if i is not None}
    guard = " | ".join(dict.fromkeys(guards[i].source for i in used))
    twin = _platform_only(evaluations.values(), platforms)
    if twin is not None:
        # A ROCm/NPU/XPU-only test in a file that also registers that platform runs where it belongs.
        return guard_finding(
            Kind.OUT_OF_SCOPE,
            path=path,
            line=first.line,
            test=nodeid,
            runners=tuple(deciders),
            guard=guard,
            reason=(
                f"a {_PLATFORM_NAMES[twin]}-only test: it skips on the CUDA/CPU runners ({', '.join(deciders)}) and "
                f"runs through the file's register_{twin.value}_ci registration, which no runner profile describes"
            ),
        )
    if all(e.constant for e in evaluations.values()):
        # The same skip on every machine: a deliberate disable, not an arch mismatch (the one kind every audit uses).
        return guard_finding(
            Kind(DELIBERATE_SKIP),
            path=path,
            line=first.line,
            test=nodeid,
            runners=tuple(deciders),
            guard=guard,
            reason="an unconditional skip: it skips on every machine, whatever the runner",
            hint='say so in the registration instead: register_cuda_ci(..., disabled="<why>"), so CI reports it as disabled',
        )
    reasons = [e.explain(facts[r]) for r, e in evaluations.items()]
    where = ", ".join(deciders)
    head = f"skipped on every CUDA/CPU runner it is registered for ({where})"
    if elsewhere:
        head += f"; it may still run through {', '.join(elsewhere)}, which no runner profile describes"
    else:
        head = f"skipped on every runner it is registered for ({where})"
    runner = next(iter(evaluations))
    return guard_finding(
        Kind.NEVER_RUNS,
        path=path,
        line=first.line,
        test=nodeid,
        runners=tuple(deciders),
        guard=guard,
        reason=f"{head}: " + " | ".join(reasons),
        hint=silent_skip_hint(evaluations[runner], facts[runner], every=tuple(deciders)),
    )


# Predicates that say "this is a ROCm / NPU / XPU machine" (false on every CUDA and CPU profile).
PLATFORM_FACTS = {
    "is_hip": Platform.AMD,
    "torch.version.hip": Platform.AMD,
    "is_npu": Platform.NPU,
    "is_xpu": Platform.XPU,
}


_PLATFORM_NAMES = {Platform.AMD: "ROCm", Platform.NPU: "NPU", Platform.XPU: "XPU"}


def _platform_only(evaluations: Iterable[Evaluation], platforms: frozenset[Platform]) -> Platform | None:
    """The platform a never-run test is written for, when only platform facts decided it and the file registers it."""
    found: set[Platform] = set()
    for evaluation in evaluations:
        if not evaluation.facts or any(f not in PLATFORM_FACTS for f in evaluation.facts):
            return None
        found.update(PLATFORM_FACTS[f] for f in evaluation.facts)
    if len(found) == 1 and found <= platforms:
        return found.pop()
    return None


def _finding(kind: Kind, guard: Guard, runners: tuple[str, ...], reason: str, hint: str = "") -> Finding:
    path = guard.scope.split("::", 1)[0]
    return guard_finding(
        kind, path=path, line=guard.line, test=guard.scope, runners=runners, guard=guard.source, reason=reason, hint=hint
    )
