"""Instruction sets behind a dtype: whether a bf16 or int8 variant ran on native instructions here.

A bf16 variant on an x86 CPU without avx512_bf16 or AMX runs on converted fp32 arithmetic (measured
at 0.31-0.40x of fp32 on such an Intel Xeon, 2.5x faster on an AMD EPYC with avx512_bf16), so its
verdict says as much about the CPU as about the optimization. A variant names its dtype through
its requirement (`bf16`, `int8_cpu`, see `proofbench.capability`); the machine profile records the
CPU's features (`proofbench.machine.capture.ISA_FLAGS`) and torch's detected CPU capability.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# requirement -> (dtype, features that run it natively on x86, on ARM)
NATIVE = {
    "bf16": ("bf16", ("avx512_bf16", "amx_bf16"), ("bf16", "svebf16")),
    "int8_cpu": ("int8", ("avx512_vnni", "avx_vnni", "amx_int8"), ("i8mm", "asimddp", "svei8mm")),
}
_ARM = ("aarch64", "arm64")


@dataclass(frozen=True)
class IsaNote:
    """What this machine offers a dtype: `present` are the native features it has among `native`
    (empty: the dtype is emulated); `capability` is torch's detected CPU capability."""

    dtype: str
    native: tuple[str, ...]
    present: tuple[str, ...]
    capability: str | None

    @property
    def emulated(self) -> bool:
        return not self.present


def isa_note(requires: tuple[str, ...] | list[str], machine_profile: dict[str, Any] | None) -> IsaNote | None:
    """The note for a variant with `requires` on a machine with `machine_profile` (the stored JSON);
    None where the variant has no dtype requirement, the run was not on a CPU, or the profile
    predates captured instruction sets."""
    profile = machine_profile or {}
    if "isa" not in profile or profile.get("gpus"):
        return None
    for requirement in requires:
        if requirement in NATIVE:
            dtype, x86, arm = NATIVE[requirement]
            native = arm if profile.get("arch") in _ARM else x86
            present = tuple(f for f in native if f in profile["isa"])
            return IsaNote(dtype, native, present, profile.get("torch_cpu_capability"))
    return None
