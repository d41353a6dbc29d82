"""Every kind of finding specmatrix reports: a new kind is one entry here (writers and docs read this table).

Within a tool, the order here is the order reports list kinds in: failing kinds first.
"""

from __future__ import annotations

from matrix.core.finding import KindSpec, Severity, Tool

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
G, L, A, C = Tool.GUARDS, Tool.LEDGER, Tool.AUDIT, Tool.COVERAGE

KINDS: tuple[KindSpec, ...] = (
    # specmatrix guards: the static audit of a registered suite
    KindSpec(
        tool=G, name="silent-skip", severity=E, fails=True,
        title="Silent skips (registered on a runner where the guard certainly skips)",
        rule="Registered on a runner where its skip guard is certainly true",
        help="Add the predicate that admits the runner to the guard, or drop the registration for that runner.",
    ),
    KindSpec(
        tool=G, name="never-runs", severity=E, fails=True,
        title="Never runs (skipped on every runner it is registered for)",
        rule="Skipped on every runner it is registered for",
        help="Register the test for a runner its guard admits, or disable the registration with disabled=.",
    ),
    KindSpec(
        tool=G, name="unscheduled", severity=E, fails=True,
        title="Unscheduled registrations (no workflow picks them up)",
        rule="No workflow job selects this registration",
        help="Register on a suite a workflow job runs (and match its nightly setting), or add the job.",
    ),
    KindSpec(
        tool=G, name="unparsable", severity=E, fails=True,
        title="Unparsable files and registrations",
        rule="File or registration the audit cannot read",
        help="Fix the syntax error, or write the register_*_ci arguments as literals.",
    ),
    KindSpec(
        tool=G, name="disabled-by-skip", severity=W, fails=False,
        title="Disabled by an unconditional skip (use the registration's disabled= instead)",
        rule="Disabled by an unconditional skip instead of the registration's disabled=",
        help="Give the registration disabled=\"why\" instead of skipping every test unconditionally.",
    ),
    KindSpec(
        tool=G, name="disabled", severity=I, fails=False,
        title="Disabled registrations",
        rule="Registration disabled with a reason",
        help="Listed for information; the registration is not evaluated.",
    ),
    KindSpec(
        tool=G, name="undetermined", severity=I, fails=False,
        title="Undetermined guards (not evaluated: a fact the profiles do not give)",
        rule="Guard whose value no runner profile decides",
        help="Listed for information with the unknown facts; --assume-installed or --workflows can settle some.",
    ),
    KindSpec(
        tool=G, name="unmapped", severity=I, fails=False,
        title="Unmapped suites (no runner profile; guards not evaluated)",
        rule="Suite no runner profile serves",
        help="Map the suite to a runner profile with --suite-map, or pass --workflows / --suites to make typos fail.",
    ),
    KindSpec(
        tool=G, name="out-of-scope", severity=I, fails=False,
        title="Out of scope (not CUDA or CPU)",
        rule="Registration for a platform runner profiles do not describe",
        help="Listed for information: runner profiles describe CUDA and GPU-less machines only.",
    ),
    KindSpec(
        tool=G, name="unregistered", severity=I, fails=False,
        title="Test files without a registration",
        rule="Test file without a CI registration",
        help="Listed for information: no register_*_ci call, so no CI job runs the file.",
    ),
    # specmatrix ledger: what registered files really did on a runner
    KindSpec(
        tool=L, name="silent-skip", severity=E, fails=True,
        title="Runtime silent skips (registered here, skipped here)",
        rule="Registered for this runner and skipped when it ran there",
        help="Fix the guard so the runner runs the test, or accept it with a baseline or allowlist entry.",
    ),
    KindSpec(
        tool=L, name="never-executed", severity=E, fails=True,
        title="Never executed (registered here, no record)",
        rule="Registered for this runner but no process recorded it",
        help="Check the job runs the file with the start-up hook installed (or pass --partial for one shard).",
    ),
    KindSpec(
        tool=L, name="ran-nothing", severity=E, fails=True,
        title="Ran nothing (exited 0 without a test)",
        rule="The file exited 0 without running a test",
        help="A script that exits early on an unmet condition hides a skip: make it skip visibly or not at all.",
    ),
    KindSpec(
        tool=L, name="no-exit", severity=E, fails=True,
        title="No exit record (killed or crashed)",
        rule="A recorded process never exited",
        help="The process was killed or crashed; its log says why.",
    ),
    KindSpec(
        tool=L, name="settled", severity=I, fails=False,
        title="Static undetermined guards, settled by the run",
        rule="A guard the static audit could not decide, decided by the run",
        help="Listed for information: what the runner really did with a guard the static audit left undetermined.",
    ),
    KindSpec(
        tool=L, name="no-runner", severity=W, fails=False,
        title="Processes without runner facts",
        rule="A recorded process carries no runner facts",
        help="Name the profile with --runner, or let the hook record the machine (SPECMATRIX_LEDGER_DETECT=torch).",
    ),
    KindSpec(
        tool=L, name="bad-line", severity=W, fails=False,
        title="Unreadable ledger lines",
        rule="A ledger line that is not a valid record",
        help="The ledger was truncated or written by something else; the other lines were read.",
    ),
    # the skip audit (pytest plugin, `specmatrix audit`)
    KindSpec(
        tool=A, name="unexpected-skip", severity=E, fails=True, label="UNEXPECTED SKIP",
        title="Unexpected skips",
        rule="Skipped on a runner where the matrix says it must run",
        help="Fix the guard that skipped it, or change the matrix rule if the runner really cannot run it.",
    ),
    KindSpec(
        tool=A, name="guard-missing", severity=E, fails=True, label="GUARD MISSING",
        title="Expected skips that ran and broke",
        rule="Expected to skip, ran and failed: nothing rejects the configuration",
        help="Add the guard that rejects this configuration before it breaks.",
    ),
    KindSpec(
        tool=A, name="crashed", severity=E, fails=True, label="CRASHED",
        title="Crashed items",
        rule="The worker running this item died",
        help="The item's message holds what the dead worker reported.",
    ),
    KindSpec(
        tool=A, name="not-run", severity=E, fails=True, label="NOT RUN",
        title="Planned items that never ran",
        rule="A planned item that never ran",
        help="A worker died or the session stopped before reaching it.",
    ),
    KindSpec(
        tool=A, name="unallowed-skip", severity=E, fails=True, label="UNALLOWED SKIP",
        title="Skips outside the matrix on a strict runner",
        rule="Skipped on a strict runner without a live allowlist entry",
        help="Add an allowlist entry with a reason and an expiry date, or make the test run.",
    ),
    KindSpec(
        tool=A, name="expired-allow", severity=E, fails=True, label="EXPIRED ALLOW",
        title="Expired allowlist entries",
        rule="An allowlist entry past its expiry date",
        help="Renew the entry with a new date and reason, or remove it.",
    ),
    KindSpec(
        tool=A, name="rule-too-strict", severity=W, fails=False, label="rule too strict",
        title="Expected skips that ran and passed",
        rule="Expected to skip but ran and passed",
        help="The rule may be too strict; narrow it if the configuration is supported.",
    ),
    KindSpec(
        tool=A, name="unused-allow", severity=W, fails=False, label="unused allow",
        title="Allowlist entries no skip used",
        rule="An allowlist entry no skip matched",
        help="Remove the entry.",
    ),
    # specmatrix coverage: the merge of every shard's report
    KindSpec(
        tool=C, name="missing-report", severity=E, fails=True,
        title="Missing shard reports",
        rule="A planned shard wrote no report",
        help="The shard's job failed before writing its report, or its artifact was not downloaded.",
    ),
    KindSpec(
        tool=C, name="never-ran", severity=E, fails=True,
        title="Cells expected to run that never ran",
        rule="A cell expected to RUN that no report ran",
        help="No shard ran the cell: check the shard plan and the runners the reports come from.",
    ),
)
