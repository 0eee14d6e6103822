"""`proofbench compare`: two machines side by side, from results ingested into SQLite and into a
real PostgreSQL server. One machine is this one without NVML; the other has the H100 profile
of tests/fixtures/nvml_h100.json (through the fake pynvml of test_machine) and the same real
smoke-run results with every time halved, so its throughput is known to be twice as high.
"""
from __future__ import annotations

import datetime as dt
import json
import math

import numpy as np
import pytest
from postgres import db_url, postgres_server, postgres_url  # noqa: F401  (fixtures)
from test_fleet import command, fleet_results, machines
from test_machine import FakeNvml

from proofbench import cli
from proofbench.analysis.comparison import VariantFigures
from proofbench.analysis.hardware import throughput_ratio
from proofbench.cli import compare as compare_command
from proofbench.cli import machine as machine_command
from proofbench.errors import InputError
from proofbench.reports import compare as shown_compare
from proofbench.stats import spread

GPU = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def two_machines(db_url, smoke_run, tmp_path):  # noqa: F811  (the fixture imported above)
    """cpu-box (no NVML) and gpu-box (H100 profile, times halved), ingested into `db_url`."""
    sidecar = str(smoke_run[0].sidecar)
    cpu = fleet_results(smoke_run, tmp_path / "cpu", "cpu-box")
    gpu = fleet_results(smoke_run, tmp_path / "gpu", "gpu-box", nvml=FakeNvml(), time_scale=0.5)
    assert cli.main(["ingest", str(cpu), str(gpu), "--sidecar", sidecar, *machines(cpu, gpu), "--db", db_url]) == 0
    return db_url


def _json(capsys, url: str, *extra: str) -> dict:
    assert command(compare_command, "compare", "cpu-box", "gpu-box", "--format", "json", "--db", url, *extra) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_compare_shows_both_machines_side_by_side(two_machines, capsys):
    doc = _json(capsys, two_machines)
    assert (doc["format"], doc["a"]["name"], doc["b"]["name"], doc["same_commit"]) == (3, "cpu-box", "gpu-box", True)
    assert doc["same_hardware"] is False
    assert doc["benchmarks"] == [] and doc["benchmarks_commit"] is None  # every benchmark here is a subject's
    assert doc["a"]["gpu"] == "none" and doc["a"]["gpu_note"] == "NVML not available: NVML Shared Library Not Found"
    assert doc["b"]["gpu"] == GPU and doc["b"]["gpu_note"] is None
    assert {s["subject"] for s in doc["subjects"]} == {"loading.lmdb_read", "loading.fasta_to_lmdb"}
    intervals = 0
    for subject in doc["subjects"]:
        assert [v["variant"] for v in subject["variants"]] == ["baseline", "optimized"]
        for v in subject["variants"]:
            ratio = v["throughput_ratio"]  # items/s on cpu-box over gpu-box: gpu-box takes half the time
            assert ratio["estimate"] == pytest.approx(0.5), v
            if min(ratio["n_reference"], ratio["n_compared"]) >= 5:  # fewer samples: no interval, no word
                assert ratio["low"] < ratio["samples_low"] <= 0.5 <= ratio["samples_high"] < ratio["high"], v
                assumed = {"fraction": 0.25, "sittings": 0, "assumed": True}
                assert ratio["run_to_run"] == {"a": assumed, "b": assumed}
                # half the speed: "slower" only where it lies beyond what the runs' samples and a run's move hold
                assert ratio["word"] == ("slower" if ratio["high"] < 1 else "inconclusive"), ratio
                intervals += 1
            else:
                assert ratio["low"] is None and ratio["high"] is None and ratio["word"] == "inconclusive"
            assert v["a"]["items_per_second"] == pytest.approx(0.5 * v["b"]["items_per_second"])
            assert ratio["n_reference"] == v["b"]["samples"] and ratio["n_compared"] == v["a"]["samples"]
        a, b = (subject["variants"][1][side]["speedup"] for side in ("a", "b"))
        assert a["estimate"] == pytest.approx(b["estimate"])  # both machines' times were scaled alike
    assert intervals > 0


@pytest.mark.slow
def test_compare_text_json_and_html(two_machines, capsys, tmp_path):
    assert command(compare_command, "compare", "cpu-box", "gpu-box", "--db", two_machines) == 0
    text = capsys.readouterr().out
    assert "cpu-box (A) against gpu-box (B)" in text and f"GPU {GPU}" in text and "NVML not available" in text
    assert "loading.lmdb_read" in text and "0.50x" in text and "\x1b[" not in text
    first, second = (_json(capsys, two_machines) for _ in range(2))
    assert first == second
    out = tmp_path / "compare.json"
    command(compare_command, "compare", "cpu-box", "gpu-box", "--format", "json", "--out", str(out), "--db",
            two_machines)
    assert out.read_text() == json.dumps(first, indent=2, sort_keys=True) + "\n"  # stable bytes
    page = tmp_path / "site" / "compare.html"
    command(compare_command, "compare", "cpu-box", "gpu-box", "--format", "html", "--out", str(page), "--db",
            two_machines)
    html = page.read_text()
    assert "<header><strong>proofbench</strong>" in html  # extends base.html
    assert "cpu-box (A) against gpu-box (B)" in html and GPU in html and "0.50x" in html
    assert "NVML not available: NVML Shared Library Not Found" in html


@pytest.mark.slow
def test_compare_at_a_commit_and_each_latest(two_machines, smoke_run, tmp_path, capsys):
    commit = json.loads(smoke_run[1].results[0].read_text())["commit_hash"]
    later = fleet_results(smoke_run, tmp_path / "later", "gpu-box", nvml=FakeNvml(), commits=("e" * 40,))
    assert cli.main(["ingest", str(later), "--sidecar", str(smoke_run[0].sidecar), *machines(later), "--db",
                     two_machines]) == 0
    latest = _json(capsys, two_machines)
    assert (latest["a"]["commit"], latest["b"]["commit"], latest["same_commit"]) == (commit, "e" * 40, False)
    pinned = _json(capsys, two_machines, "--commit", commit[:8])
    assert pinned["a"]["commit"] == pinned["b"]["commit"] == commit
    assert _json(capsys, two_machines, "--commit", "HEAD")["a"]["commit"] == commit  # a git revision (the run's)
    with pytest.raises(InputError, match="nothing to compare: 'cpu-box' has no results at commit eeeeeeeeeeee"):
        _json(capsys, two_machines, "--commit", "eeee")
    with pytest.raises(InputError, match="commit 'abc123': no results stored at it"):
        _json(capsys, two_machines, "--commit", "abc123")


@pytest.mark.slow
def test_compare_refuses_an_unknown_machine_naming_the_known_ones(two_machines, monkeypatch):
    monkeypatch.setenv("PROOFBENCH_DB", two_machines)  # the database named by the environment, not --db
    with pytest.raises(InputError, match=r"machine 'nope': no results stored for it \(machines with results: "
                                         r"cpu-box, gpu-box\)"):
        command(compare_command, "compare", "cpu-box", "nope")


@pytest.mark.slow
def test_compare_page_escapes_machine_names(smoke_run, sqlite_url, tmp_path):
    hostile = 'box"<script>x<'
    results = fleet_results(smoke_run, tmp_path / "h", hostile)
    other = fleet_results(smoke_run, tmp_path / "o", "plain")
    cli.main(["ingest", str(results), str(other), "--sidecar", str(smoke_run[0].sidecar), *machines(results, other),
              "--db", sqlite_url])
    page = tmp_path / "c.html"
    command(compare_command, "compare", hostile, "plain", "--format", "html", "--out", str(page), "--db", sqlite_url)
    html = page.read_text()
    assert "<script>x" not in html and "&lt;script&gt;x" in html


def _figures(variant: str, samples: tuple[float, ...], status: str = "ok", items: float | None = 10.0,
             reason: str = "") -> VariantFigures:
    return VariantFigures(variant=variant, status=status, reason=reason, time=spread(samples) if samples else None,
                          samples=samples, items=items, speedup=None, peak_memory=None, quality=None,
                          equivalent=None)


def test_throughput_ratio_says_why_it_is_missing():
    ok = _figures("optimized", (1.0, 1.1, 0.9, 1.0, 1.05))
    skipped = _figures("optimized", (), status="skipped", reason="needs a CUDA GPU")
    assert throughput_ratio(ok, None) == (None, "not measured on B")
    assert throughput_ratio(skipped, ok) == (None, "skipped on A: needs a CUDA GPU")
    assert throughput_ratio(ok, _figures("optimized", (), status="ok")) == (None, "no time samples on B")
    assert throughput_ratio(ok, _figures("optimized", (0.5,) * 5, items=20.0)) == (
        None, "not the same work: 10 items per call on A, 20 on B")
    ratio, note = throughput_ratio(ok, _figures("optimized", (0.5, 0.55, 0.45, 0.5, 0.52)))
    assert note == "" and ratio.estimate == pytest.approx(0.5, rel=0.05) and ratio.difference == "slower"


def test_a_ratio_of_two_runs_holds_how_much_a_run_moves():
    # two runs on one machine read "A faster" at 1.31x [1.01, 1.40] from their samples alone, and
    # "no significant difference" at 0.97x [0.93, 1.01] the time before
    from proofbench.analysis.across_runs import ASSUMED_BETWEEN_RUNS, FLOOR, RunToRun, across_runs, run_to_run
    from proofbench.stats import Difference, speedup

    rng = np.random.default_rng(3)

    def samples(level: float, n: int = 5) -> list[float]:
        return (level * np.exp(rng.normal(0, 0.02, n))).tolist()

    night = dt.datetime(2026, 11, 1, 2, tzinfo=dt.UTC)
    values = [1.0, 1.02, 0.99, 1.01, 1.3, 1.31, 1.28, 1.3, 1.32, 1.29]  # about 2%, and one step between commits
    assumed = run_to_run([(night + dt.timedelta(days=i), v) for i, v in enumerate(values[:3])])  # three sittings
    assert (assumed.fraction, assumed.sittings, assumed.assumed) == (ASSUMED_BETWEEN_RUNS, 0, True)
    # one `history` of ten commits, minutes apart: one sitting, which shows nothing of the next one
    assert run_to_run([(night + dt.timedelta(minutes=3 * i), v) for i, v in enumerate(values)]).assumed
    assert run_to_run([(None, v) for v in values]).assumed  # no start times: no sittings to tell
    within = speedup(samples(1.31), samples(1.0))  # A takes 1/1.31 of B's time
    assert within.difference == Difference.FASTER and within.low > 1.2
    guessed = across_runs(within, assumed, assumed)
    assert guessed.difference == Difference.INCONCLUSIVE and guessed.low < 1 < guessed.high
    assert guessed.why == "cannot tell it from no difference"
    # ten nights (the step moves one difference, not the median of them)
    quiet = run_to_run([(night + dt.timedelta(days=i), v) for i, v in enumerate(values)])
    assert not quiet.assumed and quiet.sittings == 10 and FLOOR <= quiet.fraction < 0.04
    still = run_to_run([(night + dt.timedelta(days=i), 1.0) for i in range(6)])  # six equal nights
    assert (still.fraction, still.sittings) == (FLOOR, 6)
    measured = across_runs(within, quiet, quiet)
    assert measured.difference == Difference.FASTER and 1 < measured.low < within.low
    same = across_runs(speedup(samples(1.0, 9), samples(1.0, 9)), RunToRun(0.005, 8), RunToRun(0.005, 8))
    assert same.difference == Difference.NONE and 0.97 < same.low and same.high < 1.03
    few = across_runs(speedup([1.0] * 3, [2.0] * 3), quiet, quiet)
    assert few.difference == Difference.INCONCLUSIVE and few.why == "too few samples" and math.isnan(few.low)


def test_a_sides_variation_is_read_from_its_own_sittings_in_the_environment_shown(sqlite_url):
    # the variation came from whichever row the query gave last, in any environment, and no test
    # read one from a database
    from sqlalchemy.orm import Session

    from proofbench.analysis.hardware import _run_to_run
    from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result
    from proofbench.db.session import connect

    engine = connect(sqlite_url)
    night = dt.datetime(2026, 11, 1, 2, tzinfo=dt.UTC)
    with Session(engine) as session, session.begin():
        bench = Benchmark(name="loading.X.time_call", version="1", subject="loading.x", area="loading",
                          metric="time", unit="seconds", higher_is_better=False, param_names=["variant", "size"])
        machine, envs = Machine(name="m", fingerprint="f", profile={}), [Environment(name="e1"), Environment(name="e2")]
        commits = [Commit(hash=f"{i:040x}", position=i) for i in range(8)]
        session.add_all([bench, machine, *envs, *commits])
        for i, commit in enumerate(commits):
            for env, level, wobble in ((envs[0], 1e-3, 0.2), (envs[1], 2e-3, 0.05)):
                value = level * (1 + wobble * (-1) ** i)
                session.add(Result(benchmark=bench, machine=machine, commit=commit, environment=env, status="ok",
                                   params={"variant": "baseline", "size": "small"}, params_key='["baseline", "small"]',
                                   value=value, samples=[value] * 5, profile="quick",
                                   started_at=night + dt.timedelta(days=i)))
        session.flush()
        newest = commits[-1].id
    with Session(engine) as session:
        moves = _run_to_run(session, session.get(Machine, 1), newest)
    assert set(moves) == {("loading.x", "small", "baseline")}
    shown = moves[("loading.x", "small", "baseline")]
    assert shown.sittings == 8 and 0.05 < shown.fraction < 0.15  # the second environment's 5% swings, not 20%


def test_json_has_no_nan_where_an_interval_is_undefined():
    ratio, _ = throughput_ratio(_figures("baseline", (1.0,)), _figures("baseline", (2.0,)))
    assert ratio.estimate == pytest.approx(2.0) and math.isnan(ratio.low)
    encoded = shown_compare._ratio(ratio)
    assert encoded["low"] is None and encoded["high"] is None and encoded["word"] == "inconclusive"
    json.dumps(encoded, allow_nan=False)  # raises on NaN


def test_cli_registers_machine_and_compare():
    # harness/cli.py lists every command module; these two must be among them.
    assert machine_command in cli.COMMANDS and compare_command in cli.COMMANDS
    parser = cli.build_parser()
    assert parser.parse_args(["compare", "a", "b", "--format", "json"]).handler is compare_command.handle
    assert parser.parse_args(["machine", "--name", "n"]).handler is machine_command.handle


@pytest.mark.slow
def test_compare_one_machine_before_and_after_its_hardware_changed(smoke_run, sqlite_url, tmp_path, capsys):
    sidecar = str(smoke_run[0].sidecar)
    before = fleet_results(smoke_run, tmp_path / "before", "box")
    after = fleet_results(smoke_run, tmp_path / "after", "box", nvml=FakeNvml(), commits=("e" * 40,))
    assert cli.main(["ingest", str(before), "--sidecar", sidecar, *machines(before), "--db", sqlite_url]) == 0
    assert cli.main(["ingest", str(after), "--sidecar", sidecar, *machines(after), "--db", sqlite_url]) == 0
    old = json.loads((before.parent / "machines" / "box.json").read_text())["fingerprint"]
    capsys.readouterr()
    command(compare_command, "compare", f"box@{old[:6]}", "box", "--format", "json", "--db", sqlite_url)
    doc = json.loads(capsys.readouterr().out)
    assert (doc["a"]["fingerprint"], doc["a"]["gpu"]) == (old, "none")
    assert doc["b"]["fingerprint"] != old and doc["b"]["gpu"] == GPU  # plain "box": its newest fingerprint


# -- plain asv benchmarks (any suite's) on two machines, written straight into SQLite ------------------------------

SIZES = ("100", "1000", "200", "20")  # stored order; as text, 1000 sorts before 20, 200 and itself


def plain_suite(url: str) -> str:
    """Two machines (box-a, box-b) with a plain asv benchmark at every size of `SIZES` and two
    variants, at one commit: a database with no proofbench subject, as a plain asv suite's is."""
    from sqlalchemy.orm import Session

    from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result
    from proofbench.db.session import connect

    with Session(connect(url)) as session, session.begin():
        rows = [Machine(name="box-a", fingerprint="fa"), Machine(name="box-b", fingerprint="fb"),
                Environment(name="virtualenv-py3.11"), Commit(hash="c" * 40, subject="One commit"),
                Benchmark(name="benchmarks.Dot.time_dot", version="1", kind="plain", subject="", area="",
                          metric="time", unit="seconds", higher_is_better=False, param_names=["size", "variant"])]
        session.add_all(rows)
        session.flush()
        a, b, env, commit, bench = rows
        for machine, scale in ((a, 1.0), (b, 2.0)):
            for size in SIZES:
                for variant in ("d", "c"):
                    session.add(Result(benchmark_id=bench.id, machine_id=machine.id, commit_id=commit.id,
                                       environment_id=env.id, params={"size": size, "variant": variant},
                                       params_key=json.dumps([size, variant]), status="ok",
                                       value=scale * int(size) * 1e-9))
    return url


def test_compare_lists_parameter_sets_in_the_report_pages_numeric_order(sqlite_url, capsys):
    url = plain_suite(sqlite_url)
    assert command(compare_command, "compare", "box-a", "box-b", "--format", "json", "--db", url) == 0
    shown = [(b["params"]["size"], b["params"]["variant"]) for b in json.loads(capsys.readouterr().out)["benchmarks"]]
    numeric = [(size, variant) for size in ("20", "100", "200", "1000") for variant in ("c", "d")]
    assert shown == numeric  # not 100, 1000, 20, 200
    assert command(compare_command, "compare", "box-a", "box-b", "--db", url) == 0
    text = capsys.readouterr().out
    rows = [text.index(f"size={size}, variant={variant}") for size, variant in numeric]
    assert rows == sorted(rows)
    assert "one value each, no interval" in " ".join(text.split())  # asv's one value a machine: no spread to give


def _hrefs(page) -> list[str]:
    import re

    return re.findall(r'(?:href|src)="([^"]*)"', page.read_text())


def test_compare_page_outside_a_project_stands_on_its_own(sqlite_url, tmp_path, monkeypatch):
    from proofbench.reports.render import STATIC_DIR

    url = plain_suite(sqlite_url)
    monkeypatch.delenv("PROOFBENCH_PROJECT", raising=False)
    monkeypatch.chdir(tmp_path)  # no proofbench.toml here nor above: no site to link to
    page = tmp_path / "out" / "cmp.html"
    assert command(compare_command, "compare", "box-a", "box-b", "--format", "html", "--out", str(page),
                   "--db", url) == 0
    html = page.read_text()
    assert _hrefs(page) == []  # no stylesheet link, no navigation to pages that are not there
    assert "<header><strong>proofbench</strong>" in html and "box-a (A) against box-b (B)" in html
    css = (STATIC_DIR / "site.css").read_text()
    assert f"<style>\n{css}" in html  # inlined whole, not escaped ("&gt;" would break a selector)
    assert "size=20, variant=c" in html


def test_compare_page_beside_a_rendered_site_links_into_it(sqlite_url, tmp_path):
    from sqlalchemy.orm import Session

    from proofbench.analysis.hardware import compare
    from proofbench.db.session import connect
    from proofbench.reports.render import render

    engine = connect(plain_suite(sqlite_url))
    site = tmp_path / "site"
    render(engine, site)
    with Session(engine) as session:
        comparison = compare(session, "box-a", "box-b")
    for page in (site / "compare.html", tmp_path / "elsewhere" / "cmp.html"):
        page.parent.mkdir(exist_ok=True)
        page.write_text(shown_compare.html(comparison, site=site, out=page))
        links = _hrefs(page)
        assert any(link.endswith("static/site.css") for link in links) and "<style>" not in page.read_text()
        assert len(links) == 6 and all((page.parent / link).is_file() for link in links), links
    # a project whose site has not been rendered yet: nothing to link to, so the page stands on its own
    alone = tmp_path / "alone.html"
    alone.write_text(shown_compare.html(comparison, site=tmp_path / "not-rendered", out=alone))
    assert _hrefs(alone) == [] and "<style>" in alone.read_text()
