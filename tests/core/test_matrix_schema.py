"""The JSON Schemas shipped in the package describe the same files the loaders accept, field for field."""

from __future__ import annotations

import copy
import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from matrix.core.errors import ConfigError
from matrix.core.loader import parse_matrix, parse_runners
from matrix.core.model import Op, RuleKind

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "own-matrix"


def schema(kind: str) -> dict[str, Any]:
    return json.loads(resources.files("matrix").joinpath(f"data/{kind}.schema.json").read_text(encoding="utf-8"))


def toml(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


BUILTIN = ROOT / "matrix" / "data"
FILES = [
    ("matrix", BUILTIN / "matrix.toml"),
    ("runners", BUILTIN / "runners.toml"),
    ("matrix", EXAMPLE / "matrix.toml"),
    ("runners", EXAMPLE / "runners.toml"),
]


@pytest.mark.parametrize(("kind", "path"), FILES, ids=[f"{p.parent.name}/{p.name}" for _, p in FILES])
def test_shipped_and_example_files_validate(kind, path):
    jsonschema.Draft202012Validator.check_schema(schema(kind))
    jsonschema.validate(toml(path), schema(kind), cls=jsonschema.Draft202012Validator)


def _plant_matrix(doc: dict[str, Any], where: str, value: Any) -> None:
    match where:
        case "axis-key":
            doc["axis"][0]["valuez"] = value
        case "rule-kind":
            doc["rule"][0]["kind"] = value
        case "operator":
            doc["rule"][0]["require"] = {"gpus": {value: 1}}
        case "cost":
            doc["cost"]["cell_seconds"] = value
        case "coverage":
            doc["coverage"] = {"rowz": value}
        case "top":
            doc[value] = {}


MATRIX_PLANTS = [
    ("axis-key", [1], "valuez"),
    ("rule-kind", "hw", "kind"),
    ("operator", "gte", "gte"),
    ("cost", -1, "cell_seconds"),
    ("coverage", ["model"], "rowz"),
    ("top", "groups", "groups"),
]


@pytest.mark.parametrize(("where", "value", "field"), MATRIX_PLANTS, ids=[p[0] for p in MATRIX_PLANTS])
def test_a_planted_bad_matrix_field_fails_the_schema_and_the_loader_naming_it(where, value, field):
    doc = copy.deepcopy(toml(EXAMPLE / "matrix.toml"))
    parse_matrix(doc, "m.toml")  # the unplanted document loads
    _plant_matrix(doc, where, value)
    errors = list(jsonschema.Draft202012Validator(schema("matrix")).iter_errors(doc))
    assert errors, "the schema accepted the planted field"
    assert any(field in e.message or field in map(str, e.absolute_path) for e in errors), [e.message for e in errors]
    with pytest.raises(ConfigError) as caught:
        parse_matrix(doc, "m.toml")
    assert field in str(caught.value) or repr(value) in str(caught.value)


RUNNER_PLANTS = [
    ("gpus", -1),
    ("skip_policy", "loose"),
    ("gpu", 1),
    ("capability", [8]),
    ("in_ci", "yes"),
]


@pytest.mark.parametrize(("field", "value"), RUNNER_PLANTS, ids=[p[0] for p in RUNNER_PLANTS])
def test_a_planted_bad_runner_field_fails_the_schema_and_the_loader_naming_it(field, value):
    doc = copy.deepcopy(toml(EXAMPLE / "runners.toml"))
    parse_runners(doc, "r.toml")
    doc["runner"]["2-gpu-a100"][field] = value
    errors = list(jsonschema.Draft202012Validator(schema("runners")).iter_errors(doc))
    assert errors, "the schema accepted the planted field"
    assert any(field in e.message or field in map(str, e.absolute_path) for e in errors), [e.message for e in errors]
    with pytest.raises(ConfigError, match=field):
        parse_runners(doc, "r.toml")


def _loader_allows(parse, doc: dict[str, Any], table: dict[str, Any]) -> set[str]:
    """The keys the loader allows in `table` (a part of `doc`), read from its own error for an unknown key."""
    table["zz_unknown"] = 1
    with pytest.raises(ConfigError, match="unknown key 'zz_unknown'") as caught:
        parse(doc, "f.toml")
    del table["zz_unknown"]
    return set(str(caught.value).split("(allowed: ")[1].rstrip(")").split(", "))


def test_the_schema_lists_exactly_the_keys_the_loader_accepts():
    """Drift check: the loader's own list of allowed keys, table by table, equals the schema's properties."""
    props = schema("matrix")["properties"]
    doc = copy.deepcopy(toml(EXAMPLE / "matrix.toml"))
    assert _loader_allows(parse_matrix, doc, doc) == set(props)
    assert _loader_allows(parse_matrix, doc, doc["axis"][0]) == set(props["axis"]["items"]["properties"])
    assert _loader_allows(parse_matrix, doc, doc["rule"][0]) == set(props["rule"]["items"]["properties"])
    assert _loader_allows(parse_matrix, doc, doc["cost"]) == set(props["cost"]["properties"])
    doc["coverage"] = {"rows": ["model"]}
    assert _loader_allows(parse_matrix, doc, doc["coverage"]) == set(props["coverage"]["properties"])
    builtin = copy.deepcopy(toml(BUILTIN / "matrix.toml"))
    assert _loader_allows(parse_matrix, builtin, builtin["impl"][0]) == set(props["impl"]["items"]["properties"])
    assert _loader_allows(parse_matrix, builtin, builtin["page_promotion"][0]) == set(
        props["page_promotion"]["items"]["properties"]
    )
    assert _loader_allows(parse_matrix, builtin, builtin["swa_combination"][0]) == set(
        props["swa_combination"]["items"]["properties"]
    )
    one = builtin["cost"]["backend"]["fa3"]
    assert _loader_allows(parse_matrix, builtin, one) == set(
        props["cost"]["properties"]["backend"]["additionalProperties"]["properties"]
    )
    runners = copy.deepcopy(toml(EXAMPLE / "runners.toml"))
    runner_props = schema("runners")["properties"]["runner"]["additionalProperties"]["properties"]
    assert _loader_allows(parse_runners, runners, runners["runner"]["cpu"]) == set(runner_props)
    ops = props["rule"]["items"]["properties"]["require"]["additionalProperties"]["propertyNames"]["enum"]
    assert ops == [o.value for o in Op]
    assert props["rule"]["items"]["properties"]["kind"]["enum"] == [k.value for k in RuleKind]


def _keys(node: Any) -> set[str]:
    """Every property name anywhere in a schema."""
    found: set[str] = set()
    if isinstance(node, dict):
        found |= set(node.get("properties", {}))
        for child in node.values():
            found |= _keys(child)
    elif isinstance(node, list):
        for child in node:
            found |= _keys(child)
    return found


def test_the_format_page_documents_every_field_and_operator():
    page = (ROOT / "docs" / "matrix-format.md").read_text(encoding="utf-8")
    written = (lambda k: f"`{k}`", lambda k: f"[{k}]", lambda k: f"[{k}.")  # a key, a table, a table of tables
    fields = _keys(schema("matrix")) | _keys(schema("runners"))
    missing = sorted(k for k in fields if not any(form(k) in page for form in written))
    missing += [f"operator {o.value}" for o in Op if f"`{o.value}`" not in page]
    missing += [f"kind {k.value}" for k in RuleKind if f"`{k.value}`" not in page]
    missing += [f"fact {f}" for f in ("sm", "gpus", "impl") if f"| `{f}` |" not in page]
    assert not missing
