"""Which attention backend sglang built: its class, kernel family and `skip_prefill`, compared with the one a cell names.

Read off a live backend object by attribute only (no sglang or torch import here), so the GPU levels and the CPU
agreement check share one comparison. A field the expected identity leaves `None` is not claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

# TRTLLMHAAttnBackend.is_xqa_impl (sglang 0.5.23): XQA on sm90/sm120, trtllm-gen on sm100; the matrix's [[impl]]
# names the same two (matrix/data/matrix.toml).
XQA = "xqa"
TRTLLM_GEN = "trtllm-gen"
KERNEL_FAMILIES = frozenset({XQA, TRTLLM_GEN})


class BackendMismatch(AssertionError):
    """sglang built another backend (class, kernel family or prefill mode) than the cell names."""


@dataclass(frozen=True, kw_only=True)
class BackendIdentity:
    """What identifies a built backend; `None` fields are not visible (actual) or not claimed (expected)."""

    cls: str
    kernel_family: str | None = None
    skip_prefill: bool | None = None

    def describe(self) -> str:
        parts = [self.cls]
        if self.kernel_family is not None:
            parts.append(f"kernel family {self.kernel_family}")
        if self.skip_prefill is not None:
            parts.append(f"skip_prefill={self.skip_prefill}")
        return ", ".join(parts)


def class_name(obj: object) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def identity_of(backend: object) -> BackendIdentity:
    """The identity of a live backend: its class, `is_xqa_impl` when it has one, `skip_prefill` when it has one."""
    xqa = getattr(backend, "is_xqa_impl", None)
    skip = getattr(backend, "skip_prefill", None)
    return BackendIdentity(
        cls=class_name(backend),
        kernel_family=(XQA if xqa else TRTLLM_GEN) if isinstance(xqa, bool) else None,
        skip_prefill=skip if isinstance(skip, bool) else None,
    )


def expected_identity(*, registry_backend: object, skip_prefill: bool | None, impl: str | None) -> BackendIdentity:
    """The identity a cell claims: the class sglang's registry builds for its backend name, the matrix's impl when it
    is a kernel family, and the prefill mode its role implies (`None`: not claimed)."""
    return BackendIdentity(
        cls=class_name(registry_backend),
        kernel_family=impl if impl in KERNEL_FAMILIES else None,
        skip_prefill=skip_prefill,
    )


def identity_problems(expected: BackendIdentity, actual: BackendIdentity) -> list[str]:
    """One line per claimed field the built backend does not match (an invisible claimed field is a problem)."""
    problems = []
    if actual.cls != expected.cls:
        problems.append(f"class {actual.cls}, expected {expected.cls}")
    if expected.kernel_family is not None and actual.kernel_family != expected.kernel_family:
        problems.append(f"kernel family {actual.kernel_family or 'not visible'}, expected {expected.kernel_family}")
    if expected.skip_prefill is not None and actual.skip_prefill != expected.skip_prefill:
        shown = "not visible" if actual.skip_prefill is None else str(actual.skip_prefill)
        problems.append(f"skip_prefill {shown}, expected {expected.skip_prefill}")
    return problems


def check_identity(expected: BackendIdentity, actual: BackendIdentity, *, what: str) -> None:
    """Raise BackendMismatch when `actual` is not the backend `what` names."""
    problems = identity_problems(expected, actual)
    if problems:
        raise BackendMismatch(f"{what}: sglang built another backend: " + "; ".join(problems))
