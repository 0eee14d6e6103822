"""Training runs: a model, its starting weights, and a fixed number of AdamW steps.

Every training variant is one call of `train` (or `accumulate`) on a `TrainingRun`. A call
first restores the starting weights and the random seed, so the same run gives the same
losses every time it is called, whichever variant calls it and however often.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import torch

from proofbench.declare import Metric

Batch = dict[str, torch.Tensor]
LOSS_DELTA = Metric("loss_delta", "loss", higher_is_better=False)


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
          after_step: Callable[[], object] | None = None) -> torch.Tensor:
    """Restart `run`, take one AdamW step per batch, return the losses (fp32, CPU).

    `forward` replaces the model in the forward pass (a compiled wrapper of it); `batches`
    replaces the run's own (a DataLoader); `autocast` is the autocast dtype (None: fp32);
    `scaled` adds a GradScaler (fp16); `lr` overrides the run's learning rate; `after_step`
    is called after every step.
    """
    run.restart()
    opt = run.optimizer(lr)
    scaler = torch.amp.GradScaler(run.device) if scaled else None
    module = forward if forward is not None else run.model
    losses = []
    for batch in (run.batches if batches is None else batches):
        with torch.autocast(run.device, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            loss = module(**batch).loss
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        if after_step is not None:
            after_step()
    return torch.stack(losses).float().cpu()


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
    run.restart()
    opt = run.optimizer()
    scale = float(micro_batches) if loss_scale is None else loss_scale
    losses, gradient = [], torch.empty(0)
    for index, batch in enumerate(run.batches):
        total = torch.zeros((), device=run.device)
        for piece in _slices(batch, micro_batches):
            loss = run.model(**piece).loss / scale
            loss.backward()
            total += loss.detach()
        if index == len(run.batches) - 1:
            gradient = run.gradients()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(total)
    return Accumulated(torch.stack(losses).float().cpu(), gradient)


def _slices(batch: Batch, parts: int) -> list[Batch]:
    # Equal row slices of every tensor in the batch (views, no copies).
    rows = next(iter(batch.values())).shape[0]
    size = rows // parts
    return [{k: v[i * size:(i + 1) * size] for k, v in batch.items()} for i in range(parts)]
