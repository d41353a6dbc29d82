"""Every source mutation applies to the installed sglang, and turns the CPU checks it reaches red (green without).

Each mutated run is a child pytest with the overlay first on PYTHONPATH; the installed sglang is never edited.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from matrix.gpu.mutations import MUTATIONS, MutationError, build_overlay, mutation_named, overlay_env, package_dir

HERE = Path(__file__).parent
DRAFT = "test_sglang_draft_backend.py"

PAIR_PARAMS = tuple(
    f"{d}-on-{t}-{k}" for k in (1, 4) for d in ("triton", "trtllm_mha") for t in ("triton", "trtllm_mha", "flashinfer", "fa3")
)


def _apart(param: str) -> bool:
    draft, _, rest = param.partition("-on-")
    return rest.rsplit("-", 1)[0] != draft


# mutation -> (the CPU test it reaches, its parameters, the ones that must turn red)
CPU_REACH: dict[str, tuple[str, tuple[str, ...], frozenset[str]]] = {
    "runner-unexpanded-max-bs": (
        "test_frozen_graph_runner_sizes_its_draft_backend_for_every_branch",
        ("1", "2", "4", "8"),
        frozenset({"2", "4", "8"}),
    ),
    "expand-tiles-seq-lens": (
        "test_expand_for_topk_draft_keeps_a_requests_branches_adjacent",
        ("1", "2", "4", "8"),
        frozenset({"2", "4", "8"}),
    ),
    "trtllm-verify-cu-seqlens-q-short": (
        "test_target_verify_buffers_hold_every_request",
        ("1", "2", "4", "16"),
        frozenset({"2", "4", "16"}),
    ),
    "worker-builds-triton-for-trtllm-mha": (
        "test_the_worker_builds_the_requested_draft_backend",
        tuple(f"{b}-{k}" for b in ("triton", "trtllm_mha") for k in (1, 2, 4, 8)),
        frozenset({"trtllm_mha-2", "trtllm_mha-4", "trtllm_mha-8"}),
    ),
    # Red exactly where the draft's backend differs from the target's, at topk > 1 (the worker's choice) ...
    "draft-backend-ignores-override": (
        "test_the_draft_backend_is_chosen_apart_from_the_target",
        PAIR_PARAMS,
        frozenset(p for p in PAIR_PARAMS if p.endswith("-4") and _apart(p)),
    ),
    # ... and at topk 1 (the draft runner's own backend, which the topk 1 draft reuses).
    "draft-runner-ignores-override": (
        "test_the_draft_backend_is_chosen_apart_from_the_target",
        PAIR_PARAMS,
        frozenset(p for p in PAIR_PARAMS if p.endswith("-1") and _apart(p)),
    ),
}


def _outcomes(junit: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failed = any(child.tag in ("failure", "error") for child in case)
        out[case.get("name", "")] = "red" if failed else "green"
    return out


def _nodeids(name: str) -> list[str]:
    test, params, _ = CPU_REACH[name]
    return [f"tests/sglang/{DRAFT}::{test}[{p}]" for p in params]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """One child pytest per mutation (under its overlay) and one plain child over all the reached tests, run at once."""
    root = tmp_path_factory.mktemp("mutations")
    runs: dict[str, tuple[list[str], dict[str, str]]] = {
        name: (_nodeids(name), overlay_env(build_overlay(mutation_named(name), root / name), os.environ))
        for name in sorted(CPU_REACH)
    }
    runs[PLAIN] = ([n for name in sorted(CPU_REACH) for n in _nodeids(name)], dict(os.environ))
    children = {}
    for name, (nodeids, env) in runs.items():
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={root / name}.xml", *nodeids]
        children[name] = subprocess.Popen(
            command, cwd=HERE.parent.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    for child in children.values():
        child.wait(timeout=600)
    return {name: _outcomes(root / f"{name}.xml") for name in runs}


PLAIN = "no-mutation"


def test_every_mutation_reaches_a_cpu_check() -> None:
    assert set(CPU_REACH) == {m.name for m in MUTATIONS}


@pytest.mark.parametrize("name", sorted(CPU_REACH))
def test_mutation_turns_its_cpu_check_red_and_only_there(outcomes: dict[str, dict[str, str]], name: str) -> None:
    test, params, red = CPU_REACH[name]
    assert outcomes[name] == {f"{test}[{p}]": "red" if p in red else "green" for p in params}
    assert {f"{test}[{p}]": outcomes[PLAIN][f"{test}[{p}]"] for p in params} == {f"{test}[{p}]": "green" for p in params}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", [m.name for m in MUTATIONS])
def test_overlay_shadows_the_module_and_leaves_the_install_alone(tmp_path: Path, name: str) -> None:
    m = mutation_named(name)
    installed = package_dir("sglang").parent / m.relative_path
    before = _digest(installed)
    overlay = build_overlay(m, tmp_path)
    text = (overlay / m.relative_path).read_text(encoding="utf-8")
    assert m.new in text and m.old not in text
    assert not (overlay / m.relative_path).is_symlink()
    assert (overlay / "sglang" / "__init__.py").is_symlink()
    assert _digest(installed) == before


def test_a_mutation_whose_text_sglang_no_longer_has_is_an_error(tmp_path: Path) -> None:
    stale = replace(MUTATIONS[0], old="self.max_bs * self.topk * 2, self.max_num_token")
    with pytest.raises(MutationError, match=r"its old text is not in .*frozen_kv_mtp_cuda_graph_runner\.py"):
        build_overlay(stale, tmp_path)
    assert not list(tmp_path.iterdir())
