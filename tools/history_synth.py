"""Synthetic benchmark histories with known steps: the ground truth detectors are scored on.

A history is one number per commit, as a nightly job would record for one benchmark,
plus the raw samples of each commit's run. Noise models:

- ``gauss1``, ``gauss3``, ``gauss8``: log-normal noise, CV 1%, 3%, 8% per commit.
- ``outliers``: CV 2%, and each commit with probability 3% runs 1.5-3x slower (a busy
  machine: the whole run is slow, so every sample of it is too).
- ``bimodal``: CV 1.5% inside a mode; each commit's run lands in a slow mode 5-15% above
  the fast one with probability 10-35%, independently per commit (CPU frequency states).
- ``drift``: CV 2% and a slow linear drift of 0.05-0.1% per commit, up or down.

Each commit's run has a run-level noise (shared by its samples) and a within-run noise
(per sample); the share of the run-level part is drawn per history between 20% and 80%
of the commit value's variance. The commit's value is the median of its samples, and the
two parts are scaled so that the value's noise has the nominal CV.

Steps: 0-3 per history, sizes 2, 5, 10, 25, 50%, up (x(1+s)) or down (x(1-s)), at least
10 commits from the start and from each other, and at least 6 commits before the end, so
a nightly job sees each new level for 5 nights after the night it arrives.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

NOISE_MODELS = ("gauss1", "gauss3", "gauss8", "outliers", "bimodal", "drift")
STEP_SIZES = (0.02, 0.05, 0.10, 0.25, 0.50)
LENGTHS = (30, 200)
SAMPLES_PER_COMMIT = (5, 10)
# Placement of steps: first one this far from the start, this far apart, and this many
# commits from the end at least.
WARMUP, SPACING, TAIL = 10, 10, 6
_GAUSS_CV = {"gauss1": 0.01, "gauss3": 0.03, "gauss8": 0.08}
_BASE_CV = {"outliers": 0.02, "bimodal": 0.015, "drift": 0.02}
OUTLIER_RATE = 0.03


@dataclass(frozen=True)
class Step:
    """A true step: `index` is the first commit at the new level; `size` is relative
    (0.10 = 10%); `direction` +1 multiplies the level by 1+size, -1 by 1-size."""

    index: int
    size: float
    direction: int

    @property
    def factor(self) -> float:
        """What the level is multiplied by from `index` on."""
        return 1.0 + self.direction * self.size


@dataclass(frozen=True)
class Noise:
    """One history's noise: `cv` of a commit's value inside its mode; `slow` and `gap`, the
    chance of a run in the slow mode and how much slower it is (bimodal); `rate`, the drift
    per commit (drift); outliers come at OUTLIER_RATE, 1.5-3x slower."""

    model: str
    cv: float
    slow: float = 0.0
    gap: float = 0.0
    rate: float = 0.0

    @property
    def noise_cv(self) -> float:
        """The CV a detector sees through (see `History`)."""
        return math.sqrt(self.cv**2 + self.slow * (1 - self.slow) * self.gap**2)

    def offset(self, rng: np.random.Generator, index: int) -> float:
        """The log offset of one run of commit `index` that is not the step signal."""
        if self.model == "outliers" and rng.random() < OUTLIER_RATE:
            return math.log(rng.uniform(1.5, 3.0))
        if self.model == "bimodal" and rng.random() < self.slow:
            return math.log1p(self.gap)
        return self.rate * index


@dataclass(frozen=True)
class History:
    """One synthetic benchmark history and its ground truth.

    `noise_cv` is the per-commit noise a detector has to see through, used to call a step
    detectable (step size >= 3 x noise_cv): the CV for the Gaussian, outlier and drift
    models (outliers and drift are rare or slow), and for ``bimodal`` the standard
    deviation of the two-mode mixture, sqrt(cv^2 + p(1-p) gap^2). `base`: the level before
    any step; `share`: the share of a value's variance that is run-to-run; `params`: the noise
    parameters (`run` draws a fresh run of any commit from them).
    """

    name: str
    noise: str
    noise_cv: float
    values: tuple[float, ...]
    samples: tuple[tuple[float, ...], ...]
    steps: tuple[Step, ...]
    base: float = 1.0
    share: float = 0.5
    params: Noise | None = None

    def __len__(self) -> int:
        return len(self.values)


def generate(per_model: int, *, seed: int = 20240601, models: tuple[str, ...] = NOISE_MODELS,
             lengths: tuple[int, int] = LENGTHS) -> list[History]:
    """`per_model` histories for each noise model, deterministic for a given seed.

    A quarter of the histories of each model are change-free; the others have 1-3 steps
    (as many as fit in their length), sizes and directions drawn uniformly.
    """
    histories = []
    for model in models:
        rng = _model_rng(seed, model)
        for j in range(per_model):
            n_steps = j % 4  # 0, 1, 2, 3 in turn: a quarter change-free
            length = int(rng.integers(lengths[0], lengths[1] + 1))
            steps = _place_steps(rng, length, n_steps)
            histories.append(make_history(rng, model, length, steps, f"{model}-{j:03d}"))
    return histories


def generate_regressions(per_model: int, *, size: float = 0.10, seed: int = 20240602,
                         models: tuple[str, ...] = NOISE_MODELS) -> list[History]:
    """Histories that end 10 commits after one regression (a rise) of `size`, placed after
    20-80 commits: enough of them per noise model to say how many nights a nightly job
    takes to flag such a regression."""
    histories = []
    for model in models:
        rng = _model_rng(seed, model)
        for j in range(per_model):
            index = int(rng.integers(20, 81))
            histories.append(make_history(rng, model, index + 10, (Step(index, size, 1),),
                                          f"{model}-regression-{j:03d}"))
    return histories


def _model_rng(seed: int, model: str) -> np.random.Generator:
    # One stream per (seed, model): a model's histories do not depend on which others run.
    if model not in NOISE_MODELS:
        raise ValueError(f"noise model {model!r}: expected one of {', '.join(NOISE_MODELS)}")
    return np.random.default_rng([seed, NOISE_MODELS.index(model)])


def make_history(rng: np.random.Generator, model: str, length: int, steps: tuple[Step, ...],
                 name: str) -> History:
    """One history of `length` commits with the given steps under `model`'s noise."""
    noise = _noise(rng, model)
    base = math.exp(rng.uniform(math.log(1e-4), math.log(1.0)))
    share = rng.uniform(0.2, 0.8)  # of the value's variance that is run-to-run
    h = History(name, model, noise.noise_cv, (), (), steps, base, share, noise)
    samples = [run(h, i, rng) for i in range(length)]
    values = tuple(float(np.median(s)) for s in samples)
    return replace(h, values=values, samples=tuple(tuple(map(float, s)) for s in samples))


def level(history: History, index: int) -> float:
    """The true level of commit `index` (the base with every step up to it)."""
    return history.base * math.prod(s.factor for s in history.steps if s.index <= index)


def run(history: History, index: int, rng: np.random.Generator) -> np.ndarray:
    """One run of commit `index`: 5-10 samples whose median has the model's noise. A
    run-level part (and the model's outlier, slow mode or drift) is shared by the samples of
    the run, a within-run part is not; the share of each is the history's. Called again, it is
    a re-measurement of that commit: fresh samples from the same noise model."""
    n = history.params
    k = int(rng.integers(SAMPLES_PER_COMMIT[0], SAMPLES_PER_COMMIT[1] + 1))
    between = n.cv * math.sqrt(history.share)
    # The median of k normal samples has variance ~ (pi/2) sigma^2 / k.
    within = n.cv * math.sqrt((1 - history.share) * k / (math.pi / 2))
    centre = level(history, index) * math.exp(n.offset(rng, index) + rng.normal(0.0, between))
    return centre * np.exp(rng.normal(0.0, within, k))


def _place_steps(rng: np.random.Generator, length: int, n_steps: int) -> tuple[Step, ...]:
    # Draw positions one at a time among those far enough from the ones already placed.
    placed: list[int] = []
    for _ in range(n_steps):
        free = [i for i in range(WARMUP, length - TAIL + 1)
                if all(abs(i - p) >= SPACING for p in placed)]
        if not free:
            break
        placed.append(int(rng.choice(free)))
    steps = []
    for index in sorted(placed):
        size = float(rng.choice(STEP_SIZES))
        steps.append(Step(index, size, int(rng.choice((-1, 1)))))
    return tuple(steps)


def _noise(rng: np.random.Generator, model: str) -> Noise:
    """The parameters of one history's noise under `model`."""
    if model in _GAUSS_CV:
        return Noise(model, _GAUSS_CV[model])
    cv = _BASE_CV[model]
    if model == "outliers":
        return Noise(model, cv)
    if model == "bimodal":
        return Noise(model, cv, slow=rng.uniform(0.10, 0.35), gap=rng.uniform(0.05, 0.15))
    return Noise(model, cv, rate=rng.uniform(0.0005, 0.001) * rng.choice((-1, 1)))


def detectable(step: Step, history: History) -> bool:
    """The evaluation's definition: a step at least 3x the history's noise CV."""
    return step.size >= 3 * history.noise_cv
