"""Read the matrix TOML into frozen records, validating everything (runner profiles: `runner_files`)."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.model import (
    DEFAULT_CELL_COST,
    Axis,
    BackendCost,
    Cell,
    Condition,
    CostModel,
    CoverageLayout,
    ImplChoice,
    Matrix,
    Op,
    PagePromotion,
    Rule,
    RuleKind,
    Value,
    VersionRequirement,
)
from matrix.core.runner_files import default_runners_text, load_runners, parse_runners
from matrix.core.swa_table import parse_swa_combinations
from matrix.core.textfiles import package_text
from matrix.core.tomlfields import (
    expect_keys,
    number_field,
    read_toml,
    read_toml_file,
    str_field,
    strings_field,
    table_field,
    tables_field,
    values_field,
)

RUNNER_FACTS = ("sm", "gpus", "impl")
_ID_TEXT = re.compile(r"[A-Za-z0-9_.+]+")
MAX_CELLS = 1_000_000  # groups expand as a product of their axes' values: refuse before building a huge table
_NUMERIC_OPS = (Op.GT, Op.GE, Op.LT, Op.LE)


def default_matrix_text() -> str:
    return package_text("data/matrix.toml")


def load_matrix(path: Path | None = None) -> Matrix:
    """The matrix at `path`, or the default one shipped inside the package."""
    if path is None:
        return parse_matrix(read_toml(default_matrix_text(), "matrix/data/matrix.toml"), "<default matrix>")
    return parse_matrix(read_toml_file(path), str(path))


# --- matrix -----------------------------------------------------------------


def parse_matrix(data: Mapping[str, Any], source: str) -> Matrix:
    """Validate a parsed matrix document and expand its groups into cells."""
    expect_keys(
        data,
        {"name", "pins", "axis", "group", "impl", "rule", "cost", "page_promotion", "swa_combination", "coverage", "tested"},
        source,
    )
    axes = tuple(_parse_axis(t, f"{source}: axis #{i + 1}") for i, t in enumerate(tables_field(data.get("axis", []), source)))
    if not axes:
        raise ConfigError(f"{source}: no [[axis]] defined")
    names = [a.name for a in axes]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ConfigError(f"{source}: axis {sorted(dupes)[0]!r} defined twice")
    clash = set(names) & set(RUNNER_FACTS)
    if clash:
        raise ConfigError(f"{source}: axis name {sorted(clash)[0]!r} is reserved for a runner fact")
    by_name = {a.name: a for a in axes}
    cells = _expand_groups(tables_field(data.get("group", []), source), by_name, axes, source)
    impls = tuple(
        _parse_impl(t, by_name, f"{source}: impl #{i + 1}") for i, t in enumerate(tables_field(data.get("impl", []), source))
    )
    _check_impls(impls, source)
    impl_names = {i.impl for i in impls}
    rules = tuple(
        _parse_rule(t, by_name, impl_names, f"{source}: rule #{i + 1}")
        for i, t in enumerate(tables_field(data.get("rule", []), source))
    )
    ids = [r.id for r in rules]
    for rid in ids:
        if ids.count(rid) > 1:
            raise ConfigError(f"{source}: rule id {rid!r} used twice")
    promotions = tuple(
        _parse_page_promotion(t, by_name, f"{source}: page_promotion #{i + 1}")
        for i, t in enumerate(tables_field(data.get("page_promotion", []), source))
    )
    promo_ids = [p.id for p in promotions]
    for pid in promo_ids:
        if promo_ids.count(pid) > 1:
            raise ConfigError(f"{source}: page_promotion id {pid!r} used twice")
    pins_table = table_field(data.get("pins", {}), f"{source}: [pins]")
    from matrix.core.versions import checked_versions  # packaging: see _parse_versions

    pins = checked_versions(
        {lib: str_field(v, f"{source}: pins.{lib}") for lib, v in pins_table.items()}, f"{source}: [pins]", ConfigError
    )
    return Matrix(
        name=str_field(data.get("name", Path(source).stem), f"{source}: name"),
        axes=axes,
        cells=cells,
        rules=rules,
        impls=impls,
        pins=pins,
        cost=_parse_cost(table_field(data.get("cost", {}), f"{source}: [cost]"), by_name, source),
        source_path=source,
        page_promotions=promotions,
        swa_combinations=parse_swa_combinations(data.get("swa_combination", []), by_name, source),
        coverage=_parse_coverage(data.get("coverage"), axes, source),
    )


def _parse_axis(t: Mapping[str, Any], where: str) -> Axis:
    expect_keys(t, {"name", "values", "id", "default", "omit_default_in_id"}, where)
    name = str_field(t.get("name"), f"{where}: name")
    where = f"{where} ({name})"
    values = values_field(t.get("values", []), f"{where}: values")
    if len({type(v) for v in values}) > 1:
        raise ConfigError(f"{where}: values mix integers and strings")
    if len(set(values)) != len(values):
        raise ConfigError(f"{where}: duplicate values")
    id_format = str_field(t.get("id", "{}"), f"{where}: id")
    if id_format.count("{}") != 1 or "-" in id_format:
        raise ConfigError(f"{where}: id must contain '{{}}' exactly once and no '-', got {id_format!r}")
    if not _ID_TEXT.fullmatch(id_format.replace("{}", "x")):
        raise ConfigError(f"{where}: id {id_format!r} may only use letters, digits, '_', '.' and '+' around '{{}}'")
    for v in values:
        if "-" in str(v):
            raise ConfigError(f"{where}: value {v!r} contains '-', which separates id parts")
        if not _ID_TEXT.fullmatch(str(v)):
            # Cell ids are selector words, shard selectors, pytest ids and file names: a ',', a brace, a bracket or
            # a space would change what a selector picks, so only plain id characters are accepted.
            raise ConfigError(
                f"{where}: value {v!r} may only contain letters, digits, '_', '.' and '+' (it becomes part of cell ids "
                "that selectors, shard plans and pytest ids match)"
            )
    default = t.get("default")
    if default is not None and default not in values:
        raise ConfigError(f"{where}: default {default!r} is not one of its values")
    omit = bool(t.get("omit_default_in_id", False))
    if omit and default is None:
        raise ConfigError(f"{where}: omit_default_in_id needs a default")
    return Axis(name=name, values=values, id_format=id_format, default=default, omit_default_in_id=omit)


def _expand_groups(
    groups: list[Mapping[str, Any]], axes_by_name: Mapping[str, Axis], axes: tuple[Axis, ...], source: str
) -> tuple[Cell, ...]:
    if not groups:
        raise ConfigError(f"{source}: no [[group]] defined, so the matrix has no cells")
    cells: dict[str, Cell] = {}
    seen_groups: set[str] = set()
    for i, g in enumerate(groups):
        gname = str_field(g.get("name"), f"{source}: group #{i + 1}: name")
        where = f"{source}: group {gname!r}"
        if gname in seen_groups:
            raise ConfigError(f"{where}: defined twice")
        seen_groups.add(gname)
        choices: list[tuple[Value, ...]] = []
        for key in g:
            if key not in ("name", "description") and key not in axes_by_name:
                raise ConfigError(f"{where}: unknown axis {key!r} (axes: {', '.join(axes_by_name)})")
        for axis in axes:
            if axis.name in g:
                vals = values_field(g[axis.name], f"{where}: {axis.name}")
                for v in vals:
                    if v not in axis.values:
                        raise ConfigError(f"{where}: unknown {axis.name} value {v!r} (allowed: {list(axis.values)})")
                choices.append(vals)
            elif axis.default is not None:
                choices.append((axis.default,))
            else:
                raise ConfigError(f"{where}: does not set axis {axis.name!r}, which has no default")
        if math.prod(len(c) for c in choices) + len(cells) > MAX_CELLS:
            raise ConfigError(f"{where}: expands to more than {MAX_CELLS:,} cells")
        for combo in itertools.product(*choices):
            parts = [p for a, v in zip(axes, combo, strict=True) if (p := a.id_part(v)) is not None]
            cell_id = "-".join(parts)
            if cell_id not in cells:
                cells[cell_id] = Cell(
                    id=cell_id, group=gname, values=tuple((a.name, v) for a, v in zip(axes, combo, strict=True))
                )
    return tuple(cells.values())


def _parse_impl(t: Mapping[str, Any], axes: Mapping[str, Axis], where: str) -> ImplChoice:
    expect_keys(t, {"backend", "sm", "impl", "source"}, where)
    backend = str_field(t.get("backend"), f"{where}: backend")
    if "backend" in axes and backend not in axes["backend"].values:
        raise ConfigError(f"{where}: unknown backend {backend!r}")
    sms = values_field(t.get("sm", []), f"{where}: sm")
    if not all(isinstance(s, int) for s in sms):
        raise ConfigError(f"{where}: sm must be integers such as 90 or 100")
    return ImplChoice(
        backend=backend,
        sms=tuple(int(s) for s in sms),
        impl=str_field(t.get("impl"), f"{where}: impl"),
        source=str_field(t.get("source"), f"{where}: source"),
    )


def _check_impls(impls: tuple[ImplChoice, ...], source: str) -> None:
    owner: dict[tuple[str, int], str] = {}
    for choice in impls:
        for sm in choice.sms:
            key = (choice.backend, sm)
            if key in owner and owner[key] != choice.impl:
                raise ConfigError(
                    f"{source}: contradictory impl entries: {choice.backend} on sm{sm} is both {owner[key]!r} and {choice.impl!r}"
                )
            owner[key] = choice.impl


def _parse_conditions(table: Any, axes: Mapping[str, Axis], impl_names: set[str], where: str) -> tuple[Condition, ...]:
    conditions: list[Condition] = []
    for subject, ops in table_field(table, where).items():
        sw = f"{where}.{subject}"
        if subject not in axes and subject not in RUNNER_FACTS:
            raise ConfigError(
                f"{sw}: no axis or runner fact named {subject!r} (axes: {', '.join(axes)}; facts: {', '.join(RUNNER_FACTS)})"
            )
        ops_table = table_field(ops, sw)
        if not ops_table:
            raise ConfigError(f"{sw}: empty condition")
        for op_name, operand in ops_table.items():
            try:
                op = Op(op_name)
            except ValueError:
                raise ConfigError(f"{sw}: unknown operator {op_name!r} (use {', '.join(o.value for o in Op)})") from None
            values = values_field(operand, f"{sw}.{op_name}")
            if op in _NUMERIC_OPS and not all(isinstance(v, int) for v in values):
                raise ConfigError(f"{sw}.{op_name}: needs an integer")
            if op in _NUMERIC_OPS and len(values) != 1:
                raise ConfigError(f"{sw}.{op_name}: needs one integer")
            if subject in axes:
                for v in values:
                    if v not in axes[subject].values and op in (Op.IN, Op.NOT_IN, Op.EQ, Op.NE):
                        raise ConfigError(
                            f"{sw}.{op_name}: unknown {subject} value {v!r} (allowed: {list(axes[subject].values)})"
                        )
            if subject == "impl" and op in (Op.IN, Op.EQ):
                unknown = [v for v in values if v not in impl_names]
                if unknown:
                    raise ConfigError(f"{sw}.{op_name}: no [[impl]] is named {unknown[0]!r}")
            conditions.append(Condition(subject=subject, op=op, operand=values))
    _check_satisfiable(conditions, axes, where)
    return tuple(conditions)


def _check_satisfiable(conditions: list[Condition], axes: Mapping[str, Axis], where: str) -> None:
    from matrix.core.conditions import holds  # local: conditions imports model only

    for subject in {c.subject for c in conditions}:
        mine = [c for c in conditions if c.subject == subject]
        if subject in axes:
            domain: Sequence[Value] = axes[subject].values
        elif subject == "impl":
            continue
        else:
            domain = range(0, 1000)
        if not any(all(holds(c, v) for c in mine) for v in domain):
            raise ConfigError(f"{where}.{subject}: contradictory conditions, no value satisfies them all")


def _parse_rule(t: Mapping[str, Any], axes: Mapping[str, Axis], impl_names: set[str], where: str) -> Rule:
    expect_keys(t, {"id", "kind", "when", "require", "versions", "reason", "source"}, where)
    rid = str_field(t.get("id"), f"{where}: id")
    where = f"{where} ({rid})"
    try:
        kind = RuleKind(str_field(t.get("kind"), f"{where}: kind"))
    except ValueError:
        raise ConfigError(f"{where}: unknown kind {t.get('kind')!r} (use {', '.join(k.value for k in RuleKind)})") from None
    versions = _parse_versions(t.get("versions", {}), where)
    require = _parse_conditions(t.get("require", {}), axes, impl_names, f"{where}: require")
    if not require and not versions:
        raise ConfigError(f"{where}: has neither `require` nor `versions`, so it can never skip anything")
    return Rule(
        id=rid,
        kind=kind,
        when=_parse_conditions(t.get("when", {}), axes, impl_names, f"{where}: when"),
        require=require,
        versions=tuple(versions),
        reason=str_field(t.get("reason"), f"{where}: reason"),
        source=str_field(t.get("source"), f"{where}: source"),
    )


def _parse_versions(table: Any, where: str) -> tuple[VersionRequirement, ...]:
    # packaging takes about 7 ms to import; only a matrix file needs it, and `specmatrix guards` reads none (it
    # imports this module for the runner profiles and the TOML readers).
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    versions = []
    for lib, spec in table_field(table, f"{where}: versions").items():
        spec_text = str_field(spec, f"{where}: versions.{lib}")
        try:
            SpecifierSet(spec_text)
        except InvalidSpecifier:
            raise ConfigError(f"{where}: versions.{lib}: invalid version specifier {spec_text!r}") from None
        versions.append(VersionRequirement(library=lib, specifier=spec_text))
    return tuple(versions)


def _parse_page_promotion(t: Mapping[str, Any], axes: Mapping[str, Axis], where: str) -> PagePromotion:
    expect_keys(t, {"id", "role", "backend", "accepted", "promote_to", "versions", "reason", "source"}, where)
    pid = str_field(t.get("id"), f"{where}: id")
    where = f"{where} ({pid})"
    for axis in ("role", "backend"):
        if axis not in axes:
            raise ConfigError(f"{where}: needs a {axis!r} axis in the matrix")
        value = str_field(t.get(axis), f"{where}: {axis}")
        if value not in axes[axis].values:
            raise ConfigError(f"{where}: unknown {axis} {value!r} (allowed: {list(axes[axis].values)})")
    accepted = values_field(t.get("accepted", []), f"{where}: accepted")
    promote_to = t.get("promote_to")
    sizes = [*accepted, promote_to]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
        raise ConfigError(f"{where}: accepted and promote_to must be positive integers")
    if promote_to not in accepted:
        raise ConfigError(f"{where}: promote_to {promote_to} is not one of the accepted page sizes {list(accepted)}")
    return PagePromotion(
        id=pid,
        role=str(t["role"]),
        backend=str(t["backend"]),
        accepted=tuple(int(v) for v in accepted),
        promote_to=int(promote_to),
        versions=_parse_versions(t.get("versions", {}), where),
        reason=str_field(t.get("reason"), f"{where}: reason"),
        source=str_field(t.get("source"), f"{where}: source"),
    )


_COST_FIELDS = {"cell_seconds", "compile_seconds", "config_axes"}


def _backend_cost(bt: Mapping[str, Any], axes: Mapping[str, Axis], where: str, fallback: BackendCost) -> BackendCost:
    config_axes = strings_field(bt.get("config_axes", list(fallback.config_axes)), f"{where}: config_axes")
    for a in config_axes:
        if a not in axes:
            raise ConfigError(f"{where}: config_axes names unknown axis {a!r}")
    return BackendCost(
        cell_seconds=number_field(bt.get("cell_seconds", fallback.cell_seconds), f"{where}: cell_seconds"),
        compile_seconds=number_field(bt.get("compile_seconds", fallback.compile_seconds), f"{where}: compile_seconds"),
        config_axes=config_axes,
    )


def _parse_cost(t: Mapping[str, Any], axes: Mapping[str, Axis], source: str) -> CostModel:
    """`[cost]` is optional: its own cell_seconds / compile_seconds / config_axes cost every cell; `[cost.backend.B]`
    tables (a matrix with a `backend` axis) override them per backend."""
    expect_keys(t, {"shard_seconds", "backend", *_COST_FIELDS}, f"{source}: [cost]")
    default = _backend_cost(t, axes, f"{source}: [cost]", DEFAULT_CELL_COST)
    backends: dict[str, BackendCost] = {}
    tables = table_field(t.get("backend", {}), f"{source}: cost.backend")
    if tables and "backend" not in axes:
        raise ConfigError(f"{source}: [cost.backend.*] tables need an axis named 'backend'; use [cost] cell_seconds instead")
    for name, raw in tables.items():
        where = f"{source}: cost.backend.{name}"
        bt = table_field(raw, where)
        expect_keys(bt, _COST_FIELDS, where)
        if name not in axes["backend"].values:
            raise ConfigError(f"{where}: unknown backend {name!r} (allowed: {list(axes['backend'].values)})")
        backends[name] = _backend_cost(bt, axes, where, default)
    return CostModel(
        shard_seconds=number_field(t.get("shard_seconds", 60.0), f"{source}: cost.shard_seconds"),
        backends=backends,
        default=default,
    )


def _parse_coverage(raw: Any, axes: tuple[Axis, ...], source: str) -> CoverageLayout | None:
    """`[coverage] rows = [...]`, `columns = [...]`: axis names; absent, `Matrix.layout` derives them."""
    if raw is None:
        return None
    where = f"{source}: [coverage]"
    t = table_field(raw, where)
    expect_keys(t, {"rows", "columns"}, where)
    names = [a.name for a in axes]
    rows = strings_field(t.get("rows", names[:1]), f"{where}: rows")
    columns = strings_field(t.get("columns", []), f"{where}: columns")
    if not rows:
        raise ConfigError(f"{where}: rows: name at least one axis")
    for key, picked in (("rows", rows), ("columns", columns)):
        for name in picked:
            if name not in names:
                raise ConfigError(f"{where}: {key}: no axis named {name!r} (axes: {', '.join(names)})")
    both = sorted(set(rows) & set(columns))
    if both or len(set(rows)) != len(rows) or len(set(columns)) != len(columns):
        raise ConfigError(
            f"{where}: axis {(both or [n for n in [*rows, *columns] if [*rows, *columns].count(n) > 1])[0]!r} named twice"
        )
    return CoverageLayout(rows=rows, columns=columns)


__all__ = [
    "default_matrix_text",
    "default_runners_text",
    "load_matrix",
    "load_runners",
    "parse_matrix",
    "parse_runners",
    "read_toml",
    "read_toml_file",
]
