"""Source mutations of the installed sglang, as data, and the overlay that applies one without touching the install.

A mutation names an sglang module, an exact text in it, its replacement and the cells it must turn red.
It is applied to a temporary overlay: a directory tree that links every entry of the installed package except
the directories on the way to the mutated module (real directories) and the module itself (the mutated copy).
Put first on `sys.path` (PYTHONPATH of a child process), the overlay's `sglang` shadows the installed one.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from matrix.core.errors import SpecmatrixError


class MutationError(SpecmatrixError):
    """A mutation cannot be applied: its text is not in the installed sglang (sglang moved on), or it is ambiguous."""


@dataclass(frozen=True, kw_only=True)
class SourceMutation:
    """Replace `old` (exactly once) by `new` in `module`; `red` selects the GPU cells that must turn red."""

    name: str
    module: str
    old: str
    new: str
    red: str
    why: str

    @property
    def relative_path(self) -> Path:
        """The module's file below the package directory (`sglang/srt/x.py`), from its dotted name alone."""
        return Path(*self.module.split(".")).with_suffix(".py")


MUTATIONS: tuple[SourceMutation, ...] = (
    SourceMutation(
        name="runner-unexpanded-max-bs",
        module="sglang.srt.speculative.frozen_kv_mtp_cuda_graph_runner",
        old="self.draft_attn_backend.init_cuda_graph_state(\n            self.max_bs * self.topk, self.max_num_token\n        )",
        new="self.draft_attn_backend.init_cuda_graph_state(\n            self.max_bs, self.max_num_token\n        )",
        red="draft-trtllm_mha-*topk{2,4,8}-*-graph",
        why="FrozenKVMTPCudaGraphRunner sizes its draft backend for the requests, not the topk-expanded rows",
    ),
    SourceMutation(
        name="expand-tiles-seq-lens",
        module="sglang.srt.speculative.frozen_kv_mtp_utils",
        old="forward_batch.seq_lens = forward_batch.seq_lens.repeat_interleave(topk, dim=0)",
        new="forward_batch.seq_lens = forward_batch.seq_lens.repeat(topk)",
        red="draft-{triton,trtllm_mha}-*topk{2,4,8}-*",
        why="expand_for_topk_draft tiles seq_lens while req_pool_indices stay interleaved: rows read other lengths",
    ),
    SourceMutation(
        name="trtllm-verify-cu-seqlens-q-short",
        module="sglang.srt.layers.attention.trtllm_mha_backend",
        old="max_bs * self.speculative_num_draft_tokens + 1,\n                    step=self.speculative_num_draft_tokens,",
        new="max_bs + 1,\n                    step=self.speculative_num_draft_tokens,",
        red="target-trtllm_mha-topk1-*-dt*-graph",
        why="TRTLLMHAAttnBackend's target-verify cu_seqlens_q preset holds too few requests once num_draft_tokens > 1",
    ),
    SourceMutation(
        name="worker-builds-triton-for-trtllm-mha",
        module="sglang.srt.speculative.frozen_kv_mtp_worker_v2",
        old='if backend_type == "trtllm_mha":\n            return self._init_trtllm_mha_draft_attn_backend()',
        new='if backend_type == "trtllm_mha":\n            return self._init_triton_draft_attn_backend()',
        red="draft-trtllm_mha-*topk{2,4,8}-*",
        why="FrozenKVMTPDraftWorker builds another backend (triton) than the one requested (trtllm_mha) for a topk > 1 draft",
    ),
    SourceMutation(
        name="draft-backend-ignores-override",
        module="sglang.srt.speculative.frozen_kv_mtp_worker_v2",
        old="return get_spec().speculative_draft_attention_backend or attention_backends()[1]",
        new="return attention_backends()[1]",
        red="draft-*-tgt_*-topk{2,4,8}-*",
        why="FrozenKVMTPDraftWorker._resolve_draft_backend_type drops --speculative-draft-attention-backend: a topk > 1 "
        "draft runs the target's backend",
    ),
    SourceMutation(
        name="draft-runner-ignores-override",
        module="sglang.srt.model_executor.model_runner",
        old="return draft_attention_backend or get_spec().speculative_draft_attention_backend",
        new="return draft_attention_backend",
        red="draft-*-tgt_*",
        why="resolve_draft_attention_backend drops --speculative-draft-attention-backend: the draft runner (the topk 1 "
        "draft's own backend) runs the target's backend",
    ),
)


def mutation_named(name: str, mutations: Iterable[SourceMutation] = MUTATIONS) -> SourceMutation:
    known = {m.name: m for m in mutations}
    if name not in known:
        raise MutationError(f"unknown mutation {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def mutate_text(text: str, mutation: SourceMutation, *, where: str) -> str:
    """The mutated source; the old text must occur exactly once."""
    count = text.count(mutation.old)
    if count == 0:
        raise MutationError(
            f"mutation {mutation.name}: its old text is not in {where} (the installed sglang changed; update the mutation)"
        )
    if count > 1:
        raise MutationError(f"mutation {mutation.name}: its old text occurs {count} times in {where}; make it unique")
    return text.replace(mutation.old, mutation.new)


def package_dir(package: str) -> Path:
    """Where a top-level package is installed, found without importing it."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise MutationError(f"package {package!r} is not installed (nothing to mutate)")
    return Path(locations[0])


SKIPPED_ENTRIES = frozenset({"__pycache__"})  # stale bytecode of the mutated directory must not be linked in


def _mirror(source: Path, dest: Path, keep_real: Path) -> None:
    """Link every entry of `source` into `dest`, recursing (with real directories) only along `keep_real`."""
    dest.mkdir(parents=True, exist_ok=True)
    head = keep_real.parts[0]
    for entry in sorted(os.listdir(source)):
        if entry in SKIPPED_ENTRIES or entry == head:
            continue
        os.symlink(source / entry, dest / entry)
    if len(keep_real.parts) > 1:
        _mirror(source / head, dest / head, Path(*keep_real.parts[1:]))


def build_overlay(mutation: SourceMutation, dest: Path, *, locate: Callable[[str], Path] = package_dir) -> Path:
    """Write the overlay for `mutation` under `dest` (an empty directory); returns the path to put first on sys.path."""
    top = mutation.module.split(".")[0]
    installed = locate(top)
    target = installed.parent / mutation.relative_path
    if not target.is_file():
        raise MutationError(f"mutation {mutation.name}: {mutation.module} is not in the installed {top} ({target})")
    mutated = mutate_text(target.read_text(encoding="utf-8"), mutation, where=str(target))
    inner = Path(*mutation.relative_path.parts[1:])
    _mirror(installed, dest / top, inner)
    (dest / mutation.relative_path).write_text(mutated, encoding="utf-8")
    return dest


def overlay_env(overlay: Path, env: Mapping[str, str]) -> dict[str, str]:
    """`env` with the overlay first on PYTHONPATH; bytecode is not written (the overlay links into the install)."""
    rest = env.get("PYTHONPATH", "")
    path = str(overlay) + (os.pathsep + rest if rest else "")
    return {**env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
