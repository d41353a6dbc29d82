"""Every option of the cascade, declared once: its name (the `[tool.specmatrix]` key; the environment variable is
SPECMATRIX_ and the name in capitals), its kind, default, command-line flag, pytest plugin flag and help.

argparse (`matrix.cli`), the pytest plugin's options (`matrix.audit.pytest_options`), the pyproject validation and
the cascade (`matrix.core.options`) all read this table, as cibuildwheel's option reader reads its one list of
options. Imported by the plugin into every pytest run, so it imports only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

ENV_PREFIX = "SPECMATRIX_"


class OptionKind(StrEnum):
    PATH = "path"  # one file; a pyproject value is relative to the pyproject's folder
    PATHS = "paths"  # files, accumulated over the sources; the environment separates them with ":"
    NAME = "name"  # one name
    NAMES = "names"  # names, accumulated (each once); the environment separates them with ","
    SWITCH = "switch"  # true or false; the environment says 1/0, true/false, yes/no, on/off

    @property
    def accumulates(self) -> bool:
        return self in (OptionKind.PATHS, OptionKind.NAMES)


@dataclass(frozen=True, kw_only=True)
class OptionSpec:
    name: str  # the pyproject key and the command line's dest
    field: str  # the attribute of `Options` (and `CliOverrides`)
    kind: OptionKind
    default: object
    help: str
    metavar: str = ""
    flag: str = ""  # the command line's flag; empty: none
    plugin_flag: str = ""  # the pytest plugin's flag; empty: none
    plugin_dest: str = ""  # its dest, where it is not pytest's default for the flag
    plugin_help: str = ""
    plugin_metavar: str = ""  # where pytest's help has always shown another than the command line's
    from_env: bool = True  # False: no environment variable (the allowlist is named per run only)

    @property
    def env(self) -> str:
        """The environment variable, derived from the name ("" when the option has none)."""
        return ENV_PREFIX + self.name.upper() if self.from_env else ""

    @property
    def plugin_attr(self) -> str:
        """Where pytest keeps the plugin flag's value on `config.option`."""
        return self.plugin_dest or self.plugin_flag.removeprefix("--").replace("-", "_")


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        name="matrix",
        field="matrix_path",
        kind=OptionKind.PATH,
        default=None,
        metavar="FILE",
        flag="--matrix",
        help="matrix TOML file (default: [tool.specmatrix] matrix, $SPECMATRIX_MATRIX, else the built-in matrix)",
        plugin_flag="--matrix",
        plugin_dest="matrix_file",
        plugin_metavar="PATH",
        plugin_help="matrix TOML (default: cascade, then the built-in matrix)",
    ),
    OptionSpec(
        name="runners",
        field="runner_files",
        kind=OptionKind.PATHS,
        default=(),
        metavar="FILE",
        flag="--runners",
        help="extra runner-profile TOML file, repeatable (default: [tool.specmatrix] runners, $SPECMATRIX_RUNNERS, else none)",
        plugin_flag="--matrix-runners",
        plugin_help="extra runner-profile TOML (repeatable)",
    ),
    OptionSpec(
        name="runner",
        field="runner",
        kind=OptionKind.NAME,
        default="auto",
        metavar="NAME",
        flag="--runner",
        help="runner profile name, or 'auto' (default: auto, the profile this machine satisfies; "
        "or [tool.specmatrix] runner, $SPECMATRIX_RUNNER)",
        plugin_flag="--matrix-runner",
        plugin_help="runner profile this run claims (checked against the machine), or 'auto'",
    ),
    OptionSpec(
        name="allowlist",
        field="allowlist",
        kind=OptionKind.PATH,
        default=None,
        metavar="FILE",
        flag="--allowlist",
        help="allowlist TOML ([[allow]] test, reason, expires, link) (default: [tool.specmatrix] allowlist, else none)",
        plugin_flag="--matrix-allowlist",
        plugin_help="allowlist TOML for skips outside the matrix on strict runners",
        from_env=False,
    ),
    OptionSpec(
        name="replace_runners",
        field="replace_runners",
        kind=OptionKind.NAMES,
        default=(),
        metavar="NAME",
        flag="--replace-runner",
        help="let a --runners file redefine this built-in profile, repeatable (default: none; reusing a name is an error)",
        plugin_flag="--matrix-replace-runner",
        plugin_help="let a --matrix-runners file redefine this built-in profile (repeatable)",
    ),
    OptionSpec(
        name="builtin_runners",
        field="builtin_runners",
        kind=OptionKind.SWITCH,
        default=True,
        help="False: the runner files' profiles only, none of the 13 built-in sglang ones",
    ),
    OptionSpec(
        name="cache_dir",
        field="cache_dir",
        kind=OptionKind.PATH,
        default=None,
        metavar="DIR",
        flag="--cache-dir",
        help="results cache folder (default: [tool.specmatrix] cache_dir, $SPECMATRIX_CACHE_DIR, "
        "else $XDG_CACHE_HOME/specmatrix or ~/.cache/specmatrix)",
    ),
    OptionSpec(
        name="no_cache",
        field="no_cache",
        kind=OptionKind.SWITCH,
        default=False,
        flag="--no-cache",
        help="read and audit every file again and write no cache (default: [tool.specmatrix] no_cache, "
        "$SPECMATRIX_NO_CACHE=1, else the cache is used)",
    ),
)
BY_NAME: dict[str, OptionSpec] = {spec.name: spec for spec in OPTIONS}


@dataclass(frozen=True, kw_only=True)
class PluginOnlyOption:
    """An option of the pytest plugin that is not part of the cascade (no pyproject key, no environment variable)."""

    flag: str
    help: str
    metavar: str = ""
    switch: bool = False  # `store_true`: takes no value
    repeated: bool = False  # `append`: each use adds one value
    integer: bool = False
    default: object = None


# The pytest plugin's options in the order its help lists them: a cascade option by its name in `OPTIONS`, else
# the option itself. The plugin registers exactly these (`matrix.audit.pytest_options.add_options`), and the CI
# reader (`matrix.schedule.environment.plugins`) reads their arity from here.
PLUGIN_OPTIONS: tuple[str | PluginOnlyOption, ...] = (
    "runner",
    PluginOnlyOption(
        flag="--matrix-report", metavar="PATH", help="write the audit report: JSON at PATH, JUnit XML and Markdown beside it"
    ),
    "allowlist",
    PluginOnlyOption(flag="--matrix-allow", metavar="FILE", help="deprecated spelling of --matrix-allowlist"),
    PluginOnlyOption(
        flag="--matrix-select",
        metavar="S",
        repeated=True,
        default=[],
        help="run only the cells a selector keeps (repeatable; @FILE reads one selector or cell id per line)",
    ),
    PluginOnlyOption(
        flag="--matrix-run-expected-skips",
        switch=True,
        default=False,
        help="run cells the matrix expects to skip instead of skipping them, to check the rules",
    ),
    "matrix",
    "runners",
    "replace_runners",
    PluginOnlyOption(flag="--matrix-shard", metavar="LABEL", help="shard label recorded in the report"),
    PluginOnlyOption(
        flag="--matrix-workers-per-gpu",
        metavar="N",
        integer=True,
        default=1,
        help="xdist workers that may share one GPU (default: 1; more overlap JIT compiles on a cold cache)",
    ),
)


def plugin_flags() -> tuple[tuple[str, bool], ...]:
    """Each flag the pytest plugin registers and whether it takes a value (every cascade option's flag does)."""
    return tuple((BY_NAME[o].plugin_flag, True) if isinstance(o, str) else (o.flag, not o.switch) for o in PLUGIN_OPTIONS)
