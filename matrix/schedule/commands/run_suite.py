"""sglang's `run_suite.py --hw HW --suite SUITE [--nightly]`, read from one command line; pure.

`test/run_suite.py` (sglang main, 2026-07) keeps a registration when its suite equals `--suite` and its
`nightly` flag equals `--nightly` (`filter_tests`); `--hw` picks the registration function (cuda, cpu, amd, ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from matrix.schedule.model import Selection, StepContext, SuiteSelection, UnreadableCommand

SCRIPT = "run_suite.py"
_TAIL = "/" + SCRIPT


class RunSuiteReader:
    """A CommandReader for `python3 [path/]run_suite.py ...`."""

    # Lines without this text cannot hold the command: the walker does not split them (optional attribute).
    keywords = (SCRIPT,)

    def selections(self, words: Sequence[str], context: StepContext) -> Iterable[Selection]:
        # `posixpath.basename(w) == SCRIPT`, without making the base name of every word
        start = next((i for i, w in enumerate(words) if w == SCRIPT or w.endswith(_TAIL)), None)
        if start is None:
            return ()
        suite: str | None = None
        hw: str | None = None
        nightly = False
        args = list(words[start + 1 :])
        for i, word in enumerate(args):
            key, eq, inline = word.partition("=")
            value = inline if eq else (args[i + 1] if i + 1 < len(args) else "")
            if key == "--suite":
                suite = value
            elif key == "--hw":
                hw = value
            elif word == "--nightly":
                nightly = True
        if not suite:
            raise UnreadableCommand(f"{SCRIPT} without --suite")
        if "__UNRESOLVED_" in suite or "${{" in suite or "$" in suite:
            raise UnreadableCommand(f"{SCRIPT} --suite {suite}: the suite is not known statically")
        if hw is not None and ("__UNRESOLVED_" in hw or "$" in hw):
            hw = None
        return (SuiteSelection(suite=suite, hw=hw, nightly=nightly),)
