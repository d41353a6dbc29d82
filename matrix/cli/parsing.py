"""argparse conventions shared by every command: help that shows defaults, the version line."""

from __future__ import annotations

import argparse
from typing import Any

import matrix

# Flags (store_true), --help and --version have no value worth a default in the help.
_VALUELESS = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction, argparse._VersionAction)


def version_text() -> str:
    """`specmatrix X.Y.Z`: the installed distribution's version, else the package's own (a plain checkout)."""
    from importlib import metadata  # only --version needs it; every other run's start-up stays without

    try:
        version = metadata.version("specmatrix")
    except metadata.PackageNotFoundError:
        version = matrix.__version__
    return f"specmatrix {version}"


class VersionAction(argparse._VersionAction):
    """`--version`, with the version line worked out only when the option is given."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        self.version = version_text()
        super().__call__(parser, namespace, values, option)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Append `(default: X)` to an option whose help does not say it; None, "" and [] are explained in the help."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or isinstance(action, _VALUELESS) or action.default in (None, "", [], argparse.SUPPRESS):
            return text
        if not action.option_strings or action.required:
            return text
        return text + " (default: %(default)s)"
