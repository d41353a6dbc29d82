"""Every failure kind specmatrix reports, each with its exit code."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


class SpecmatrixError(Exception):
    """Base class: one clear line for the user and an exit code."""

    exit_code = EXIT_USAGE


class ConfigError(SpecmatrixError):
    """A matrix, runner or rule file is malformed or inconsistent."""


class UsageError(SpecmatrixError):
    """The command line or an option value is wrong."""


class SelectorError(SpecmatrixError):
    """A selector is malformed or matches no cell."""


class UnknownRunnerError(SpecmatrixError):
    """A runner profile name that no profile file defines."""


class DetectionError(SpecmatrixError):
    """This machine does not satisfy the runner profile it claims, or detection failed."""


class ReportError(SpecmatrixError):
    """A saved report is corrupt, truncated or of an unknown schema."""


class OutputError(SpecmatrixError):
    """An output file cannot be written where the user asked (unwritable, a special file, a full disk)."""


class VersionError(SpecmatrixError):
    """A library version that is not a PEP 440 version: judging a rule by it would be a guess."""
