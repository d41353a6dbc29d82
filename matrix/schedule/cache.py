"""A schedule read once per content: keyed by every CI file it read, the runner profiles and this package's source.

Walking sglang's 95 workflow files costs most of a second; a warm `specmatrix guards` should not pay it again.
The cache is one file per key in the results cache folder, sealed with a digest of the key and its body: a file
edited by hand, moved to another key, or not matching the schema is a miss (the CI files are read again), never
a schedule.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import OutputError
from matrix.core.jsonio import seal as sealed_digest
from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import READ_FILES, read_limited
from matrix.schedule.environment.model import environment_fields, environment_of_fields
from matrix.schedule.files import in_repo
from matrix.schedule.model import (
    Container,
    Gate,
    Origin,
    PytestSelection,
    RunnerHardware,
    Schedule,
    ScheduleEntry,
    Selection,
    SuiteSelection,
    UnknownLabel,
    UnreadJob,
    selection_fields,
)

SCHEMA = "specmatrix.schedule-cache/8"  # 8: entries carry the names their command lacks (`ScheduleEntry.unset`)
MAX_CACHE_BYTES = 64 * 1024 * 1024
_PACKAGE = Path(__file__).parent


def schedule_key(inputs: Iterable[Path], root: Path, runners: Mapping[str, RunnerProfile], readers: str) -> str:
    digest = hashlib.sha256(SCHEMA.encode())
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(path.read_bytes())
    for data in ("runner_labels.toml", "external_ci.toml"):  # the label packs decide profiles; the CI pack hand-offs
        packed = _PACKAGE.parent / "data" / data
        if packed.is_file():
            digest.update(packed.read_bytes())
    digest.update(repr(sorted((n, repr(p)) for n, p in runners.items())).encode())
    digest.update(readers.encode())
    for path in inputs:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_symlink() and not in_repo(root, path):
            digest.update(b"\0outside")  # refused by the reader: its target's bytes are never read
            continue
        try:
            digest.update(path.read_bytes())
            READ_FILES.note_path(path, str(path.relative_to(root)))  # read for the key: no output may replace it
        except OSError:
            digest.update(b"\0unreadable")
    return digest.hexdigest()[:32]


def cached(folder: Path | None, key: str, compute: Callable[[], Schedule]) -> Schedule:
    """The schedule stored under `key` in `folder`, else `compute()` (stored when `folder` is given).

    The file is a header line (`schema`, and the seal of the body's text) and the body's JSON on the next line:
    the seal is checked on the text as read, so reading it back never serialises the schedule again."""
    if folder is None:
        return compute()
    path = folder / f"schedule-{key}.json"
    try:
        data = read_limited(path, MAX_CACHE_BYTES) if path.exists() else b""
        head, newline, body = data.partition(b"\n")
        if newline and len(data) <= MAX_CACHE_BYTES:
            header = json.loads(head)
            text = body.decode("utf-8")
            if isinstance(header, dict) and header.get("schema") == SCHEMA and header.get("seal") == seal(key, text):
                return _known(from_doc(json.loads(text)), key)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass  # unreadable or foreign: read the CI files again
    schedule = compute()
    text = json.dumps(to_doc(schedule), separators=(",", ":"))  # ASCII, one line: the header ends at the first \n
    header = json.dumps({"schema": SCHEMA, "seal": seal(key, text)}, separators=(",", ":"))
    with contextlib.suppress(OutputError):  # a read-only cache folder costs speed, not correctness
        write_text_atomic(path, header + "\n" + text)
    return _known(schedule, key)


# Schedules read through `cached`, by object, with their key: the key names every input the schedule was read
# from (and this package's code), so it stands for the schedule's content wherever one is needed. A schedule
# made any other way (or derived from one of these) is not here.
_KEYS: dict[int, tuple[Schedule, str]] = {}


def _known(schedule: Schedule, key: str) -> Schedule:
    if len(_KEYS) >= 64:
        _KEYS.clear()
    _KEYS[id(schedule)] = (schedule, key)  # the schedule is held, so its id is not given to another object
    return schedule


def fingerprint(schedule: Schedule) -> str | None:
    """A digest of everything `schedule` was read from, when it came through `cached`; else None."""
    known = _KEYS.get(id(schedule))
    return known[1] if known is not None and known[0] is schedule else None


def seal(key: str, body: Any) -> str:
    return sealed_digest(SCHEMA, key, body)


def _origin(o: Origin) -> list[Any]:
    return [o.file, o.line, o.job, list(o.via)]


def _origin_of(raw: list[Any]) -> Origin:
    file, line, job, via = raw
    return Origin(file=str(file), line=int(line), job=str(job), via=tuple(str(v) for v in via))


def _selection_of(raw: dict[str, Any]) -> Selection:
    if "suite" in raw:
        return SuiteSelection(suite=str(raw["suite"]), hw=raw["hw"], nightly=bool(raw["nightly"]))
    shard = raw["shard"]
    return PytestSelection(
        paths=tuple(raw["paths"]),
        working_dir=str(raw["working_dir"]),
        ignore=tuple(raw["ignore"]),
        deselect=tuple(raw["deselect"]),
        keyword=raw["keyword"],
        markexpr=raw["markexpr"],
        shard=(int(shard[0]), int(shard[1])) if shard else None,
    )


def _hardware(h: RunnerHardware) -> list[Any]:
    return [h.kind, h.vendor, h.gpus, h.arch, list(h.labels)]


def _hardware_of(raw: list[Any]) -> RunnerHardware:
    kind, vendor, gpus, arch, labels = raw
    return RunnerHardware(
        kind=str(kind), vendor=str(vendor), gpus=None if gpus is None else int(gpus), arch=str(arch), labels=tuple(labels)
    )


def to_doc(schedule: Schedule) -> dict[str, Any]:
    return {
        "entries": [
            [
                selection_fields(e.selection),
                list(e.labels),
                list(e.profiles),
                [list(kv) for kv in e.env],
                [g.value for g in e.gates],
                list(e.assumptions),
                _origin(e.origin),
                list(e.other_runners),
                None if e.container is None else [e.container.name, e.container.unread, list(e.container.notes)],
                environment_fields(e.environment),
                None if e.hardware is None else _hardware(e.hardware),
                list(e.unset),
            ]
            for e in schedule.entries
        ],
        "unread": [
            [
                _origin(u.origin),
                u.reason,
                None if u.reach is None else list(u.reach),
                None if u.runners is None else list(u.runners),
            ]
            for u in schedule.unread
        ],
        "not_run": [[_origin(u.origin), u.reason] for u in schedule.not_run],
        "unknown": [[u.label, _origin(u.origin), list(u.nearest)] for u in schedule.unknown_labels],
        "sources": list(schedule.sources),
        "ci_names": list(schedule.ci_names),
    }


def from_doc(doc: dict[str, Any]) -> Schedule:
    entries = tuple(
        ScheduleEntry(
            selection=_selection_of(sel),
            labels=tuple(labels),
            profiles=tuple(profiles),
            env=tuple((str(k), str(v)) for k, v in env),
            gates=tuple(Gate(g) for g in gates),
            assumptions=tuple(assumptions),
            origin=_origin_of(origin),
            other_runners=tuple(str(o) for o in others),
            container=None if box is None else Container(name=str(box[0]), unread=str(box[1]), notes=tuple(box[2])),
            environment=environment_of_fields(installs),
            hardware=None if machine is None else _hardware_of(machine),
            unset=tuple(str(n) for n in unset),
        )
        for sel, labels, profiles, env, gates, assumptions, origin, others, box, installs, machine, unset in doc["entries"]
    )
    return Schedule(
        entries=entries,
        unread=tuple(
            UnreadJob(
                origin=_origin_of(o),
                reason=str(r),
                reach=None if b is None else tuple(str(x) for x in b),
                runners=None if n is None else tuple(str(x) for x in n),
            )
            for o, r, b, n in doc["unread"]
        ),
        not_run=tuple(UnreadJob(origin=_origin_of(o), reason=str(r)) for o, r in doc["not_run"]),
        unknown_labels=tuple(
            UnknownLabel(label=str(label), origin=_origin_of(o), nearest=tuple(n)) for label, o, n in doc["unknown"]
        ),
        sources=tuple(doc["sources"]),
        ci_names=tuple(doc["ci_names"]),
    )
