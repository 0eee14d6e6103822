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
from dataclasses import dataclass

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
class History:
    """One synthetic benchmark history and its ground truth.

    `noise_cv` is the per-commit noise a detector has to see through, used to call a step
    detectable (step size >= 3 x noise_cv): the CV for the Gaussian, outlier and drift
    models (outliers and drift are rare or slow), and for ``bimodal`` the standard
    deviation of the two-mode mixture, sqrt(cv^2 + p(1-p) gap^2).
    """

    name: str
    noise: str
    noise_cv: float
    values: tuple[float, ...]
    samples: tuple[tuple[float, ...], ...]
    steps: tuple[Step, ...]

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
    truth = np.zeros(length)  # log of the true level, relative to the base
    for step in steps:
        truth[step.index:] += math.log(step.factor)
    run_level, cv, noise_cv = _run_noise(rng, model, length)
    base = math.exp(rng.uniform(math.log(1e-4), math.log(1.0)))
    level = base * np.exp(truth + run_level)
    samples = _samples(rng, level, cv)
    values = tuple(float(np.median(s)) for s in samples)
    return History(name, model, noise_cv, values, tuple(tuple(map(float, s)) for s in samples),
                   steps)


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


def _run_noise(rng: np.random.Generator, model: str, length: int
               ) -> tuple[np.ndarray, float, float]:
    """Log offsets of each commit's run that are not the step signal (modes, outliers,
    drift), the Gaussian CV of the run's value, and the history's `noise_cv`."""
    offset = np.zeros(length)
    if model in _GAUSS_CV:
        cv = _GAUSS_CV[model]
        return offset, cv, cv
    cv = _BASE_CV[model]
    if model == "outliers":
        hit = rng.random(length) < OUTLIER_RATE
        offset[hit] = np.log(rng.uniform(1.5, 3.0, hit.sum()))
        return offset, cv, cv
    if model == "bimodal":
        p, gap = rng.uniform(0.10, 0.35), rng.uniform(0.05, 0.15)
        offset[rng.random(length) < p] = math.log1p(gap)
        return offset, cv, math.sqrt(cv**2 + p * (1 - p) * gap**2)
    rate = rng.uniform(0.0005, 0.001) * rng.choice((-1, 1))
    return rate * np.arange(length), cv, cv


def _samples(rng: np.random.Generator, level: np.ndarray, cv: float) -> list[np.ndarray]:
    """Per-commit samples whose median has noise CV `cv`: a run-level part shared by the
    samples of a run and a within-run part, split by a share drawn for the history."""
    share = rng.uniform(0.2, 0.8)  # of the value's variance that is run-to-run
    out = []
    for lv in level:
        k = int(rng.integers(SAMPLES_PER_COMMIT[0], SAMPLES_PER_COMMIT[1] + 1))
        between = cv * math.sqrt(share)
        # The median of k normal samples has variance ~ (pi/2) sigma^2 / k.
        within = cv * math.sqrt((1 - share) * k / (math.pi / 2))
        run = lv * math.exp(rng.normal(0.0, between))
        out.append(run * np.exp(rng.normal(0.0, within, k)))
    return out


def detectable(step: Step, history: History) -> bool:
    """The evaluation's definition: a step at least 3x the history's noise CV."""
    return step.size >= 3 * history.noise_cv
