"""The JIT-cache key and manifest on CPU: a cache from another key is never used; a corrupt or partial one costs a
recompile of what it damaged, never a wrong load (matrix/gpu/jitcache.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.gpu.jitcache import MANIFEST, CacheKey, Verdict, seal, sealed_configs, verify

FIELDS = {"flashinfer": "0.7.2", "sglang": "0.5.23", "torch": "2.11.0", "cuda": "13.0", "arch": "sm90"}
KEY = CacheKey(fields=FIELDS, configs=("triton/triton/head_dim=128", "trtllm_mha/xqa/page_size=16"))


class ToyJit:
    """A JIT with a file cache: loads a kernel's bytes when present, else builds (counts it) and stores them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.builds: list[str] = []

    def kernel(self, name: str) -> bytes:
        path = self.root / name / "kernel.bin"
        if path.is_file():
            return path.read_bytes()
        self.builds.append(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.built(name))
        (path.parent / "meta.json").write_text(json.dumps({"name": name}), encoding="utf-8")
        return path.read_bytes()

    @staticmethod
    def built(name: str) -> bytes:
        return f"compiled {name}".encode()


def _filled(root: Path) -> ToyJit:
    jit = ToyJit(root)
    for name in ("k1", "k2", "k3"):
        jit.kernel(name)
    seal(root, KEY)
    return jit


@pytest.mark.parametrize(
    "other",
    [
        CacheKey(fields={**FIELDS, "flashinfer": "0.7.1"}, configs=KEY.configs),
        CacheKey(fields={**FIELDS, "cuda": "12.8"}, configs=KEY.configs),
        CacheKey(fields={**FIELDS, "arch": "sm100"}, configs=KEY.configs),
        CacheKey(fields=FIELDS, configs=(*KEY.configs, "flashinfer/flashinfer/head_dim=64")),
    ],
    ids=["flashinfer", "cuda", "arch", "configs"],
)
def test_a_cache_from_another_key_is_not_used(tmp_path: Path, other: CacheKey) -> None:
    _filled(tmp_path)
    result = verify(tmp_path, other)
    assert result.verdict is Verdict.FOREIGN and "another key" in result.reason
    assert list(tmp_path.iterdir()) == []
    jit = ToyJit(tmp_path)
    assert jit.kernel("k1") == ToyJit.built("k1") and jit.builds == ["k1"]
    assert other.name("specmatrix-jit") != KEY.name("specmatrix-jit")


def test_the_same_key_is_used_whole(tmp_path: Path) -> None:
    _filled(tmp_path)
    result = verify(tmp_path, KEY)
    assert (result.verdict, result.removed, result.kept) == (Verdict.USED, (), 6)
    jit = ToyJit(tmp_path)
    assert [jit.kernel(n) for n in ("k1", "k2", "k3")] == [ToyJit.built(n) for n in ("k1", "k2", "k3")]
    assert jit.builds == []
    assert sealed_configs([tmp_path], KEY) == frozenset(KEY.configs)


def test_a_corrupt_cache_file_costs_a_recompile_only(tmp_path: Path) -> None:
    _filled(tmp_path)
    (tmp_path / "k2" / "kernel.bin").write_bytes(b"garbage from a cut-short restore")
    result = verify(tmp_path, KEY)
    assert result.verdict is Verdict.USED and result.removed == ("k2",)
    jit = ToyJit(tmp_path)
    assert [jit.kernel(n) for n in ("k1", "k2", "k3")] == [ToyJit.built(n) for n in ("k1", "k2", "k3")]
    assert jit.builds == ["k2"]


def test_without_the_check_a_corrupt_file_is_loaded(tmp_path: Path) -> None:
    """The planted bug the check exists for: a JIT trusts its cache, so the corrupt bytes come back as the kernel."""
    _filled(tmp_path)
    (tmp_path / "k2" / "kernel.bin").write_bytes(b"garbage")
    assert ToyJit(tmp_path).kernel("k2") == b"garbage"


def test_a_partial_write_is_removed(tmp_path: Path) -> None:
    _filled(tmp_path)
    (tmp_path / "k4").mkdir()
    (tmp_path / "k4" / "kernel.bin").write_bytes(b"half")  # written after the seal: never listed
    (tmp_path / "k1" / "meta.json").unlink()  # listed but gone: the JIT rebuilds what it lacks
    result = verify(tmp_path, KEY)
    assert result.removed == ("k4",) and result.missing == 1
    assert not (tmp_path / "k4").exists() and (tmp_path / "k1" / "kernel.bin").exists()


@pytest.mark.parametrize("manifest", ["{not json", json.dumps({"format": "other", "files": {}}), None])
def test_an_unreadable_or_missing_manifest_empties_the_cache(tmp_path: Path, manifest: str | None) -> None:
    _filled(tmp_path)
    if manifest is None:
        (tmp_path / MANIFEST).unlink()
    else:
        (tmp_path / MANIFEST).write_text(manifest, encoding="utf-8")
    assert verify(tmp_path, KEY).verdict is Verdict.FOREIGN
    assert list(tmp_path.iterdir()) == []


def test_nothing_restored_is_empty(tmp_path: Path) -> None:
    assert verify(tmp_path / "absent", KEY).verdict is Verdict.EMPTY
