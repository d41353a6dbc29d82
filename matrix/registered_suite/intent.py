"""What the matrix says of the backend a test tests, on a runner: runs there, or cannot, with the rule's trail.

The answer comes from `matrix.core.expect.expected` (the one function that decides), asked of the matrix's cells
of that backend: the backend runs on a runner when one of them must RUN there. The matrix file is read only when
an audit first asks (most trees have no skip to judge), once per process, and its digest keys the results cache.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import package_text, read_text
from matrix.core.tomlfields import MAX_TOML_BYTES, read_toml, read_toml_file
from matrix.registered_suite.tested import TABLE, Subject, SubjectTable, parse_overrides, parse_tested, subject_of

if TYPE_CHECKING:  # the matrix records load only when a skip is judged
    from matrix.core.model import Matrix

DEFAULT_SOURCE = "matrix/data/matrix.toml"


@dataclass(frozen=True, kw_only=True)
class BackendVerdict:
    """Whether `backend` runs on `runner` by the matrix, and why in one line (rule, reason, source)."""

    backend: str
    runner: str
    runs: bool
    trail: str


@dataclass(frozen=True, kw_only=True)
class _Loaded:
    matrix: Matrix
    tested: SubjectTable
    versions: dict[str, str]


def _digest(*texts: str) -> str:
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode() + b"\0")
    return h.hexdigest()[:16]


@dataclass(kw_only=True)
class MatrixIntent:
    """The matrix file (None: the built-in one) and an optional override file, read on first use."""

    matrix_path: str | None = None
    overrides_path: str | None = None
    key: str = ""
    _raw: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    _tested: SubjectTable | None = field(default=None, repr=False, compare=False)
    _loaded: _Loaded | None = field(default=None, repr=False, compare=False)
    _verdicts: dict[tuple[str, str], BackendVerdict] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_paths(cls, matrix_path: Path | None = None, overrides_path: Path | None = None) -> MatrixIntent:
        """Its cache key is the digest of both files' text (read now: small, and they decide findings)."""
        from matrix.core.errors import ConfigError

        text = (
            package_text("data/matrix.toml") if matrix_path is None else read_text(matrix_path, ConfigError, limit=MAX_TOML_BYTES)
        )
        extra = read_text(overrides_path, ConfigError, limit=MAX_TOML_BYTES) if overrides_path is not None else ""
        return cls(
            matrix_path=str(matrix_path) if matrix_path is not None else None,
            overrides_path=str(overrides_path) if overrides_path is not None else None,
            key=_digest(text, extra),
        )

    def _data(self) -> dict[str, Any]:
        if self._raw is None:
            source = self.matrix_path or DEFAULT_SOURCE
            self._raw = (
                read_toml(package_text("data/matrix.toml"), source) if self.matrix_path is None else read_toml_file(Path(source))
            )
        return self._raw

    def tested(self) -> SubjectTable:
        """What each backend's tests look like: read from the file's raw tables, without building the matrix (most
        skips judged name no backend of it, and need no verdict)."""
        if self._tested is None:
            source = self.matrix_path or DEFAULT_SOURCE
            data = self._data()
            axes = data.get("axis", [])
            backend = [a for a in axes if isinstance(a, dict) and a.get("name") == "backend"] if isinstance(axes, list) else []
            values = backend[0].get("values", []) if backend else []
            backends = tuple(str(v) for v in values) if isinstance(values, list) else ()
            tested = parse_tested(data.get(TABLE), backends, source)
            if self.overrides_path is not None:
                overrides = parse_overrides(read_toml_file(Path(self.overrides_path)), backends, self.overrides_path)
                tested = SubjectTable(signs=tested.signs, overrides=overrides, override_source=self.overrides_path)
            self._tested = tested
        return self._tested

    def load(self) -> _Loaded:
        """The matrix itself (validated whole), for a verdict."""
        if self._loaded is None:
            from matrix.core.expect import effective_versions
            from matrix.core.loader import parse_matrix

            matrix = parse_matrix(self._data(), self.matrix_path or DEFAULT_SOURCE)
            self._loaded = _Loaded(matrix=matrix, tested=self.tested(), versions=effective_versions(matrix, {}))
        return self._loaded

    def subject(self, nodeid: str, *, imports: tuple[str, ...] = (), server_args: frozenset[str] = frozenset()) -> Subject:
        return subject_of(self.tested(), nodeid, imports=imports, server_args=server_args)

    def verdict(self, backend: str, runner: RunnerProfile) -> BackendVerdict:
        key = (backend, runner.name)
        found = self._verdicts.get(key)
        if found is None:
            found = self._verdicts[key] = backend_verdict(self.load(), backend, runner)
        return found


def _where(runner: RunnerProfile) -> str:
    return f"{runner.name} (sm{runner.sm})" if runner.sm is not None else f"{runner.name} (no GPU)"


def backend_verdict(loaded: _Loaded, backend: str, runner: RunnerProfile) -> BackendVerdict:
    """Runs when a cell of `backend` must RUN on `runner` (its satisfied hardware rules are the trail); else the
    rule that blocks most of its cells there."""
    from matrix.core.expect import expected
    from matrix.core.model import Outcome, RuleKind

    cells = [c for c in loaded.matrix.cells if c.get("backend") == backend]
    where = _where(runner)
    blocking: dict[str, tuple[int, str]] = {}
    for cell in cells:
        exp = expected(loaded.matrix, cell, runner, loaded.versions)
        if exp.outcome is Outcome.RUN:
            # The hardware rules that apply to this backend (a rule with a `when`), not the ones every cell meets.
            hardware = [v for v in exp.trail if v.rule.kind is RuleKind.HARDWARE and v.rule.when]
            shown = hardware or list(exp.trail)
            rules = "; ".join(f"rule {v.rule.id}, source {v.rule.source}" for v in shown)
            why = rules or "no rule restricts it"
            impl = f", as {exp.impl}" if exp.impl not in (None, backend) else ""
            trail = f"{backend} runs on {where}{impl}: {why} (cell {cell.id} must run there)"
            return BackendVerdict(backend=backend, runner=runner.name, runs=True, trail=trail)
        first = exp.blocking[0]
        text = f"rule {first.rule.id} ({first.rule.reason}; {first.detail}), source {first.rule.source}"
        count, _ = blocking.get(first.rule.id, (0, text))
        blocking[first.rule.id] = (count + 1, text)
    if not cells:
        return BackendVerdict(backend=backend, runner=runner.name, runs=False, trail=f"the matrix has no cell of {backend}")
    _, text = max(blocking.values(), key=lambda item: item[0])
    trail = f"{backend} cannot run on {where}: {text} (none of its {len(cells)} cells must run there)"
    return BackendVerdict(backend=backend, runner=runner.name, runs=False, trail=trail)
