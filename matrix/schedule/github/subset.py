"""What the GitHub Actions reader models, declared in one place: the expression language (functions, operators,
contexts), the events that start a workflow and the gate each gives, and the kinds of step a job is read as.

Anything outside these tables is not guessed: an expression the tables do not cover is a value known only at run
time (`expressions.Unknown`, shown with its text), so a command it reaches is listed as unread with the construct
named; an event outside `EVENTS` runs its jobs with an `unknown` gate; a step kind outside `STEP_KINDS` that could
run a test command is listed as unread. Sources: docs.github.com, "Evaluate expressions in workflows and actions"
(operators, functions, "GitHub ignores case when comparing strings"), "Contexts reference", "Events that trigger
workflows", "Workflow syntax for GitHub Actions" (`jobs.<job_id>.steps`); actions/runner
`src/Sdk/DTPipelines/Pipelines/ContextData/DictionaryContextData.cs` (property names looked up with
`StringComparer.OrdinalIgnoreCase`) and `src/Runner.Worker/StepsRunner.cs` (the `env` context is a
`CaseSensitiveDictionaryContextData` except on Windows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from matrix.schedule.model import Gate


@dataclass(frozen=True, kw_only=True)
class Construct:
    """One construct the reader models, and how."""

    name: str
    modelled: str


def _table(*items: Construct) -> Mapping[str, Construct]:
    return {item.name: item for item in items}


# Function names are matched ignoring case (`fromJSON`, `fromjson`), as GitHub does.
FUNCTIONS: Mapping[str, Construct] = _table(
    Construct(name="fromjson", modelled="parses a JSON text; a table the walk already holds is itself"),
    Construct(name="tojson", modelled="a table or list stays a value (a callee's fromJson gives it back); else its JSON"),
    Construct(name="format", modelled="`{N}` is the Nth argument as text, `{{`/`}}` are braces"),
    Construct(name="startswith", modelled="case-insensitive prefix of two texts"),
    Construct(name="endswith", modelled="case-insensitive suffix of two texts"),
    Construct(name="contains", modelled="an item of a list, or a case-insensitive substring"),
    Construct(name="join", modelled="a list's items as text, joined by the separator (`,` by default)"),
    Construct(name="always", modelled="true: the schedule is what runs when the jobs before succeed"),
    Construct(name="success", modelled="true, as `always`"),
    Construct(name="failure", modelled="false: a job that runs only on failure is not what CI runs when green"),
    Construct(name="cancelled", modelled="false, as `failure`"),
)

OPERATORS: Mapping[str, Construct] = _table(
    Construct(name="||", modelled="the first truthy operand, else the last; both sides read"),
    Construct(name="&&", modelled="the first falsy operand, else the last; both sides read"),
    Construct(name="!", modelled="negation of a known truth value"),
    Construct(name="==", modelled="equality; texts compared ignoring case"),
    Construct(name="!=", modelled="inequality; texts compared ignoring case"),
    Construct(name="<", modelled="order of two numbers or two texts"),
    Construct(name="<=", modelled="order of two numbers or two texts"),
    Construct(name=">", modelled="order of two numbers or two texts"),
    Construct(name=">=", modelled="order of two numbers or two texts"),
    Construct(name="()", modelled="grouping"),
    Construct(name=".", modelled="a property (name matched ignoring case, except in `env`)"),
    Construct(name="[]", modelled="an index into a list, or a property given as a value"),
)

# Contexts, with the properties known before the run; every other property (and every other context: `secrets`,
# `vars`, `runner`, `job`, `strategy`, most of `github`) is known only at run time.
CONTEXTS: Mapping[str, Construct] = _table(
    Construct(name="inputs", modelled="a reusable workflow's `with:` over its input defaults; a local action's inputs"),
    Construct(name="matrix", modelled="one combination of `strategy.matrix`"),
    Construct(
        name="env", modelled="the workflow's, job's and step's literal `env:` and `$GITHUB_ENV` writes (names case-sensitive)"
    ),
    Construct(
        name="github", modelled="`event_name` (per event read), `workspace` (the checkout), `action_path` (a local action)"
    ),
    Construct(name="steps", modelled="`<id>.outputs.<name>` written literally to `$GITHUB_OUTPUT` by an earlier step of the job"),
    Construct(name="needs", modelled="`<job>.outputs.<name>` echoed literally or computed with jq; `<job>.result` is success"),
    Construct(name="jobs", modelled="`<job>.outputs.<name>`, as `needs`"),
)


@dataclass(frozen=True, kw_only=True)
class EventRule:
    """An event that starts a workflow, and the gate its jobs get."""

    name: str
    gate: Gate
    modelled: str


EVENTS: Mapping[str, EventRule] = {
    rule.name: rule
    for rule in (
        EventRule(name="push", gate=Gate.ALWAYS, modelled="every push (branch and path filters not read: assumed to match)"),
        EventRule(
            name="pull_request",
            gate=Gate.ALWAYS,
            modelled="every pull request; with `types:` only `labeled`/`unlabeled` a label gate",
        ),
        EventRule(name="pull_request_target", gate=Gate.ALWAYS, modelled="as pull_request"),
        EventRule(name="merge_group", gate=Gate.MERGE_QUEUE, modelled="a pull request in the merge queue (it runs in CI)"),
        EventRule(name="schedule", gate=Gate.SCHEDULE, modelled="cron"),
        EventRule(name="workflow_dispatch", gate=Gate.MANUAL, modelled="by hand, with the inputs' defaults"),
        EventRule(name="repository_dispatch", gate=Gate.MANUAL, modelled="by an API call"),
        EventRule(name="issue_comment", gate=Gate.MANUAL, modelled="a comment (a `/command` a maintainer writes)"),
        EventRule(
            name="workflow_run",
            gate=Gate.UNKNOWN,
            modelled="after a workflow of this repository named in `workflows:` runs; naming none, it never starts",
        ),
        EventRule(name="workflow_call", gate=Gate.UNKNOWN, modelled="the caller's events and gates"),
    )
}

# The activity types of pull_request (and pull_request_target) that start it on every change of a pull request
# ("Events that trigger workflows": by default opened, synchronize, reopened); `labeled` alone is a label gate.
PULL_REQUEST_CHANGES = frozenset({"opened", "synchronize", "reopened"})
LABEL_TYPES = frozenset({"labeled", "unlabeled"})

STEP_KINDS: Mapping[str, Construct] = _table(
    Construct(
        name="run",
        modelled="its script, command by command, through the command readers and the files it runs, when its "
        "`shell:` (or `defaults.run.shell`) is bash or sh with options only; another shell (python, pwsh, cmd, a "
        "wrapper script): unread",
    ),
    Construct(
        name="job container",
        modelled="`container:` (an image, or `image:` with `env:`): its `env:` reaches every `run:` step; an image that "
        "is no Docker Official Image sets variables that are not read",
    ),
    Construct(name="uses: ./local", modelled="a local composite action's steps, as the job's own at that point"),
    Construct(name="uses: actions/checkout", modelled="where the repository is checked out (`path:`, `repository:`)"),
    Construct(
        name="uses: another action", modelled="runs no command of the repository unless its `with:` holds one: then unread"
    ),
)
