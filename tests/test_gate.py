"""The pull-request gate's verdicts from paired rounds (fake re-measurements, no asv)."""
from __future__ import annotations

import numpy as np
import pytest

from proofbench.analysis.gate import Verdict, judge
from proofbench.pipeline.remeasure import Remeasured, Round, Target
from proofbench.project import CheckSettings, Rule

TIME = Target("area.Subject.time_call", ("optimized", "small"))
RATE = Target("area.Subject.track_items", ("optimized", "small"))


def _measured(factors: dict[Target, float], rounds: int = 8, noise: float = 0.01, seed: int = 1) -> Remeasured:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rounds):
        shared = rng.normal(0, 0.1)  # load that comes and goes hits both commits of a round alike
        values = {c: {t: float(np.exp(shared + rng.normal(0, noise))) * (f if c == "head" else 1.0)
                      for t, f in factors.items()} for c in ("base", "head")}
        out.append(Round(values, 1.0))
    return Remeasured(("base", "head"), tuple(out), "rounds")


def _judge(measured: Remeasured, settings: CheckSettings = CheckSettings()):
    return judge(measured, "base", "head", settings.for_benchmark, lambda t: t.benchmark.endswith("track_items"))


def test_a_slower_time_is_a_regression_and_a_higher_rate_an_improvement():
    report = _judge(_measured({TIME: 1.10, RATE: 1.10}))
    verdicts = {s.target: s.verdict for s in report.series}
    assert verdicts == {TIME: Verdict.REGRESSION, RATE: Verdict.IMPROVEMENT} and report.exit_code == 1


def test_a_wiggle_under_the_minimum_step_is_no_change():
    report = _judge(_measured({TIME: 1.005}, noise=0.002))
    assert [s.verdict for s in report.series] == [Verdict.NO_CHANGE] and report.exit_code == 0


def test_too_few_or_too_noisy_rounds_are_inconclusive_never_a_regression():
    assert [s.verdict for s in _judge(_measured({TIME: 1.10}, rounds=2)).series] == [Verdict.INCONCLUSIVE]
    noisy = _judge(_measured({TIME: 1.05}, rounds=4, noise=0.2))
    assert noisy.series[0].verdict is Verdict.INCONCLUSIVE and noisy.exit_code == 0


def test_a_project_rule_sets_the_minimum_step_and_the_direction():
    settings = CheckSettings(rules=(Rule("area.Subject.time_call", min_step=0.2, higher_is_better=True),))
    report = _judge(_measured({TIME: 1.10}), settings)
    assert report.series[0].verdict is Verdict.NO_CHANGE and report.series[0].min_step == 0.2
    faster = _judge(_measured({TIME: 1.5}), settings)
    assert faster.series[0].verdict is Verdict.IMPROVEMENT  # the rule says higher is better


def test_the_gate_help_says_what_each_format_is_for(capsys):
    from proofbench.cli import main

    with pytest.raises(SystemExit) as done:
        main(["gate", "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse folds long help lines
    assert done.value.code == 0
    assert ("--format {text,markdown,json} text (default), markdown (a comment for the pull request) or json "
            "(a versioned document)") in shown, shown


def test_the_comment_says_no_regression_only_where_every_series_was_decided():
    from proofbench.reports.gate import markdown

    def headline(report) -> str:
        return markdown(report).splitlines()[0]

    assert headline(_judge(_measured({TIME: 1.10}))) == "### proofbench: regression"
    assert headline(_judge(_measured({TIME: 1.005}, noise=0.002))) == "### proofbench: no regression"
    assert headline(_judge(_measured({TIME: 1.10}, rounds=2))) == \
        "### proofbench: inconclusive (no series could be decided)"
    some = _judge(_measured({TIME: 1.0, RATE: 1.025}, rounds=8, noise=0.01, seed=1))  # a 2.5% rise: undecided
    assert [s.verdict for s in some.series] == [Verdict.NO_CHANGE, Verdict.INCONCLUSIVE]
    assert headline(some) == "### proofbench: 1 of 2 series inconclusive, no regression in the others"


@pytest.mark.parametrize("fmt", ["json", "markdown", "text"])
def test_a_gate_that_cannot_run_still_answers_in_its_format(fmt, capsys, tmp_path, monkeypatch):
    import json

    from proofbench.cli import main

    monkeypatch.chdir(tmp_path)  # no project file here
    assert main(["gate", "main", "--rounds", "2", "--format", fmt]) == 2
    out, err = capsys.readouterr()
    assert "--rounds must be at least 3 (fewer alternating rounds decide nothing), got 2" in err
    if fmt == "json":
        assert json.loads(out) == {"format": "proofbench-gate", "version": 1, "status": "error", "exit_code": 2,
                                   "error": "--rounds must be at least 3 (fewer alternating rounds decide nothing), "
                                            "got 2"}
    elif fmt == "markdown":
        assert out.startswith("**proofbench gate failed** (exit status 2): --rounds must be at least 3")
    else:
        assert out == ""


def test_a_gate_of_many_series_shares_its_five_percent_among_them():
    # Twenty series that did not move, 6 rounds with 3% noise a commit: at 95% each, two of them
    # read "regression" or "improvement" here (on 400 such gates, 48% said at least one wrong
    # word); at 1 - 5% / 20 each, none does (4% of the 400).
    from proofbench.analysis.gate import Movement, movement
    from proofbench.reports.gate import markdown
    from proofbench.stats import round_ratio

    targets = [Target(f"area.S{i}.time_call", ("x",)) for i in range(20)]
    measured = _measured({t: 1.0 for t in targets}, rounds=6, noise=0.03, seed=3)
    each = [movement(round_ratio(measured.series("head", t), measured.series("base", t), confidence=0.95))
            for t in targets]
    assert sum(m in (Movement.UP, Movement.DOWN) for m in each) == 2
    report = _judge(measured)
    assert report.confidence == pytest.approx(1 - 0.05 / 20) and report.exit_code == 0
    assert {s.verdict for s in report.series} <= {Verdict.NO_CHANGE, Verdict.INCONCLUSIVE}
    assert "| verdict | series | head / base [99.75% CI] |" in markdown(report)
    assert _judge(_measured({TIME: 1.10})).confidence == 0.95  # one series: 95%


def test_a_count_that_never_moves_takes_no_share_of_the_five_percent():
    # items per call read the same in every round: "95% for the 8 together" where 6 varied
    from proofbench.reports.gate import text

    measured = _measured({TIME: 1.0, RATE: 1.0})
    counted = Target("area.S0.track_items", ("x",))
    rounds = tuple(Round({c: {**r.values[c], counted: 1000.0} for c in r.values}, r.seconds) for r in measured.rounds)
    report = _judge(Remeasured(measured.commits, rounds, measured.stopped))
    assert len(report.series) == 3 and report.shared == 2 and report.confidence == pytest.approx(1 - 0.05 / 2)
    assert "intervals at 97.5% each, 95% for the 2 together" in text(report)
