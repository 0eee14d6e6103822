"""A variant against its baseline in one process: the plan from the profile, the checks of the
answers the timed calls returned (a baseline that disagrees with itself, a variant whose answer
drifts, a declared state that moves), and the stored document the analysis reads back."""
from __future__ import annotations

import pytest

from proofbench import Equivalence, Metric, Size, State, Subject, Variant, Workload
from proofbench.errors import DeclarationError, InputError
from proofbench.measure import pairing
from proofbench.measure.interleave import Measured, Plan, Sampled, alternate
from proofbench.profile import get_profile, load_profiles
from proofbench.rounds import Block, Round

DISTANCE = Metric("max_abs_diff", "abs", higher_is_better=False)


def _subject(*variants: Variant) -> Subject:
    return Subject(area="loading", name="pairs", item="item", description="d",
                   prepare=lambda ctx: Workload(None, 1), variants=variants,
                   equivalence=Equivalence(DISTANCE, 1e-6, lambda a, b: abs(a - b)),
                   sizes=tuple(Size.of(n, n=1) for n in ("tiny", "small", "large")))


def _measured(base: list[float], other: list[float], states=()) -> Measured:
    rounds = (Round(Block(1, 0.2), Block(1, 0.1)),) * 3
    with_rounds = lambda xs: tuple(zip((-1, 0, 2), xs))  # noqa: E731 - warm-up, first and last round
    return Measured(rounds, Sampled(with_rounds(base)), Sampled(with_rounds(other), tuple(states)), 0.6)


def test_answers_that_agree_pass_every_check():
    subject = _subject(Variant("baseline", lambda x: 1.0), Variant("optimized", lambda x: 1.0))
    checked = pairing.check(subject, subject.variant("optimized"), _measured([1.0] * 3, [1.0] * 3))
    assert checked.passed and checked.deterministic and checked.equivalent and checked.state_kept is None
    assert pairing.failure(subject, checked) == ""


def test_a_baseline_that_disagrees_with_itself_is_not_an_equivalence_failure():
    subject = _subject(Variant("baseline", lambda x: 1.0), Variant("optimized", lambda x: 1.0))
    checked = pairing.check(subject, subject.variant("optimized"), _measured([1.0, 1.0, 1.5], [1.0] * 3))
    assert not checked.deterministic and checked.equivalent is None and not checked.passed
    assert pairing.failure(subject, checked).startswith("baseline not deterministic: max_abs_diff=0.5")


def test_a_variant_whose_later_answer_drifts_fails_equivalence():
    # The first answer matches; one sampled from a later timed call does not (a stale cache).
    subject = _subject(Variant("baseline", lambda x: 1.0), Variant("optimized", lambda x: 1.0))
    checked = pairing.check(subject, subject.variant("optimized"), _measured([1.0] * 3, [1.0, 1.0, 0.75]))
    assert checked.deterministic and checked.equivalent is False
    assert pairing.failure(subject, checked) == "equivalence failed: max_abs_diff=0.25, tolerance 1e-06"


def test_a_declared_state_that_moves_between_timed_calls_breaks_its_promise():
    cache: dict = {}
    state = State("answers kept per input", probe=lambda inputs: len(cache))
    subject = _subject(Variant("baseline", lambda x: 1.0), Variant("cached", lambda x: 1.0, state=state))
    moved = _measured([1.0] * 3, [1.0] * 3, states=[(0, 1), (2, 5)])
    checked = pairing.check(subject, subject.variant("cached"), moved)
    assert checked.state_kept is False and not checked.passed
    assert pairing.failure(subject, checked) == "state moved between timed calls: 1, 5"


def test_a_reset_state_is_restored_before_every_timed_call_of_a_real_pair():
    cache: dict = {}

    def cached(inputs):
        cache[len(cache)] = 1.0  # grows call by call unless reset
        return 1.0

    state = State("one entry per call", probe=lambda inputs: len(cache), reset=lambda inputs: cache.clear())
    subject = _subject(Variant("baseline", lambda x: 1.0), Variant("cached", cached, state=state))
    measured = alternate(pairing.side(subject.variant("baseline"), None), pairing.side(subject.variant("cached"), None),
                         Plan(budget=0.2, precision=0.5, min_rounds=3, block=0.001))
    checked = pairing.check(subject, subject.variant("cached"), measured)
    assert checked.state_kept is True and checked.passed


def test_the_document_keeps_rounds_plan_and_checks_as_json():
    subject = _subject(Variant("baseline", lambda x: 1.0), Variant("optimized", lambda x: 1.0))
    measured = _measured([1.0] * 3, [1.0] * 3)
    checked = pairing.check(subject, subject.variant("optimized"), measured)
    document = pairing.document(Plan(budget=2.0), measured, checked)
    assert document["version"] == pairing.DOCUMENT_VERSION and document["plan"]["budget"] == 2.0
    assert [Round.from_dict(r) for r in document["rounds"]] == list(measured.rounds)
    assert document["checks"]["variant"] == [[-1, 0.0], [0, 0.0], [2, 0.0]]
    assert pairing.asv_value(measured, Plan()) == pytest.approx(2.0)


def test_the_plan_comes_from_the_profile_with_per_subject_budgets(tmp_path):
    path = tmp_path / "profiles.toml"
    path.write_text('[ci]\ndescription = "d"\ndevice = "cpu"\nthreads = 1\nsizes = ["small"]\nrounds = 1\n'
                    'repeat = [3, 6, 0.5]\nwarmup_time = 0.0\npair_budget = 2\nprecision = 0.04\nmin_rounds = 6\n'
                    'processes = 3\npair_warmup = 0.25\nbetween_runs = 0.015\nno_difference = 0.04\n[ci.budgets]\n'
                    '"loading.dataloader" = 12\n[ci.between_runs_by_subject]\n"loading.dataloader" = 0.03\n')
    profile = load_profiles(path)["ci"]
    plan = pairing.plan(profile, "loading.dataloader", cores=2)
    assert (plan.budget, plan.precision, plan.min_rounds, plan.heavy, plan.processes) == (12.0, 0.04, 6, 2.0, 3)
    assert plan.warmup == 0.25 and pairing.plan(get_profile("smoke"), "loading.dataloader").warmup == 0.0
    assert plan.between_runs == 0.03 and plan.to_dict()["between_runs"] == 0.03  # the subject's own
    assert plan.part().between_runs == 0.03  # each process's part holds it too
    assert plan.no_difference == 0.04 and plan.to_dict()["no_difference"] == 0.04 and plan.part().no_difference == 0.04
    assert pairing.plan(profile, "loading.lmdb_read", cores=16).budget == 2.0
    assert pairing.plan(profile, "loading.lmdb_read").between_runs == 0.015  # the profile's
    assert pairing.plan(profile, "loading.lmdb_read", cores=16).heavy == 16.0
    # a data-bound subject's rounds span the profile's share of its budget; others stop on precision
    assert plan.span == 0.0 and pairing.plan(profile, "loading.dataloader", bound="data").span == 0.0
    path.write_text(path.read_text().replace("no_difference = 0.04\n", "no_difference = 0.04\ndata_span = 0.5\n"))
    spanning = pairing.plan(load_profiles(path)["ci"], "loading.dataloader", bound="data")
    assert spanning.span == 6.0 and spanning.to_dict()["span"] == 6.0 and spanning.part().span == 2.0
    path.write_text(path.read_text().replace("data_span = 0.5", "data_span = 2"))
    with pytest.raises(InputError, match=r"data_span must be a fraction from 0 up to 1, e.g. 0.5, got 2"):
        load_profiles(path)
    path.write_text(path.read_text().replace("data_span = 2\n", ""))
    path.write_text(path.read_text().replace('"loading.dataloader" = 12', '"loading.dataloader" = "long"'))
    with pytest.raises(InputError, match=r"\[ci.budgets\].loading.dataloader must be a number of seconds"):
        load_profiles(path)
    text = path.read_text().replace('"long"', '12')
    path.write_text(text.replace('"loading.dataloader" = 0.03', '"loading.dataloader" = "wide"'))
    with pytest.raises(InputError, match=r"\[ci.between_runs_by_subject\].loading.dataloader must be a fraction"):
        load_profiles(path)
    path.write_text(path.read_text().replace('"wide"', '1.5'))
    with pytest.raises(InputError,
                       match=r"between_runs_by_subject.loading.dataloader must be a fraction from 0 up to 1"):
        load_profiles(path)


def test_a_profile_with_a_meaningless_precision_is_refused():
    with pytest.raises(DeclarationError, match="precision must be a fraction"):
        get_profile("quick").__class__(**{**get_profile("quick").__dict__, "precision": 1.5})


@pytest.mark.parametrize("value", [-0.01, 1.0, float("nan")])
def test_a_profile_whose_variation_between_runs_is_no_fraction_is_refused(value):
    with pytest.raises(DeclarationError, match=r"between_runs must be a fraction from 0 up to 1, e.g. 0.01, got"):
        get_profile("quick").__class__(**{**get_profile("quick").__dict__, "between_runs": value})


@pytest.mark.parametrize("value, between_runs", [(-0.01, 0.0), (True, 0.0), (0.06, 0.0), (0.02, 0.01), (0.015, 0.01)])
def test_a_bound_of_no_difference_no_interval_could_meet_or_beyond_the_precision_is_refused(value, between_runs):
    # quick's precision is 5%; an interval holding a 1% variation between runs is at least +-2% wide
    quick = get_profile("quick").__dict__
    with pytest.raises(DeclarationError, match=r"no_difference must be (a fraction|0 \(the precision\) or above twice "
                                               r"between_runs)"):
        get_profile("quick").__class__(**{**quick, "no_difference": value, "between_runs": between_runs})
    assert get_profile("quick").__class__(**{**quick, "no_difference": 0.0}).no_difference == 0.0


def test_a_profile_with_a_negative_or_wordy_warm_up_is_refused(tmp_path):
    path = tmp_path / "profiles.toml"
    table = ('[ci]\ndescription = "d"\ndevice = "cpu"\nthreads = 1\nsizes = ["small"]\nrounds = 1\n'
             'repeat = [3, 6, 0.5]\nwarmup_time = 0.0\npair_warmup = {}\n')
    path.write_text(table.format("-0.5"))
    with pytest.raises(InputError, match=r"pair_warmup must be a number of seconds at least 0 .* got -0.5"):
        load_profiles(path)
    path.write_text(table.format('"short"'))
    with pytest.raises(InputError, match=r"\[ci\].pair_warmup has the wrong type \(str\)"):
        load_profiles(path)
