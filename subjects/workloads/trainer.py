"""Training runs: a model, its starting weights, and a fixed number of AdamW steps.

Every training variant is one call of `train` (or `accumulate`) on a `TrainingRun`. A call
first restores the starting weights and the random seed, so the same run gives the same
losses every time it is called, whichever variant calls it and however often.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import psutil
import torch

from proofbench.declare import Metric

Batch = dict[str, torch.Tensor]
LOSS_DELTA = Metric("loss_delta", "loss", higher_is_better=False)
# How far bf16 autocast may move a training loss (~3.4 on protein tokens) from fp32's: bf16 keeps
# 8 mantissa bits (~0.4% per op); a 2x learning-rate change moves it by ~0.04 after two steps.
MIXED_PRECISION_TOLERANCE = 0.02


@dataclass
class TrainingRun:
    """What one call of a training variant works on.

    `model` trains on `batches` (one AdamW step each, learning rate `lr`) on `device`.
    `start` is a copy of the weights as built; `restart()` puts them back.
    """

    model: torch.nn.Module
    batches: list[Batch]
    lr: float = 1e-3
    device: str = "cpu"
    start: dict[str, torch.Tensor] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.model.to(self.device).train()
        self.batches = [to_device(b, self.device) for b in self.batches]
        self.start = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def restart(self) -> None:
        """Restore the starting weights and re-seed torch."""
        self.model.load_state_dict(self.start)
        torch.manual_seed(0)

    def optimizer(self, lr: float | None = None, **options: object) -> torch.optim.AdamW:
        """A fresh AdamW over the model's parameters (`options`: foreach, fused...)."""
        return torch.optim.AdamW(self.model.parameters(), lr=self.lr if lr is None else lr, **options)

    def parameters(self) -> torch.Tensor:
        """All parameters as one flat fp32 CPU vector (a copy)."""
        return torch.cat([p.detach().float().reshape(-1) for p in self.model.parameters()]).cpu()

    def gradients(self) -> torch.Tensor:
        """All gradients as one flat fp32 CPU vector (a copy); zeros where a grad is None."""
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().float().reshape(-1)
                          for p in self.model.parameters()]).cpu()


def to_device(batch: Batch, device: str, non_blocking: bool = False) -> Batch:
    """The batch's tensors on `device`."""
    return {k: v.to(device, non_blocking=non_blocking) for k, v in batch.items()}


def train(run: TrainingRun, *, forward: torch.nn.Module | None = None, batches: Iterable[Batch] | None = None,
          autocast: torch.dtype | None = None, scaled: bool = False, lr: float | None = None,
          optimizer: dict[str, object] | None = None, micro_batches: int = 1, loss_scale: float | None = None,
          before_step: Callable[[int], object] | None = None,
          after_step: Callable[[], object] | None = None, non_blocking: bool = False) -> torch.Tensor:
    """Restart `run`, take one AdamW step per batch, return the losses (fp32, CPU).

    `forward` replaces the model in the forward pass (a compiled wrapper of it); `batches`
    replaces the run's own (a DataLoader's, on the CPU: each is moved to the run's device, a
    copy inside the timed epoch as in any loop fed by a loader; `non_blocking` for pinned
    batches); `autocast` is the autocast dtype (None: fp32);
    `scaled` adds a GradScaler (fp16); `lr` overrides the run's learning rate; `optimizer`
    holds AdamW's options (foreach, fused); `micro_batches` splits each batch into that many
    equal slices whose gradients add up before the step, each slice's loss divided by their
    count (or by `loss_scale`); `before_step(index)` is called before each step, with the
    batch's gradients in place, and `after_step()` after it.
    """
    run.restart()
    opt = run.optimizer(lr, **(optimizer or {}))
    scaler = torch.amp.GradScaler(run.device) if scaled else None
    module = forward if forward is not None else run.model
    scale = float(micro_batches) if loss_scale is None else loss_scale
    losses = []
    for index, batch in enumerate(run.batches if batches is None else batches):
        batch = to_device(batch, run.device, non_blocking)  # a no-op for the run's own batches, already there
        losses.append(_backward(module, _slices(batch, micro_batches), scale, run.device, autocast, scaler))
        if before_step is not None:
            before_step(index)
        if scaler is None:
            opt.step()
        else:
            scaler.step(opt)
            scaler.update()
        opt.zero_grad(set_to_none=True)
        if after_step is not None:
            after_step()
    return torch.stack(losses).float().cpu()


def _backward(module: torch.nn.Module, pieces: list[Batch], scale: float, device: str,
              autocast: torch.dtype | None, scaler: torch.amp.GradScaler | None) -> torch.Tensor:
    # Forward and backward of each piece, its loss divided by `scale`; the summed loss, detached.
    total = None
    for piece in pieces:
        with torch.autocast(device, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            loss = module(**piece).loss
        if scale != 1.0:
            loss = loss / scale
        (loss if scaler is None else scaler.scale(loss)).backward()
        total = loss.detach() if total is None else total + loss.detach()
    return total


@contextmanager
def checkpointing(model: torch.nn.Module) -> Iterator[None]:
    """Activation checkpointing on for the block: transformers' per-layer recomputation, non-reentrant."""
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    try:
        yield
    finally:
        model.activation_checkpointing_disable()


@contextmanager
def observed_forward(model: torch.nn.Module, device: str) -> Iterator[dict[str, object]]:
    """What the model's first forward pass in the block ran under: the autocast dtype (None when
    off) and whether activation checkpointing was on; the dict yielded fills in at that pass."""
    seen: dict[str, object] = {}

    def look(module: torch.nn.Module, args: object) -> None:
        if not seen:
            on = torch.is_autocast_enabled(device)
            seen.update(autocast=str(torch.get_autocast_dtype(device)) if on else None,
                        checkpointing=bool(getattr(module, "is_activation_checkpointing", False)))

    hook = model.register_forward_pre_hook(look)
    try:
        yield seen
    finally:
        hook.remove()


def memory_snapshot(device: str) -> dict[str, float]:
    """The memory figures seed 000's trainer logs: CPU use, RSS, free RAM, and GPU memory on CUDA."""
    snapshot = {"cpu_percent": psutil.cpu_percent(), "rss": float(psutil.Process().memory_info().rss),
                "available": float(psutil.virtual_memory().available)}
    if device == "cuda":
        snapshot.update(allocated=float(torch.cuda.memory_allocated()),
                        reserved=float(torch.cuda.memory_reserved()),
                        peak=float(torch.cuda.max_memory_allocated()))
    return snapshot


def loss_delta(base: object, other: object) -> float:
    """The largest per-step loss difference between two calls' outputs (losses, or `.losses`).

    A run that lost or gained steps is infinitely far; NaN (a diverged run) stays NaN,
    which never passes an equivalence check.
    """
    a = base if isinstance(base, torch.Tensor) else base.losses
    b = other if isinstance(other, torch.Tensor) else other.losses
    if a.shape != b.shape:
        return float("inf")
    return float((a - b).abs().max())


@dataclass(frozen=True)
class Accumulated:
    """What `accumulate` returns: the losses and the last step's gradient (flat fp32)."""

    losses: torch.Tensor
    gradient: torch.Tensor


def accumulate(run: TrainingRun, micro_batches: int, *, loss_scale: float | None = None) -> Accumulated:
    """Restart `run`; per batch, accumulate gradients over `micro_batches` slices, then step.

    Each slice's loss is divided by `micro_batches` (or `loss_scale`), so the gradient equals
    the whole batch's when every row holds the same number of predicted tokens.
    """
    last: list[torch.Tensor] = []

    def keep_last(index: int) -> None:
        if index == len(run.batches) - 1:
            last.append(run.gradients())

    losses = train(run, micro_batches=micro_batches, loss_scale=loss_scale, before_step=keep_last)
    return Accumulated(losses, last[0] if last else torch.empty(0))


def _slices(batch: Batch, parts: int) -> list[Batch]:
    # Equal row slices of every tensor in the batch (views, no copies); the batch itself for one.
    if parts == 1:
        return [batch]
    rows = next(iter(batch.values())).shape[0]
    size = rows // parts
    return [{k: v[i * size:(i + 1) * size] for k, v in batch.items()} for i in range(parts)]
