"""The floating-point (and integer) operations of one call, counted per dtype from the ops torch ran.

torch.utils.flop_counter's formulas (`flop_registry`: mm, addmm, bmm, convolution, attention
kernels and their backwards) are applied to every op the call dispatches, as
`FlopCounterMode` does, and each count is filed under the dtype of the op's first tensor
input, so that an autocast forward counts as bf16 and its fp32 optimizer step as fp32. Ops
without a formula (elementwise, norms, softmax) are not counted, as in FlopCounterMode: the
count is the matmul-class work the machine's peak is measured on. Ops whose name says they
multiply matrices but that have no formula (quantized linear, say) are listed in `uncounted`
so a low count is never read as little work.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

_MATMUL_WORDS = ("mm", "linear", "conv", "matmul", "attention", "einsum")


@dataclass(frozen=True)
class FlopCount:
    """Operations of one call by dtype name ("float32", "bfloat16", "int8"...), and what was not counted."""

    by_dtype: dict[str, int]
    uncounted: tuple[str, ...] = ()
    ops: dict[str, int] = field(default_factory=dict)  # counted operations by op name

    @property
    def total(self) -> int:
        """Every counted operation, whatever its dtype."""
        return sum(self.by_dtype.values())

    def dominant(self, share: float = 0.9) -> str | None:
        """The dtype holding at least `share` of the count, or None when the work is mixed."""
        if not self.total:
            return None
        dtype, count = max(self.by_dtype.items(), key=lambda kv: kv[1])
        return dtype if count >= share * self.total else None


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _first_tensor_dtype(args: tuple, kwargs: dict) -> str:
    import torch
    from torch.utils._pytree import tree_flatten

    tensors = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
    return _dtype_name(tensors[0].dtype) if tensors else "unknown"


def _cpu_attention(query, key, value, *args, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query.shape, key.shape, value.shape)


def _cpu_attention_backward(grad_out, query, key, value, *args, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_backward_flop_count

    return sdpa_backward_flop_count(grad_out.shape, query.shape, key.shape, value.shape)


# CPU's fused attention kernels, which flop_registry (written for the CUDA kernels) lacks; the
# arithmetic is the same scaled dot product, counted with torch's own sdpa formulas.
_EXTRA = {"aten._scaled_dot_product_flash_attention_for_cpu": _cpu_attention,
          "aten._scaled_dot_product_flash_attention_for_cpu_backward": _cpu_attention_backward}


def _formula(packet: Any) -> Callable[..., int] | None:
    from torch.utils.flop_counter import flop_registry

    if packet in flop_registry:
        return lambda *args, out_val=None, **kwargs: flop_registry[packet](*args, **kwargs, out_val=out_val)
    return _EXTRA.get(str(packet))


def _mode(by_dtype: Counter, ops: Counter, uncounted: set[str]):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class _PerDtype(TorchDispatchMode):
        # As FlopCounterMode: an op without a formula is decomposed where it can be (under
        # inference_mode, composite ops such as linear reach the mode whole), and the formulas
        # take the call's arguments and its output.
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            packet = func._overloadpacket
            formula = _formula(packet)
            if formula is None and func is not torch.ops.prim.device.default:
                with self:
                    decomposed = func.decompose(*args, **kwargs)
                if decomposed is not NotImplemented:
                    return decomposed
            out = func(*args, **kwargs)
            if formula is not None:
                count = int(formula(*args, **kwargs, out_val=out))
                by_dtype[_first_tensor_dtype(args, kwargs)] += count
                ops[str(packet)] += count
            elif any(word in str(packet).rsplit(".", 1)[-1] for word in _MATMUL_WORDS):
                uncounted.add(str(packet))
            return out

    return _PerDtype()


def count_flops(call: Callable[[], Any]) -> tuple[FlopCount, Any]:
    """Run `call()` once, counting its operations per dtype; returns the count and its output."""
    by_dtype: Counter = Counter()
    ops: Counter = Counter()
    uncounted: set[str] = set()
    with _mode(by_dtype, ops, uncounted):
        out = call()
    return FlopCount(dict(by_dtype), tuple(sorted(uncounted)), dict(ops)), out
