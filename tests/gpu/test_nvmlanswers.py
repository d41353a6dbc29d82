"""Device questions answered from NVML while the fork server preloads (CPU: a stand-in torch and a stand-in NVML)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from matrix.gpu.forkserver import NVML_ENV, PRELOAD_ENV
from matrix.gpu.nvmlanswers import Gpu, NvmlAnswers, ordinal, read_nvml, uniform, visible_count
from matrix.gpu.preload import driver_mapped

ROOT = Path(__file__).resolve().parents[2]
H200 = Gpu(capability=(9, 0), name="NVIDIA H200")
# A stand-in NVML: the six entry points read_nvml calls, its GPUs given at build time.
FAKE_NVML = r"""
#include <stdio.h>
#include <stddef.h>
static const int caps[][2] = CAPS;
static const char *names[] = NAMES;
int nvmlInit_v2(void) { return INIT_RESULT; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned *count) { *count = sizeof(names) / sizeof(names[0]); return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **handle) { *handle = (void *)(size_t)(i + 1); return 0; }
int nvmlDeviceGetCudaComputeCapability(void *handle, int *major, int *minor) {
    size_t i = (size_t)handle - 1; *major = caps[i][0]; *minor = caps[i][1]; return 0;
}
int nvmlDeviceGetName(void *handle, char *name, unsigned length) {
    snprintf(name, length, "%s", names[(size_t)handle - 1]); return 0;
}
"""


def _fake_nvml(tmp_path: Path, caps: str, names: str, init_result: int = 0) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler for the stand-in NVML")
    source, library = tmp_path / "fake_nvml.c", tmp_path / "libfake-nvml.so"
    source.write_text(FAKE_NVML, encoding="utf-8")
    defines = [f"-DCAPS={caps}", f"-DNAMES={names}", f"-DINIT_RESULT={init_result}"]
    subprocess.run([compiler, "-shared", "-fPIC", *defines, "-o", str(library), str(source)], check=True, timeout=60)
    return library


def test_nvml_is_read_through_its_c_entry_points(tmp_path: Path) -> None:
    library = _fake_nvml(tmp_path, "{{9,0},{10,3}}", '{"NVIDIA H200","NVIDIA B300"}')
    assert read_nvml(str(library)) == (H200, Gpu(capability=(10, 3), name="NVIDIA B300"))
    (tmp_path / "failing").mkdir()
    failing = _fake_nvml(tmp_path / "failing", "{{9,0}}", '{"x"}', 999)
    assert read_nvml(str(failing)).startswith("NVML did not start")  # type: ignore[union-attr]
    assert read_nvml(str(tmp_path / "absent.so")).startswith("no NVML")  # type: ignore[union-attr]


def test_only_a_host_of_one_kind_of_gpu_is_answered() -> None:
    assert uniform((H200, H200)) == H200
    assert uniform((H200, Gpu(capability=(8, 0), name="NVIDIA A100"))) is None
    assert uniform(()) is None


@pytest.mark.parametrize(
    ("value", "gpus", "expected"),
    [
        (None, 4, 4),
        ("0", 4, 1),
        ("2,3", 4, 2),
        (" 1 , 0 ", 4, 2),
        ("0,7,1", 4, 1),  # CUDA stops at the first index out of range
        ("", 4, None),
        ("GPU-5d2c", 4, None),
        ("MIG-1", 4, None),
        ("0,0", 4, None),
        ("-1", 4, None),
    ],
)
def test_the_visible_ordinals_follow_cuda_visible_devices(value: str | None, gpus: int, expected: int | None) -> None:
    assert visible_count(value, gpus) == expected


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        (None, 0),
        (1, 1),
        ("cuda", 0),
        ("cuda:2", 2),
        ("cpu", None),
        (True, None),
        (types.SimpleNamespace(type="cuda", index=None), 0),
        (types.SimpleNamespace(type="cuda", index=3), 3),
        (types.SimpleNamespace(type="cpu", index=0), None),
    ],
)
def test_a_device_argument_names_its_ordinal(device: object, expected: int | None) -> None:
    assert ordinal(device) == expected


def _cuda() -> tuple[types.ModuleType, list[object]]:
    asked: list[object] = []
    cuda = types.ModuleType("torch.cuda")

    def get_device_capability(device: object = None) -> tuple[int, int]:
        asked.append(("capability", device))
        return (7, 5)

    def get_device_name(device: object = None) -> str:
        asked.append(("name", device))
        return "from torch"

    def current_device() -> int:
        asked.append(("current", None))
        return 5

    cuda.get_device_capability = get_device_capability  # type: ignore[attr-defined]
    cuda.get_device_name = get_device_name  # type: ignore[attr-defined]
    cuda.current_device = current_device  # type: ignore[attr-defined]
    return cuda, asked


def test_answers_come_from_nvml_for_visible_ordinals_and_torch_has_its_functions_back() -> None:
    cuda, asked = _cuda()
    originals = (cuda.get_device_capability, cuda.get_device_name, cuda.current_device)
    with NvmlAnswers(cuda=cuda, gpu=H200, env={"CUDA_VISIBLE_DEVICES": "1,0"}, gpus=2) as answers:
        bound = cuda.get_device_capability  # `from torch.cuda import get_device_capability` in a library
        bound_current = cuda.current_device
        assert cuda.current_device() == 0
        assert cuda.get_device_capability() == (9, 0)
        assert cuda.get_device_capability("cuda:1") == (9, 0)
        assert cuda.get_device_name(0) == "NVIDIA H200"
        assert asked == []
        assert cuda.get_device_capability(2) == (7, 5)  # not visible: torch's question (the preload cuts it)
        assert cuda.get_device_name("meta") == "from torch"
    assert answers.answered == [
        "current_device()",
        "get_device_capability(0)",
        "get_device_capability(1)",
        "get_device_name(0)",
    ]
    assert (cuda.get_device_capability, cuda.get_device_name, cuda.current_device) == originals
    assert bound(0) == (7, 5) and bound_current() == 5  # a kept reference forwards to torch once the preload is over
    assert asked == [("capability", 2), ("name", "meta"), ("capability", 0), ("current", None)]


def test_device_ids_not_read_here_are_left_to_torch() -> None:
    cuda, asked = _cuda()
    with NvmlAnswers(cuda=cuda, gpu=H200, env={"CUDA_VISIBLE_DEVICES": "GPU-5d2c"}, gpus=2) as answers:
        assert cuda.get_device_capability(0) == (7, 5)
        assert cuda.current_device() == 5
    assert answers.answered == [] and asked == [("capability", 0), ("current", None)]


# A torch stand-in whose device questions start "CUDA" (lazily), as torch's do.
CUDA_TORCH = """
import types
cuda = types.ModuleType("torch.cuda")
cuda.state = {"initialised": False}
def _lazy_init():
    cuda.state["initialised"] = True
def get_device_capability(device=None):
    cuda._lazy_init()
    return (9, 0)
def get_device_name(device=None):
    cuda._lazy_init()
    return "NVIDIA H200"
def get_device_properties(device=None):
    cuda._lazy_init()
    return types.SimpleNamespace(multi_processor_count=132)
def current_device():
    cuda._lazy_init()
    return 0
cuda._lazy_init = _lazy_init
cuda.current_device = current_device
cuda.get_device_capability = cuda.ORIGINAL = get_device_capability
cuda.get_device_name = get_device_name
cuda.get_device_properties = get_device_properties
cuda.is_initialized = lambda: cuda.state["initialised"]
"""
# flashinfer 0.7.2's and sglang's shapes: the capability of a device, and of the current one, at import (kept).
ARCH_LIB = (
    "import os, torch\nARCH = torch.cuda.get_device_capability(0)\n"
    "JIT_ARCH = torch.cuda.get_device_capability(torch.cuda.current_device())\nIMPORTED_IN = os.getpid()\n"
)
SM_COUNT_LIB = "import torch\nSMS = torch.cuda.get_device_properties(0).multi_processor_count\n"
WORKER_TEST = """
import os, sys, torch

def test_the_library_was_imported_by_the_server_with_nvml_answers():
    arch_lib = sys.modules.get("arch_lib")
    assert arch_lib is not None, "not preloaded"
    assert arch_lib.IMPORTED_IN == os.getppid() != os.getpid()
    assert arch_lib.ARCH == arch_lib.JIT_ARCH == (9, 0)

def test_the_worker_has_torch_functions_and_no_cuda_from_the_server():
    assert torch.cuda.get_device_capability is torch.cuda.ORIGINAL
    assert not torch.cuda.is_initialized()
"""


def _serve(tmp_path: Path, preload: str, nvml: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    for name, text in {"torch.py": CUDA_TORCH, "arch_lib.py": ARCH_LIB, "sm_count_lib.py": SM_COUNT_LIB}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "test_worker.py").write_text(WORKER_TEST, encoding="utf-8")
    env = {**os.environ, PRELOAD_ENV: preload, NVML_ENV: nvml, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    status = tmp_path / "status.json"
    command = [sys.executable, "-m", "matrix.gpu.forkserver", "run", "--status", str(status), "--"]
    command += ["-n", "2", "-p", "no:cacheprovider", "-p", "no:benchmark", "-W", "error", "-q", "test_worker.py"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)
    return done, json.loads(status.read_text(encoding="utf-8"))


def test_a_library_asking_the_capability_at_import_is_preloaded_with_nvml_answers(tmp_path: Path) -> None:
    """flashinfer 0.7.2's case with NVML present: the capability is answered, nothing starts CUDA, the library is
    preloaded (not left to the workers), and each worker has torch's own functions back."""
    library = _fake_nvml(tmp_path, "{{9,0},{9,0}}", '{"NVIDIA H200","NVIDIA H200"}')
    done, status = _serve(tmp_path, "torch,arch_lib,sm_count_lib", str(library))
    assert status["state"] == "ready", status
    assert status["nvml"] == "2 GPU(s), all NVIDIA H200 sm90", status
    assert status["answered_from_nvml"] == {"get_device_capability(0)": 2, "current_device()": 1}, status
    assert "arch_lib" in status["preload_seconds"] and "arch_lib" not in status["deferred"], status  # type: ignore[operator]
    # A question NVML does not answer is still cut short and left to the workers.
    assert any("sm_count_lib.py:2" in line for line in status["deferred"]["sm_count_lib"]), status  # type: ignore[index]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout


def test_a_host_of_mixed_gpus_is_not_answered(tmp_path: Path) -> None:
    """Which NVML device a CUDA ordinal is depends on the device order there: the capability is left to torch, so
    the library is cut short and imported by each worker (the first test fails: proof it was not preloaded)."""
    library = _fake_nvml(tmp_path, "{{9,0},{8,0}}", '{"NVIDIA H200","NVIDIA A100"}')
    done, status = _serve(tmp_path, "torch,arch_lib", str(library))
    assert status["state"] == "ready" and status["answered_from_nvml"] == {}, status
    assert "not all of one kind" in str(status["nvml"]) and "arch_lib" in status["deferred"], status  # type: ignore[operator]
    assert "1 failed, 1 passed" in done.stdout and "not preloaded" in done.stdout, done.stdout[-3000:]


def test_the_cuda_driver_library_is_seen_in_the_address_space(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n", encoding="utf-8")
    assert not driver_mapped(str(maps))
    maps.write_text("7f00-7f01 r-xp 0 08:01 2 /usr/lib/x86_64-linux-gnu/libcuda.so.570.1\n", encoding="utf-8")
    assert driver_mapped(str(maps))
    assert not driver_mapped(str(tmp_path / "absent"))
