"""A pair measured in several processes forked one after another: each prepares its own workload,
the rounds come back numbered by process, the checks of every process count, and a child that
raises, skips or dies is reported, never lost."""
from __future__ import annotations

import os
import pickle
import signal

import pytest

from proofbench import Equivalence, Metric, Size, Subject, Variant, Workload
from proofbench.errors import Skip
from proofbench.measure import pairing, processes
from proofbench.measure.interleave import Plan

DISTANCE = Metric("max_abs_diff", "abs", higher_is_better=False)
PLAN = Plan(budget=0.4, precision=0.5, min_rounds=6, block=0.002, processes=2)


def test_each_task_runs_in_a_child_of_its_own_in_order():
    parent = os.getpid()
    got = processes.each(lambda i: (i, os.getpid(), os.getppid()), 3)
    assert [i for i, _, _ in got] == [0, 1, 2]
    assert len({pid for _, pid, _ in got}) == 3 and parent not in {pid for _, pid, _ in got}
    assert {ppid for _, _, ppid in got} == {parent}


def test_without_fork_the_tasks_run_here():
    assert processes.each(lambda i: (i, os.getpid()), 2, fork=False) == [(0, os.getpid()), (1, os.getpid())]


def test_an_exception_in_a_child_is_raised_again_here_skip_included():
    def fails(i):
        raise ValueError(f"task {i} cannot run")

    with pytest.raises(ValueError, match="task 0 cannot run"):
        processes.each(fails, 2)

    def skips(i):
        raise Skip("needs a CUDA device")

    with pytest.raises(Skip, match="needs a CUDA device"):
        processes.each(skips, 1)


def test_a_child_that_dies_is_named_with_its_signal():
    died = r"measuring process 1 ended without a result \(killed by signal 9\)"
    with pytest.raises(processes.ProcessDied, match=died):
        processes.each(lambda i: os.kill(os.getpid(), signal.SIGKILL), 1)


def test_a_result_that_cannot_be_sent_back_is_an_error_naming_it():
    with pytest.raises((AttributeError, TypeError, pickle.PicklingError), match="pickle"):
        processes.each(lambda i: (lambda: None), 1)


def test_only_a_cpu_profile_forks():
    assert processes.can_fork("cpu") and not processes.can_fork("cuda")


def test_a_plans_part_shares_budget_and_rounds_and_widens_the_precision():
    part = Plan(budget=4.0, precision=0.05, min_rounds=5, max_rounds=400, processes=2).part()
    assert (part.budget, part.min_rounds, part.max_rounds, part.processes) == (2.0, 3, 200, 1)
    assert part.precision == pytest.approx(0.05 * 2**0.5)


def _subject(variant_run, prepared: list) -> Subject:
    def prepare(ctx):
        prepared.append(os.getpid())
        return Workload(os.getpid(), 1)

    return Subject(area="loading", name="pairs", item="item", description="d", prepare=prepare,
                   variants=(Variant("baseline", lambda pid: 1.0), Variant("optimized", variant_run)),
                   equivalence=Equivalence(DISTANCE, 1e-6, lambda a, b: abs(a - b)),
                   sizes=tuple(Size.of(n, n=1) for n in ("tiny", "small", "large")))


def test_each_process_prepares_its_own_workload_and_its_rounds_carry_its_number():
    subject = _subject(lambda pid: 1.0, [])
    prepare = lambda: subject.prepare(None)  # noqa: E731
    measured, checked = pairing.measure(subject, subject.variant("optimized"), prepare, PLAN)
    assert {r.process for r in measured.rounds} == {0, 1}
    per_process = [sum(r.process == p for r in measured.rounds) for p in (0, 1)]
    assert min(per_process) >= PLAN.part().min_rounds
    assert checked.passed and checked.deterministic and checked.equivalent
    document = pairing.document(PLAN, measured, checked)
    assert document["plan"]["processes"] == 2 and {r["process"] for r in document["rounds"]} == {0, 1}
    rounds_checked = [i for i, _ in document["checks"]["variant"]]
    assert rounds_checked.count(-1) == 2 and max(rounds_checked) == len(measured.rounds) - 1


def test_a_variant_wrong_in_one_process_only_fails_the_merged_check():
    # The variant answers wrongly in the second process (its own preparation): the pair fails.
    first = os.getpid()
    subject = _subject(lambda pid: 1.0 if os.getpid() == first else 2.0, [])
    measured, checked = pairing.measure(subject, subject.variant("optimized"),
                                        lambda: subject.prepare(None), PLAN, fork=True)
    assert checked.deterministic and checked.equivalent is False and not checked.passed
    assert pairing.failure(subject, checked).startswith("equivalence failed: max_abs_diff=1")


def test_in_one_process_the_processes_still_prepare_apart():
    prepared: list = []
    subject = _subject(lambda pid: 1.0, prepared)
    measured, checked = pairing.measure(subject, subject.variant("optimized"), lambda: subject.prepare(None),
                                        PLAN, fork=False)
    assert prepared == [os.getpid()] * 2 and {r.process for r in measured.rounds} == {0, 1} and checked.passed


def test_benchmark_processes_see_the_profiles_file_run_chose_its_profile_from(tmp_path, monkeypatch):
    # `proofbench run` reads $PROOFBENCH_PROFILES where the project names no file; the benchmark
    # processes must read the same file, or asv's discovery fails on a profile only it declares.
    from types import SimpleNamespace

    from proofbench.pipeline.asv import environment
    from proofbench.profile import FILE_VAR, get_profile

    mine = tmp_path / "mine.toml"
    mine.write_text('[mine]\ndescription = "d"\ndevice = "cpu"\nthreads = 1\nsizes = ["tiny"]\nrounds = 1\n'
                    'repeat = [3, 5, 1.0]\nwarmup_time = 0.0\nprocesses = 2\n')
    monkeypatch.setenv(FILE_VAR, str(mine))
    layout = SimpleNamespace(project=SimpleNamespace(root=tmp_path, profiles=None), sidecar=tmp_path / "s.jsonl",
                             home=tmp_path, workdir=tmp_path)
    assert environment(layout, get_profile("mine"))[FILE_VAR] == str(mine)
    own = tmp_path / "project-profiles.toml"
    layout.project.profiles = own
    assert environment(layout, get_profile("mine"))[FILE_VAR] == str(own)
