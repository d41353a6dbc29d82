"""The option table is the one declaration: the environment names, the plugin's and the command line's flags, the
pyproject keys and the cascade all come from it, and a misspelt pyproject key gets a suggestion."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from matrix.core.errors import ConfigError
from matrix.core.option_table import OPTIONS, OptionKind
from matrix.core.options import CliOverrides, Options, resolve_options

PACKAGE = Path(__file__).resolve().parents[2] / "matrix"
TABLE = PACKAGE / "core" / "option_table.py"


def _spellings() -> set[str]:
    """Every name an option of the table goes by elsewhere: its environment variable and its flags."""
    names = {spec.env for spec in OPTIONS if spec.env} | {spec.plugin_flag for spec in OPTIONS if spec.plugin_flag}
    # --runner and --allowlist are also the names of per-command options with their own help; the global ones are not.
    return names | {spec.flag for spec in OPTIONS if spec.flag and spec.name in ("matrix", "runners", "replace_runners")}


def test_no_option_is_spelled_outside_the_table():
    spellings = _spellings()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == TABLE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in spellings:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value}")
    assert found == []


def test_environment_names_are_derived_from_the_option_names():
    assert {spec.name: spec.env for spec in OPTIONS} == {
        "matrix": "SPECMATRIX_MATRIX",
        "runners": "SPECMATRIX_RUNNERS",
        "runner": "SPECMATRIX_RUNNER",
        "allowlist": "",
        "replace_runners": "SPECMATRIX_REPLACE_RUNNERS",
        "builtin_runners": "SPECMATRIX_BUILTIN_RUNNERS",
        "cache_dir": "SPECMATRIX_CACHE_DIR",
        "no_cache": "SPECMATRIX_NO_CACHE",
    }


def test_the_defaults_of_the_table_are_the_defaults_of_the_options(tmp_path):
    assert resolve_options(cli=CliOverrides(), env={}, cwd=tmp_path) == Options()
    assert {spec.field: spec.default for spec in OPTIONS} == {f: getattr(Options(), f) for f in Options.__dataclass_fields__}


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("runer", "did you mean 'runner'? "),
        ("matrx", "did you mean 'matrix'? "),
        ("replace_runner", "did you mean 'replace_runners'? "),
        ("colour", ""),
    ],
)
def test_a_misspelt_pyproject_key_gets_a_suggestion(tmp_path, key, hint):
    (tmp_path / "pyproject.toml").write_text(f'[tool.specmatrix]\n{key} = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        resolve_options(cli=CliOverrides(), env={}, cwd=tmp_path)
    allowed = "allowed: allowlist, builtin_runners, cache_dir, matrix, no_cache, replace_runners, runner, runners"
    assert str(caught.value) == f"{tmp_path / 'pyproject.toml'}: [tool.specmatrix]: unknown key {key!r} ({hint}{allowed})"


@pytest.mark.parametrize("spec", [s for s in OPTIONS if s.env], ids=lambda s: s.name)
def test_every_option_goes_through_the_same_cascade(tmp_path, spec):
    """pyproject, then the environment, then the command line: single values are replaced, lists add up."""
    samples = {
        OptionKind.PATH: ('"p.toml"', "/env/e.toml", Path("c.toml")),
        OptionKind.PATHS: ('"p.toml"', "/env/e.toml", (Path("c.toml"),)),
        OptionKind.NAME: ('"from-pyproject"', "from-env", "from-cli"),
        OptionKind.NAMES: ('"from-pyproject"', "from-env", ("from-cli",)),
        OptionKind.SWITCH: ("false", "1", None),
    }
    pyproject, env, cli = samples[spec.kind]
    (tmp_path / "pyproject.toml").write_text(f"[tool.specmatrix]\n{spec.name} = {pyproject}\n", encoding="utf-8")
    layers = [
        resolve_options(cli=CliOverrides(), env={}, cwd=tmp_path),
        resolve_options(cli=CliOverrides(), env={spec.env: env}, cwd=tmp_path),
        resolve_options(cli=CliOverrides(**({spec.field: cli} if cli is not None else {})), env={spec.env: env}, cwd=tmp_path),
    ]
    got = [getattr(o, spec.field) for o in layers]
    expected = {
        OptionKind.PATH: [tmp_path / "p.toml", Path("/env/e.toml"), Path("c.toml")],
        OptionKind.PATHS: [
            (tmp_path / "p.toml",),
            (tmp_path / "p.toml", Path("/env/e.toml")),
            (tmp_path / "p.toml", Path("/env/e.toml"), Path("c.toml")),
        ],
        OptionKind.NAME: ["from-pyproject", "from-env", "from-cli"],
        OptionKind.NAMES: [("from-pyproject",), ("from-pyproject", "from-env"), ("from-pyproject", "from-env", "from-cli")],
        OptionKind.SWITCH: [False, True, True],
    }
    assert got == expected[spec.kind]
