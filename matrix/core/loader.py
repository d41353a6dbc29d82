"""Read the matrix and runner-profile TOML files into frozen records, validating everything."""

from __future__ import annotations

import itertools
import math
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from matrix.core.errors import ConfigError
from matrix.core.model import (
    Axis,
    BackendCost,
    Cell,
    Condition,
    CostModel,
    ImplChoice,
    Matrix,
    Op,
    PagePromotion,
    Rule,
    RuleKind,
    RunnerProfile,
    SkipPolicy,
    Value,
    VersionRequirement,
)
from matrix.core.textfiles import read_text
from matrix.core.versions import checked_versions

RUNNER_FACTS = ("sm", "gpus", "impl")
MAX_TOML_BYTES = 16 * 1024 * 1024  # the built-in matrix is 20 KiB
MAX_RUNNER_GPUS = 1024
MAX_CELLS = 1_000_000  # groups expand as a product of their axes' values: refuse before building a huge table
_NUMERIC_OPS = (Op.GT, Op.GE, Op.LT, Op.LE)


def default_matrix_text() -> str:
    return resources.files("matrix").joinpath("data/matrix.toml").read_text(encoding="utf-8")


def default_runners_text() -> str:
    return resources.files("matrix").joinpath("data/runners.toml").read_text(encoding="utf-8")


def read_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML text; a syntax error names the file and line."""
    if len(text) > MAX_TOML_BYTES:
        raise ConfigError(f"{source}: larger than {MAX_TOML_BYTES // (1024 * 1024)} MiB; refusing to read it")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: malformed TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{source}: malformed TOML: nested too deeply") from None


def read_toml_file(path: Path) -> dict[str, Any]:
    return read_toml(read_text(path, ConfigError, limit=MAX_TOML_BYTES), str(path))


def load_matrix(path: Path | None = None) -> Matrix:
    """The matrix at `path`, or the default one shipped inside the package."""
    if path is None:
        return parse_matrix(read_toml(default_matrix_text(), "matrix/data/matrix.toml"), "<default matrix>")
    return parse_matrix(read_toml_file(path), str(path))


def load_runners(extra: Sequence[Path] = (), replace: Sequence[str] = ()) -> dict[str, RunnerProfile]:
    """Built-in runner profiles extended by each file in `extra`.

    A profile whose name is already defined (built in, or by an earlier file) is an error unless `replace`
    names it: silently swapping `4-gpu-b200` for a 2-GPU sm80 profile would change every verdict for it.
    """
    runners = parse_runners(read_toml(default_runners_text(), "matrix/data/runners.toml"), "<default runners>")
    origin = dict.fromkeys(runners, "a built-in profile")
    wanted = set(replace)
    for path in extra:
        for name, profile in parse_runners(read_toml_file(path), str(path)).items():
            if name in runners and name not in wanted:
                raise ConfigError(
                    f"{path}: runner {name!r} is already {origin[name]}; rename it, or pass --replace-runner {name} to replace it"
                )
            runners[name] = profile
            origin[name] = f"defined in {path}"
    unused = sorted(wanted - set(origin))
    if unused:
        raise ConfigError(f"--replace-runner {unused[0]}: no runner profile of that name to replace")
    return runners


# --- helpers ------------------------------------------------------------------


def _expect_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def _value(value: Any, where: str) -> Value:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{where}: expected an integer or a string, got {value!r}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(_str(v, where) for v in value)


def _values(value: Any, where: str) -> tuple[Value, ...]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError(f"{where}: empty list")
    return tuple(_value(v, where) for v in items)


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table, got {value!r}")
    return value


def _list_of_tables(value: Any, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected an array of tables ([[...]])")
    return [_table(v, where) for v in value]


# --- matrix -----------------------------------------------------------------


def parse_matrix(data: Mapping[str, Any], source: str) -> Matrix:
    """Validate a parsed matrix document and expand its groups into cells."""
    _expect_keys(data, {"name", "pins", "axis", "group", "impl", "rule", "cost", "page_promotion"}, source)
    axes = tuple(_parse_axis(t, f"{source}: axis #{i + 1}") for i, t in enumerate(_list_of_tables(data.get("axis", []), source)))
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
    cells = _expand_groups(_list_of_tables(data.get("group", []), source), by_name, axes, source)
    impls = tuple(
        _parse_impl(t, by_name, f"{source}: impl #{i + 1}") for i, t in enumerate(_list_of_tables(data.get("impl", []), source))
    )
    _check_impls(impls, source)
    impl_names = {i.impl for i in impls}
    rules = tuple(
        _parse_rule(t, by_name, impl_names, f"{source}: rule #{i + 1}")
        for i, t in enumerate(_list_of_tables(data.get("rule", []), source))
    )
    ids = [r.id for r in rules]
    for rid in ids:
        if ids.count(rid) > 1:
            raise ConfigError(f"{source}: rule id {rid!r} used twice")
    promotions = tuple(
        _parse_page_promotion(t, by_name, f"{source}: page_promotion #{i + 1}")
        for i, t in enumerate(_list_of_tables(data.get("page_promotion", []), source))
    )
    promo_ids = [p.id for p in promotions]
    for pid in promo_ids:
        if promo_ids.count(pid) > 1:
            raise ConfigError(f"{source}: page_promotion id {pid!r} used twice")
    pins_table = _table(data.get("pins", {}), f"{source}: [pins]")
    pins = checked_versions(
        {lib: _str(v, f"{source}: pins.{lib}") for lib, v in pins_table.items()}, f"{source}: [pins]", ConfigError
    )
    return Matrix(
        name=_str(data.get("name", Path(source).stem), f"{source}: name"),
        axes=axes,
        cells=cells,
        rules=rules,
        impls=impls,
        pins=pins,
        cost=_parse_cost(_table(data.get("cost", {}), f"{source}: [cost]"), by_name, source),
        source_path=source,
        page_promotions=promotions,
    )


def _parse_axis(t: Mapping[str, Any], where: str) -> Axis:
    _expect_keys(t, {"name", "values", "id", "default", "omit_default_in_id"}, where)
    name = _str(t.get("name"), f"{where}: name")
    where = f"{where} ({name})"
    values = _values(t.get("values", []), f"{where}: values")
    if len({type(v) for v in values}) > 1:
        raise ConfigError(f"{where}: values mix integers and strings")
    if len(set(values)) != len(values):
        raise ConfigError(f"{where}: duplicate values")
    id_format = _str(t.get("id", "{}"), f"{where}: id")
    if id_format.count("{}") != 1 or "-" in id_format:
        raise ConfigError(f"{where}: id must contain '{{}}' exactly once and no '-', got {id_format!r}")
    for v in values:
        if "-" in str(v):
            raise ConfigError(f"{where}: value {v!r} contains '-', which separates id parts")
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
        gname = _str(g.get("name"), f"{source}: group #{i + 1}: name")
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
                vals = _values(g[axis.name], f"{where}: {axis.name}")
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
    _expect_keys(t, {"backend", "sm", "impl", "source"}, where)
    backend = _str(t.get("backend"), f"{where}: backend")
    if "backend" in axes and backend not in axes["backend"].values:
        raise ConfigError(f"{where}: unknown backend {backend!r}")
    sms = _values(t.get("sm", []), f"{where}: sm")
    if not all(isinstance(s, int) for s in sms):
        raise ConfigError(f"{where}: sm must be integers such as 90 or 100")
    return ImplChoice(
        backend=backend,
        sms=tuple(int(s) for s in sms),
        impl=_str(t.get("impl"), f"{where}: impl"),
        source=_str(t.get("source"), f"{where}: source"),
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
    for subject, ops in _table(table, where).items():
        sw = f"{where}.{subject}"
        if subject not in axes and subject not in RUNNER_FACTS:
            raise ConfigError(
                f"{sw}: no axis or runner fact named {subject!r} (axes: {', '.join(axes)}; facts: {', '.join(RUNNER_FACTS)})"
            )
        ops_table = _table(ops, sw)
        if not ops_table:
            raise ConfigError(f"{sw}: empty condition")
        for op_name, operand in ops_table.items():
            try:
                op = Op(op_name)
            except ValueError:
                raise ConfigError(f"{sw}: unknown operator {op_name!r} (use {', '.join(o.value for o in Op)})") from None
            values = _values(operand, f"{sw}.{op_name}")
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
    _expect_keys(t, {"id", "kind", "when", "require", "versions", "reason", "source"}, where)
    rid = _str(t.get("id"), f"{where}: id")
    where = f"{where} ({rid})"
    try:
        kind = RuleKind(_str(t.get("kind"), f"{where}: kind"))
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
        reason=_str(t.get("reason"), f"{where}: reason"),
        source=_str(t.get("source"), f"{where}: source"),
    )


def _parse_versions(table: Any, where: str) -> tuple[VersionRequirement, ...]:
    versions = []
    for lib, spec in _table(table, f"{where}: versions").items():
        spec_text = _str(spec, f"{where}: versions.{lib}")
        try:
            SpecifierSet(spec_text)
        except InvalidSpecifier:
            raise ConfigError(f"{where}: versions.{lib}: invalid version specifier {spec_text!r}") from None
        versions.append(VersionRequirement(library=lib, specifier=spec_text))
    return tuple(versions)


def _parse_page_promotion(t: Mapping[str, Any], axes: Mapping[str, Axis], where: str) -> PagePromotion:
    _expect_keys(t, {"id", "role", "backend", "accepted", "promote_to", "versions", "reason", "source"}, where)
    pid = _str(t.get("id"), f"{where}: id")
    where = f"{where} ({pid})"
    for axis in ("role", "backend"):
        if axis not in axes:
            raise ConfigError(f"{where}: needs a {axis!r} axis in the matrix")
        value = _str(t.get(axis), f"{where}: {axis}")
        if value not in axes[axis].values:
            raise ConfigError(f"{where}: unknown {axis} {value!r} (allowed: {list(axes[axis].values)})")
    accepted = _values(t.get("accepted", []), f"{where}: accepted")
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
        reason=_str(t.get("reason"), f"{where}: reason"),
        source=_str(t.get("source"), f"{where}: source"),
    )


def _parse_cost(t: Mapping[str, Any], axes: Mapping[str, Axis], source: str) -> CostModel:
    _expect_keys(t, {"shard_seconds", "backend"}, f"{source}: [cost]")
    backends: dict[str, BackendCost] = {}
    for name, raw in _table(t.get("backend", {}), f"{source}: cost.backend").items():
        where = f"{source}: cost.backend.{name}"
        bt = _table(raw, where)
        _expect_keys(bt, {"cell_seconds", "compile_seconds", "config_axes"}, where)
        config_axes = _strings(bt.get("config_axes", []), f"{where}: config_axes")
        for a in config_axes:
            if a not in axes:
                raise ConfigError(f"{where}: config_axes names unknown axis {a!r}")
        backends[name] = BackendCost(
            cell_seconds=_number(bt.get("cell_seconds", 1.0), f"{where}: cell_seconds"),
            compile_seconds=_number(bt.get("compile_seconds", 0.0), f"{where}: compile_seconds"),
            config_axes=config_axes,
        )
    return CostModel(shard_seconds=_number(t.get("shard_seconds", 60.0), f"{source}: cost.shard_seconds"), backends=backends)


def _number(value: Any, where: str) -> float:
    # TOML has nan and inf; either would poison every estimate and the shard count derived from it.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: expected a finite non-negative number, got {value!r}")
    return float(value)


# --- runners ------------------------------------------------------------------


def parse_runners(data: Mapping[str, Any], source: str) -> dict[str, RunnerProfile]:
    """Validate a runner-profile document (`[runner.NAME]` tables)."""
    _expect_keys(data, {"runner"}, source)
    out: dict[str, RunnerProfile] = {}
    for name, raw in _table(data.get("runner", {}), f"{source}: [runner]").items():
        where = f"{source}: runner {name!r}"
        t = _table(raw, where)
        _expect_keys(t, {"gpus", "capability", "device_name", "labels", "runner_configs", "skip_policy", "description"}, where)
        gpus = t.get("gpus")
        if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= MAX_RUNNER_GPUS:
            raise ConfigError(f"{where}: gpus must be a non-negative integer (at most {MAX_RUNNER_GPUS}), got {gpus!r}")
        cap = t.get("capability")
        capability: tuple[int, int] | None = None
        if cap is not None:
            if not (isinstance(cap, list) and len(cap) == 2 and all(isinstance(c, int) and not isinstance(c, bool) for c in cap)):
                raise ConfigError(f"{where}: capability must be [major, minor], got {cap!r}")
            capability = (cap[0], cap[1])
        if gpus > 0 and capability is None:
            raise ConfigError(f"{where}: a GPU runner needs a capability")
        if gpus == 0 and capability is not None:
            raise ConfigError(f"{where}: capability given but gpus = 0")
        try:
            policy = SkipPolicy(t.get("skip_policy", "lenient"))
        except ValueError:
            raise ConfigError(f"{where}: skip_policy must be 'lenient' or 'strict'") from None
        device_name = t.get("device_name")
        if device_name is not None:
            device_name = _str(device_name, f"{where}: device_name")
        description = t.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f"{where}: description: expected a string, got {description!r}")
        out[name] = RunnerProfile(
            name=name,
            gpus=gpus,
            capability=capability,
            device_name=device_name,
            labels=_strings(t.get("labels", [name]), f"{where}: labels"),
            runner_configs=_strings(t.get("runner_configs", []), f"{where}: runner_configs"),
            skip_policy=policy,
            description=description,
        )
    if not out:
        raise ConfigError(f"{source}: no [runner.NAME] tables")
    return out
