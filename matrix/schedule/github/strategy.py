"""A job's `strategy.matrix` expanded into its combinations by GitHub's rules; pure.

GitHub's rules (docs.github.com, "Workflow syntax for GitHub Actions", `jobs.<job_id>.strategy.matrix.include` and
`.exclude`; "Running variations of jobs in a workflow"):
- the combinations are the product of the axes; `exclude` runs first, and a partial match excludes;
- each `include` entry is added to every combination where none of its pairs overwrites an original axis value
  (values added by an earlier `include` may be overwritten); an entry that fits no combination becomes a new one;
- a matrix left with no combination makes no job.

A matrix given by an expression (`${{ fromJSON(...) }}`) is checked for the same shape a literal one is; one of the
wrong shape, or one whose axes are known only at run time, is said so instead of guessed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from matrix.schedule.github.expressions import Unknown, expand

MAX_MATRIX_JOBS = 256  # GitHub's limit per matrix
MAX_MATRIX_PRODUCT = 4096  # before exclude
MAX_MATRIX_LIST = 256  # include / exclude entries

Resolver = Callable[[tuple[str, ...]], Any]
_SPECIAL = ("include", "exclude")


@dataclass(frozen=True, kw_only=True)
class Expansion:
    """The combinations of one job's matrix (`[{}]` for a job without one), or why there are none: `empty` when
    GitHub makes no job, `unread` when the matrix cannot be read; `notes` are the assumptions made."""

    combos: tuple[dict[str, Any], ...] = ()
    empty: str = ""
    unread: str = ""
    notes: tuple[str, ...] = ()


NO_MATRIX = Expansion(combos=({},))


def expand_matrix(matrix: Any, resolve: Resolver) -> Expansion:
    """The combinations of `matrix` (the `strategy.matrix` value as written) by GitHub's rules."""
    notes: list[str] = []
    if isinstance(matrix, str):
        value, _ = expand(matrix, resolve)
        if isinstance(value, Unknown) or not _is_mapping(value):
            if isinstance(value, Unknown) or value is None or isinstance(value, str):
                shown = " ".join(matrix.split())[:80]
                return Expansion(combos=({},), notes=(f"strategy.matrix {shown} is known only at run time: assumed one job",))
            return Expansion(unread=f"strategy.matrix {matrix.strip()[:60]} is a {type(value).__name__}, not a mapping")
        matrix = value
    if matrix is None:
        return NO_MATRIX
    if not _is_mapping(matrix):
        return Expansion(unread=f"strategy.matrix is a {type(matrix).__name__}, not a mapping")
    axes: dict[str, list[Any]] = {}
    for key, raw in matrix.items():
        if key in _SPECIAL:
            continue
        values = raw
        if isinstance(raw, str):
            value, _ = expand(raw, resolve)
            if isinstance(value, list):
                values = value
            elif isinstance(value, Unknown) or value is None or isinstance(value, str):
                notes.append(f"matrix.{key} is {' '.join(raw.split())[:80]}, known only at run time: assumed one job")
                values = [Unknown(text=f"matrix.{key}")]
            else:
                return Expansion(unread=f"strategy.matrix.{key} is a {type(value).__name__}, not a list")
        if not isinstance(values, list):
            return Expansion(unread=f"strategy.matrix.{key} is a {type(values).__name__}, not a list")
        axes[str(key)] = values
    if math.prod(len(v) for v in axes.values()) > MAX_MATRIX_PRODUCT:
        return Expansion(unread=f"strategy.matrix has more than {MAX_MATRIX_PRODUCT} combinations")
    excludes = _entries(matrix.get("exclude"), resolve, "exclude", notes)
    includes = _entries(matrix.get("include"), resolve, "include", notes)
    for found in (excludes, includes):
        if isinstance(found, str):
            return Expansion(unread=found)
    assert not isinstance(excludes, str) and not isinstance(includes, str)
    combos = [dict(zip(axes, c, strict=True)) for c in itertools.product(*axes.values())] if axes else []
    if excludes:
        combos = [c for c in combos if not any(all(c.get(k) == v for k, v in e.items()) for e in excludes)]
    # The axis values an include may not overwrite; a combination an include made takes no later include (GitHub's
    # example: `{fruit: banana}` then `{fruit: banana, animal: cat}` are two jobs).
    originals: list[dict[str, Any] | None] = [dict(c) for c in combos]
    for extra in includes:
        fitting = [
            i
            for i, original in enumerate(originals)
            if original is not None and all(original[k] == v for k, v in extra.items() if k in original)
        ]
        for i in fitting:
            combos[i].update(extra)
        if not fitting:
            combos.append(dict(extra))
            originals.append(None)
    if len(combos) > MAX_MATRIX_JOBS:
        return Expansion(unread=f"strategy.matrix makes {len(combos)} jobs; GitHub allows {MAX_MATRIX_JOBS}")
    if not combos:
        if not axes and not includes:
            return Expansion(combos=({},), notes=tuple(notes))  # `matrix: {}`: GitHub refuses it; read as no matrix
        return Expansion(empty="strategy.matrix has no combination (every one excluded, or an axis with no value)")
    return Expansion(combos=tuple(combos), notes=tuple(dict.fromkeys(notes)))


def _entries(raw: Any, resolve: Resolver, key: str, notes: list[str]) -> list[Mapping[str, Any]] | str:
    """The include or exclude entries, or why they cannot be read (a text)."""
    if raw is None:
        return []
    if isinstance(raw, str):
        value, _ = expand(raw, resolve)
        if isinstance(value, Unknown) or value is None or isinstance(value, str):
            notes.append(f"strategy.matrix.{key} is known only at run time: left out")
            return []
        raw = value
    if not isinstance(raw, list) or not all(_is_mapping(v) for v in raw):
        return f"strategy.matrix.{key} is not a list of mappings"
    if len(raw) > MAX_MATRIX_LIST:
        return f"strategy.matrix.{key} has {len(raw)} entries; GitHub runs at most {MAX_MATRIX_JOBS} jobs a matrix"
    return raw


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)
