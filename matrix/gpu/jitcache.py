"""JIT caches kept between CI runs: the key they were built under, sealed in a manifest, checked before use.

A cache directory (flashinfer's workspace, triton's, torch.compile's or sglang's JIT cache) is usable only under the
key it was sealed with: the flashinfer, sglang, torch and CUDA versions, the GPU arch, and the set of kernel
configurations the shard meets. `seal` writes `.specmatrix-jit.json` (the key, its fields, every file's sha256, the
configurations); `verify` runs before the cells:

- no manifest, an unreadable one, or another key: the directory is emptied (a cache from another key is never used);
- a file whose bytes differ from the manifest, or one the manifest does not list (a write cut short, a partial
  restore): its kernel's directory is removed, so that kernel compiles again (a recompile, never a wrong load);
- a listed file that is missing: nothing to remove; the JIT rebuilds what it lacks.

Pure file handling (hashlib, json, shutil); versions are read by `installed_fields`, which imports torch only for
its CUDA version. Every file written here goes through the atomic writer.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from matrix.core.atomic import write_text_atomic

MANIFEST = ".specmatrix-jit.json"
FORMAT = "specmatrix.jit-cache/1"
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
MAX_FILES = 200_000
KEY_FIELDS = ("flashinfer", "sglang", "torch", "cuda", "arch")


@dataclass(frozen=True, kw_only=True)
class CacheKey:
    """What compiled a cache: library versions, the GPU arch and the kernel configurations of the shard."""

    fields: Mapping[str, str]
    configs: tuple[str, ...]

    @property
    def digest(self) -> str:
        doc = {"fields": {k: self.fields.get(k, "") for k in KEY_FIELDS}, "configs": sorted(set(self.configs))}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    def name(self, prefix: str) -> str:
        """The cache's key as actions/cache sees it: readable prefix, then the digest of everything."""
        return f"{prefix}-{self.fields.get('arch', 'unknown')}-{self.digest[:24]}"


class Verdict(StrEnum):
    EMPTY = "empty"  # nothing restored
    FOREIGN = "foreign"  # another key, or no readable manifest: emptied
    USED = "used"  # the key matches; damaged kernels removed (listed in `removed`)


@dataclass(frozen=True, kw_only=True)
class Verification:
    verdict: Verdict
    kept: int
    removed: tuple[str, ...] = ()
    missing: int = 0
    configs: tuple[str, ...] = field(default_factory=tuple)
    reason: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict.value,
            "kept": self.kept,
            "removed": list(self.removed),
            "missing": self.missing,
            "configs": list(self.configs),
            "reason": self.reason,
        }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _files(root: Path) -> list[Path]:
    """Regular files under `root` (links are not followed, nor kept: a cache holds plain files), manifest excluded."""
    found: list[Path] = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            path.unlink()
            continue
        if path.is_file() and path.name != MANIFEST:
            found.append(path)
            if len(found) > MAX_FILES:
                raise ValueError(f"{root}: more than {MAX_FILES} files; not a JIT cache")
    return found


def seal(root: Path, key: CacheKey) -> int:
    """Write the manifest of `root` under `key`; returns the number of files listed."""
    root.mkdir(parents=True, exist_ok=True)
    files = {path.relative_to(root).as_posix(): _sha256(path) for path in _files(root)}
    doc = {
        "format": FORMAT,
        "key": key.digest,
        "fields": {k: key.fields.get(k, "") for k in KEY_FIELDS},
        "configs": sorted(set(key.configs)),
        "files": files,
    }
    write_text_atomic(root / MANIFEST, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return len(files)


def _empty(root: Path) -> None:
    for entry in root.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _read_manifest(root: Path) -> Mapping[str, object] | None:
    path = root / MANIFEST
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("files"), dict):
        return None
    return doc


def _unit(root: Path, path: Path) -> Path:
    """What to remove for a damaged file: its directory (one kernel's files together), or the file at the top."""
    return path if path.parent == root else path.parent


def verify(root: Path, key: CacheKey) -> Verification:
    """Make `root` safe to use under `key` (see the module docstring)."""
    if not root.is_dir() or not any(root.iterdir()):
        return Verification(verdict=Verdict.EMPTY, kept=0, reason="nothing restored")
    doc = _read_manifest(root)
    if doc is None or doc.get("key") != key.digest:
        reason = "no readable manifest" if doc is None else f"sealed under another key ({str(doc.get('fields'))[:300]})"
        _empty(root)
        return Verification(verdict=Verdict.FOREIGN, kept=0, reason=reason)
    files = doc["files"]
    listed = {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}
    damaged: set[Path] = set()
    present: set[str] = set()
    for path in _files(root):
        rel = path.relative_to(root).as_posix()
        present.add(rel)
        if listed.get(rel) != _sha256(path):
            damaged.add(_unit(root, path))
    removed = []
    for unit in sorted(damaged, key=lambda p: len(p.parts)):
        if unit.exists():
            if unit.is_dir():
                shutil.rmtree(unit)
            else:
                unit.unlink()
            removed.append(unit.relative_to(root).as_posix())
    kept = sum(1 for path in _files(root))
    configs = doc.get("configs")
    return Verification(
        verdict=Verdict.USED,
        kept=kept,
        removed=tuple(removed),
        missing=len(set(listed) - present),
        configs=tuple(str(c) for c in configs) if isinstance(configs, list) else (),
        reason="key matches",
    )


def sealed_configs(roots: Iterable[Path], key: CacheKey) -> frozenset[str]:
    """Configurations every cache directory was sealed with under `key` (what a restored cache holds)."""
    held: frozenset[str] | None = None
    for root in roots:
        doc = _read_manifest(root)
        listed = doc.get("configs") if doc is not None else None
        if doc is None or doc.get("key") != key.digest or not isinstance(listed, list):
            return frozenset()
        configs = frozenset(str(c) for c in listed)
        held = configs if held is None else held & configs
    return held or frozenset()


def installed_fields(arch: str) -> dict[str, str]:
    """The key fields of this host: installed versions (distribution metadata) and torch's CUDA version."""
    import importlib.metadata

    fields = {"arch": arch}
    for name, dist in (("flashinfer", "flashinfer-python"), ("sglang", "sglang"), ("torch", "torch")):
        try:
            fields[name] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            fields[name] = "absent"
    try:
        import torch

        fields["cuda"] = str(torch.version.cuda or "none")
    except ImportError:
        fields["cuda"] = "absent"
    return fields
