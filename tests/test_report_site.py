"""The HTML report: pages, links, escaping, file names, commit order, charts, change points.

A small database is built row by row (no asv run): three areas, two machines, one subject and
one machine with hostile names, one hostile commit message, a step in one history, a failed
run and a claim whose subject has no results; and two plain asv benchmarks (no subject): one
with two parameters, a hostile value among them, a version change and a step, one without
parameters under a hostile name. test_report_browser.py opens the same site in a real browser.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from postgres import db_url, postgres_server, postgres_url  # noqa: F401  (fixtures)
from sqlalchemy import select
from sqlalchemy.orm import Session

from proofbench.db.commits import basis, ordered
from proofbench.db.models import Benchmark, ClaimRow, Commit, Environment, Machine, Result
from proofbench.db.profiles import CalibrationRow, VariantProfileRow
from proofbench.db.session import connect
from proofbench.errors import InputError
from proofbench.machine.calibrate import Calibration, Timing
from proofbench.reports import changes, charts, queries
from proofbench.reports.output import SiteWriter, slug
from proofbench.reports.render import render

HOSTILE_SUBJECT = '../../<script>window.__pwned=1</script>"\'x'
HOSTILE_MACHINE = '../<img src=x onerror="window.__pwned=2">'
HOSTILE_COMMIT = 'Speed up "loader" <script>window.__pwned=3</script>'
COMMITS = 30
STEP_AT = 20  # lmdb_read's optimized variant gets 40% slower at this commit
FAILED_AT = 10  # batch_tokenize's baseline failed at this commit
START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)

SUBJECTS = (  # subject, area, baseline seconds, speedup, tracks memory
    ("loading.lmdb_read", "loading", 2e-3, 4.0, True),
    ("tokenization.batch_tokenize", "tokenization", 5e-2, 3.0, False),
    ("inference." + HOSTILE_SUBJECT, "inference", 1e-2, 1.0, False),
)
CLAIMS = (
    ("loading.lmdb_read/speed", "loading.lmdb_read", "speedup", "time", 5.0, "| Data Loading | **5x faster** |"),
    ("tokenization.batch_tokenize/speed", "tokenization.batch_tokenize", "speedup", "time", 2.0,
     "~500 -> ~2,000 seq/s"),
    ("training.compile/speed", "training.compile", "speedup", "time", 1.3, "up to 30% faster"),
)


def _machines(session: Session) -> list[Machine]:
    plain = {"format": 1, "name": "ci-box", "cpu_model": "Test CPU 9000", "arch": "x86_64", "physical_cores": 2,
             "logical_cores": 4, "ram_total_bytes": 8 * 2**30, "os": "Linux", "os_release": "Debian 12",
             "kernel": "6.1", "python_version": "3.11.7", "torch_version": "2.13.0+cpu", "gpus": [],
             "gpu_note": "no GPU: NVML not available", "fingerprint": "aaaa"}
    gpu = {**plain, "name": HOSTILE_MACHINE, "cpu_model": HOSTILE_MACHINE, "fingerprint": "bbbb",
           "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_bytes": 85520809984,
                     "driver_version": "550.90.07", "compute_capability": [9, 0], "power_limit_mw": 700000}],
           "gpu_note": None}
    rows = [Machine(name="ci-box", fingerprint="aaaa", profile=plain),
            Machine(name=HOSTILE_MACHINE, fingerprint="bbbb", profile=gpu)]
    session.add_all(rows)
    return rows


def _hash(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def _commits(session: Session) -> list[Commit]:
    # Inserted newest first, so row ids run against first-parent order.
    rows = [Commit(hash=_hash(i), subject=HOSTILE_COMMIT if i == STEP_AT else f"Change number {i}",
                   author="tester", committed_at=START + dt.timedelta(hours=i), position=i, branch="main")
            for i in reversed(range(COMMITS))]
    session.add_all(rows)
    return sorted(rows, key=lambda c: c.position)


def _benchmarks(session: Session) -> dict[tuple[str, str], Benchmark]:
    out = {}
    for subject, area, _, _, memory in SUBJECTS:
        details = {"description": f"what {subject} does",
                   "variants": {"baseline": {"description": "naive", "requires": []},
                                "optimized": {"description": "as documented", "requires": []}},
                   "equivalence": {"metric": "max_abs_diff", "tolerance": 1e-3, "higher_is_better": False,
                                   "description": "same output"}, "rates": []}
        metrics = [("time_call", "time", "seconds", False), ("track_items", "items", "sequences", True),
                   ("track_quality", "max_abs_diff", "", False), ("track_speedup", "speedup", "x", True)]
        metrics += [("track_peak_memory", "peak_memory", "bytes", False)] if memory else []
        for method, metric, unit, better in metrics:
            out[(subject, metric)] = Benchmark(name=f"{area}.S{len(out)}.{method}", version="1", subject=subject,
                                               area=area, metric=metric, unit=unit, higher_is_better=better,
                                               item="sequence", param_names=["variant", "size"], details=details)
    session.add_all(out.values())
    return out


def _result(bench, machine, commit, env, variant, value, samples=None, status="ok", **extra) -> Result:
    return Result(benchmark=bench, machine=machine, commit=commit, environment=env, status=status,
                  params={"variant": variant, "size": "small"}, params_key=f'["{variant}", "small"]',
                  value=value, samples=samples, profile="quick", threads=1, started_at=commit.committed_at,
                  **extra)


def _series(session, benches, machine, commits, env, rng) -> None:
    for subject, _, base, speed, memory in SUBJECTS:
        for variant in ("baseline", "optimized"):
            level = base if variant == "baseline" else base / speed
            for i, commit in enumerate(commits):
                slower = 1.4 if (subject == "loading.lmdb_read" and variant == "optimized" and i >= STEP_AT) else 1
                samples = (level * slower * np.exp(rng.normal(0, 0.01, 7))).tolist()
                if subject.startswith("tokenization") and variant == "baseline" and i == FAILED_AT:
                    session.add(_result(benches[(subject, "time")], machine, commit, env, variant, None,
                                        status="failed", reason="killed: out of memory"))
                else:
                    session.add(_result(benches[(subject, "time")], machine, commit, env, variant,
                                        float(np.median(samples)), samples))
                session.add(_result(benches[(subject, "items")], machine, commit, env, variant, 1000.0))
                if memory:
                    session.add(_result(benches[(subject, "peak_memory")], machine, commit, env, variant,
                                        2**20 * (80 if variant == "baseline" else 40)))
            quality = benches[(subject, "max_abs_diff")]
            session.add(_result(quality, machine, commits[-1], env, variant,
                                None if variant == "baseline" else 1e-6,
                                status="skipped" if variant == "baseline" else "ok",
                                equivalent=None if variant == "baseline" else True))
            if variant != "baseline":  # the newest commit's speedup, measured in alternating rounds
                slower = 1.4 if subject == "loading.lmdb_read" else 1
                rounds = _rounds(base, speed / slower, rng)
                session.add(_result(benches[(subject, "speedup")], machine, commits[-1], env, variant,
                                    speed / slower, rounds=rounds, equivalent=True))


def _rounds(base: float, speed: float, rng) -> dict:
    # ten rounds of one call per side, 1% noise: a paired document as measure.pairing writes it
    rows = [{"a": [1, base * float(np.exp(rng.normal(0, 0.01))), 0.0],
             "b": [1, base / speed * float(np.exp(rng.normal(0, 0.01))), 0.0], "first": "ab"[i % 2], "process": 0}
            for i in range(10)]
    return {"version": 1, "plan": {"budget": 4.0, "precision": 0.05, "min_rounds": 5, "block": 0.1,
                                   "max_rounds": 400, "heavy": 2.0},
            "rounds": rows, "checks": {"baseline": [[0, 0.0], [9, 0.0]], "variant": [[-1, 1e-6], [9, 1e-6]],
                                       "states": []}, "seconds": 1.0}


def _calibration_document() -> dict:
    # float32 at exactly 100 GFLOP/s (n=256) and a 20 GB/s copy; float16 not available.
    n, copied = 256, 2**28
    timings = (Timing("matmul", "float32", n, 2.0 * n**3, (2.0 * n**3 / 100e9, 2.0 * n**3 / 90e9)),
               Timing("copy", "bytes", copied, 2.0 * copied, (2.0 * copied / 20e9,)))
    return Calibration("cpu", 1, "2.13.0+cpu", timings, {"float16": "not available here: test"}, 1.5).to_dict()


def _trace(traces: Path | None, subject: str, variant: str) -> str:
    path = (traces or Path("/nonexistent-traces")) / slug(subject) / f"{variant}.trace.json"
    if traces is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"traceEvents": [{"name": "x", "ph": "X", "ts": 0, "dur": 1, "pid": 1, "tid": 0}]}))
    return str(path)


def _why(session: Session, machine: Machine, traces: Path | None) -> None:
    """Calibration and profiles on the first machine: lmdb_read data-bound, the hostile subject compute-bound
    with its optimized variant above the measured peak (a measurement problem the page must flag)."""
    session.add(CalibrationRow(machine=machine, device="cpu", threads=1, torch_version="2.13.0+cpu",
                               document=_calibration_document()))
    ops = {"baseline": [("Transaction.get (<built-in>:0)", 1.5e-3), ("bytes.decode (<built-in>:0)", 3e-4)],
           "optimized": [("batches (subjects/lmdb_store.py:183)", 4e-4), ("bytes.decode (<built-in>:0)", 1e-4)]}
    for variant, rows in ops.items():
        session.add(VariantProfileRow(
            machine=machine, subject="loading.lmdb_read", size="small", variant=variant, device="cpu", threads=1,
            status="ok", bound="data", kind="python", items=1000, call_seconds=1e-3, bytes_moved=1e6,
            energy_joules=2.0 if variant == "optimized" else None, energy_calls=100 if variant == "optimized" else 0,
            energy_source="rapl" if variant == "optimized" else "none",
            energy_caveat="RAPL counts the whole CPU package" if variant == "optimized" else "",
            energy_reason="" if variant == "optimized" else "no RAPL: test machine",
            operators=[{"name": n, "calls": None, "self_seconds": t, "total_seconds": t, "self_device_seconds": None,
                        "self_memory_bytes": None} for n, t in rows],
            traces={"python": _trace(traces, "loading.lmdb_read", variant)}))
    # profiled again at another thread count than the results': not the one the page sets against them
    session.add(VariantProfileRow(machine=machine, subject="loading.lmdb_read", size="small", variant="baseline",
                                  device="cpu", threads=2, status="ok", bound="data", kind="python",
                                  operators=[{"name": "stale_at_two_threads", "calls": None, "self_seconds": 1.0,
                                              "total_seconds": 1.0, "self_device_seconds": None,
                                              "self_memory_bytes": None}]))
    hostile = "inference." + HOSTILE_SUBJECT
    for variant, flops in (("baseline", 0.5e9), ("optimized", 2e9)):  # 50 and 200 GFLOP/s at 10 ms a call
        session.add(VariantProfileRow(
            machine=machine, subject=hostile, size="small", variant=variant, device="cpu", threads=1, status="ok",
            bound="compute", kind="torch", items=1000, call_seconds=1e-2, flops={"float32": flops},
            energy_reason="no RAPL: test machine", traces={"torch": _trace(traces, hostile, variant)},
            operators=[{"name": "aten::addmm", "calls": 4, "self_seconds": 8e-3, "total_seconds": 9e-3,
                        "self_device_seconds": None, "self_memory_bytes": 0}]))


PLAIN = "suite.TimeSort.time_sort"  # (n, kind); its asv version changes at commit VERSION_AT
PLAIN_HOSTILE = "suite." + HOSTILE_SUBJECT
PLAIN_KINDS = ("'quick'", "'<b>merge</b>'")
VERSION_AT = 15


def _plain(session: Session, machines: list[Machine], commits: list[Commit], env: Environment, rng) -> None:
    """Plain asv benchmarks: time_sort 30% slower from STEP_AT for n=1000, kind=quick on the first
    machine; a hostile track benchmark without parameters."""
    versions = [Benchmark(name=PLAIN, version=v, kind="plain", subject="", area="", metric="time", unit="seconds",
                          higher_is_better=False, param_names=["n", "kind"], details={"type": "time"})
                for v in ("v1", "v2")]
    track = Benchmark(name=PLAIN_HOSTILE, version="t", kind="plain", subject="", area="", metric="track",
                      unit="widgets", higher_is_better=False, param_names=[], details={"type": "track"})
    session.add_all([*versions, track])
    for machine in machines:
        for i, commit in enumerate(commits):
            bench = versions[i >= VERSION_AT]
            for n in ("10", "1000"):
                for kind in PLAIN_KINDS:
                    shown = kind.strip("'")
                    slower = 1.3 if (machine is machines[0] and n == "1000" and shown == "quick" and i >= STEP_AT) else 1
                    value = float(int(n) * 1e-6 * slower * np.exp(rng.normal(0, 0.005)))
                    session.add(Result(benchmark=bench, machine=machine, commit=commit, environment=env, status="ok",
                                       params={"n": n, "kind": shown}, params_key=json.dumps([n, shown]), value=value,
                                       started_at=commit.committed_at))
            session.add(Result(benchmark=track, machine=machine, commit=commit, environment=env, status="ok",
                               params={}, params_key="[]", value=float(5 + rng.normal(0, 0.01))))


def make_db(url: str, traces: Path | None = None) -> None:
    """Fill the database at `url` (migrated) with the test site's data; profile traces are written
    under `traces` (without it, the profiles name trace files that do not exist)."""
    engine = connect(url)
    rng = np.random.default_rng(7)
    with Session(engine) as session, session.begin():
        machines = _machines(session)
        commits = _commits(session)
        env = Environment(name="existing-py3.11")
        benches = _benchmarks(session)
        for machine in machines:
            _series(session, benches, machine, commits, env, rng)
        _plain(session, machines, commits, env, rng)
        _why(session, machines[0], traces)
        session.add_all(ClaimRow(id=cid, subject=subject, variant="optimized", source="000_seed.txt", quote=quote,
                                 kind=kind, metric=metric, low=low, high=low, device="any", note="")
                        for cid, subject, kind, metric, low, quote in CLAIMS)


def make_site(where: Path) -> Path:
    """Build the test database in `where` and render its site into `where`/site."""
    url = f"sqlite:///{where / 'report.sqlite'}"
    make_db(url, where.with_name(where.name + "-traces"))
    render(connect(url), where / "site")
    return where / "site"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The rendered test site (SQLite), made once for this module; the output directory."""
    return make_site(tmp_path_factory.mktemp("report"))


def _pages(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*.html")}


def test_every_page_is_written_inside_the_output_directory(site):
    pages = _pages(site)
    assert {"index.html", "claims.html", "machines.html", "regressions.html", "commits.html"} <= set(pages)
    subject_pages = sorted(p for p in pages if p.startswith("subjects/"))
    assert len(subject_pages) == len(SUBJECTS)
    assert "subjects/loading.lmdb_read.html" in subject_pages
    assert all(re.fullmatch(r"subjects/[A-Za-z0-9_-][A-Za-z0-9._-]*\.html", p) for p in subject_pages)
    outside = [p for p in site.parent.rglob("*") if p.is_file() and site not in p.parents
               and not p.name.startswith("report.sqlite")]
    assert outside == []


def test_hostile_names_show_as_text_never_as_markup(site):
    for name, html in _pages(site).items():
        assert "<script>window" not in html and "<img src=x" not in html, name
    index = (site / "index.html").read_text()
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in index
    assert "&lt;img src=x onerror=" in index
    commits = (site / "commits.html").read_text()
    assert "Speed up &#34;loader&#34; &lt;script&gt;window.__pwned=3&lt;/script&gt;" in commits


def test_slugs_are_safe_distinct_and_stable():
    names = ["loading.lmdb_read", "../x", "..", "a/b", "a_b", "<script>", "", "x" * 500]
    slugs = [slug(n) for n in names]
    assert slugs[0] == "loading.lmdb_read"
    assert len(set(slugs)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*", s) and len(s) < 100 for s in slugs)
    assert slug("../x") == slug("../x")


def test_writer_refuses_paths_outside_its_root_and_case_collisions(tmp_path):
    writer = SiteWriter(tmp_path / "out")
    with pytest.raises(InputError, match="outside"):
        writer.write("../escape.html", "x")
    assert not (tmp_path / "escape.html").exists()
    first, second = writer.page_name("subjects", "Loading.X"), writer.page_name("subjects", "loading.x")
    assert first.lower() != second.lower()
    assert writer.page_name("subjects", "Loading.X") == first


def test_commit_order_is_position_then_commit_time_then_ingest_order(tmp_path):
    engine = connect(f"sqlite:///{tmp_path / 'order.sqlite'}")
    with Session(engine) as session, session.begin():
        late, early = START + dt.timedelta(days=2), START + dt.timedelta(days=1)
        commits = [Commit(hash="c-no-date-1"), Commit(hash="b-dated-late", committed_at=late),
                   Commit(hash="a-placed-1", position=1, committed_at=START),
                   Commit(hash="d-dated-early", committed_at=early), Commit(hash="e-placed-0", position=0),
                   Commit(hash="f-no-date-2")]
        bench = Benchmark(name="loading.X.time_call", version="1", subject="loading.x", area="loading",
                          metric="time", unit="seconds", higher_is_better=False)
        machine, env = Machine(name="m", fingerprint="f", profile={}), Environment(name="e")
        session.add_all([*commits, bench, machine, env])
        for c in commits:
            session.add(_result(bench, machine, c, env, "baseline", 1.0, [1.0]))
    with Session(engine) as session:
        order = [c.hash for c in ordered(session)]
    assert order == ["e-placed-0", "a-placed-1", "d-dated-early", "b-dated-late", "c-no-date-1", "f-no-date-2"]


def test_an_amended_commit_and_one_known_only_from_asv_are_ordered_by_the_same_clock(tmp_path):
    # asv records a commit's author date; an amended commit's commit date is later than its author
    # date: the commit asv dated a minute after the amended one's author date comes after it
    engine = connect(f"sqlite:///{tmp_path / 'clock.sqlite'}")
    with Session(engine) as session, session.begin():
        amended = Commit(hash="a-amended", authored_at=START, committed_at=START + dt.timedelta(minutes=10))
        later = Commit(hash="b-from-asv", results_date=START + dt.timedelta(minutes=1))
        bench = Benchmark(name="loading.X.time_call", version="1", subject="loading.x", area="loading",
                          metric="time", unit="seconds", higher_is_better=False)
        machine, env = Machine(name="m", fingerprint="f", profile={}), Environment(name="e")
        session.add_all([later, amended, bench, machine, env])
        for c in (later, amended):
            session.add(_result(bench, machine, c, env, "baseline", 1.0, [1.0]))
    with Session(engine) as session:
        commits = ordered(session)
        assert [c.hash for c in commits] == ["a-amended", "b-from-asv"]
        assert basis(commits) == ("commit dates", "results' dates")


def test_history_is_one_series_per_machine_benchmark_and_parameters(db_url):
    make_db(db_url)
    with Session(connect(db_url)) as session:
        history = queries.history(session)
    # machines x variants x (time, items, quality per subject + memory), and the optimized variant's
    # paired speedup per machine and subject
    assert len(history.series) == 2 * 2 * (3 * 3 + 1) + 2 * 3
    assert len(history.plain) == 2 * (2 * 4 + 1)  # machines x (versions x combinations + the track benchmark)
    assert {s.params for s in history.plain} == {("10", "quick"), ("10", "<b>merge</b>"), ("1000", "quick"),
                                                 ("1000", "<b>merge</b>"), ()}
    failed = next(s for s in history.series if s.benchmark.subject.startswith("tokenization")
                  and s.benchmark.metric == "time" and s.variant == "baseline" and s.machine_id == 1)
    assert failed.ranks == list(range(COMMITS))
    assert math.isnan(failed.values[FAILED_AT]) and failed.reasons == {FAILED_AT: "killed: out of memory"}
    assert all(not math.isnan(v) for i, v in enumerate(failed.values) if i != FAILED_AT)


def test_render_works_on_sqlite_and_postgresql(db_url, tmp_path):
    make_db(db_url)
    index = render(connect(db_url), tmp_path / "pg-site")
    html = index.read_text()
    assert "loading.lmdb_read" in html and "x</strong>" in html


def test_index_is_a_matrix_of_subjects_by_area_and_machine(site):
    html = (site / "index.html").read_text()
    areas = re.findall(r'<tbody data-area="([^"]+)">', html)
    assert areas == ["loading", "tokenization", "inference"]  # declared order, not alphabetical
    assert html.count('<td class="cell ') == len(SUBJECTS) * 2
    assert re.search(r'<strong class="factor">\d+\.\d\dx</strong> <span class="small">\[\d', html)
    assert 'id="f-area"' in html and 'id="f-machine"' in html
    assert "quick" in html and _hash(COMMITS - 1)[:10] in html  # profile and newest commit of the data
    assert '<th class="num">results at that commit</th>' in html  # the newest commit's, not the machine's all
    # lmdb_read's optimized variant reaches ~2.9x against a 5x claim: faster, short of the promise
    row = html[html.index("loading.lmdb_read.html"):html.index("tokenization.batch_tokenize.html")]
    assert "cell v-partly" in row and "5x faster" in row


def test_claims_ledger_lists_every_claim_with_quote_source_and_verdict(site):
    html = (site / "claims.html").read_text()
    for cid, subject, _, _, _, quote in CLAIMS:
        assert f'id="claim-{slug(cid)}"' in html
        assert quote.replace(">", "&gt;") in html
    assert html.count("000_seed.txt") == len(CLAIMS)
    assert "not measured" in html and "no result for this subject on this machine" in html
    assert "partly" in html and "reproduced" in html


def test_subject_page_has_charts_with_units_and_the_marked_step(site):
    html = (site / "subjects" / "loading.lmdb_read.html").read_text()
    for label in (r"time per call \(ms\)", r"throughput \([kM] sequences/s\)", r"peak memory \(MiB\)",
                  r"speedup \(×\)"):
        assert re.search(label, html), label
    assert html.count("<svg") == 2 * 5  # per machine: raw samples, time, throughput, memory, speedup
    assert "claimed 5× (optimized, 000_seed.txt)" in html
    assert _hash(STEP_AT)[:10] in html and "regression (open)" in html
    assert 'class="mark regression"' in html


def test_regressions_page_links_each_open_regression_to_its_commit_and_chart(site):
    html = (site / "regressions.html").read_text()
    opened = html[html.index("Open regressions"):html.index("Recent improvements")]
    assert opened.count("<tr>\n<td>") == 3  # lmdb_read optimized on both machines, time_sort on one
    assert 'href="commits.html#c' in opened and "subjects/loading.lmdb_read.html#m" in opened
    assert f"benchmarks/{PLAIN}.html#m1-e1-" in opened and "n=1000, kind=quick" in opened
    assert "+40" in opened or "+39" in opened or "+41" in opened


def test_machines_page_puts_profiles_side_by_side(site):
    html = (site / "machines.html").read_text()
    assert "Test CPU 9000" in html and "NVIDIA H100 80GB HBM3" in html and "8 GiB" in html
    assert "no GPU: NVML not available" in html


def test_empty_database_renders_a_helpful_index(tmp_path):
    index = render(connect(f"sqlite:///{tmp_path / 'empty.sqlite'}"), tmp_path / "site")
    assert "No results yet" in index.read_text()
    assert (tmp_path / "site" / "claims.html").exists()


def test_value_axis_picks_units_and_log_scale():
    _, ticks, label = charts.value_axis(charts.Quantity("seconds", "time per call ({unit})"), [0.012, 0.018], 200, 0)
    assert label == "time per call (ms)" and all(re.fullmatch(r"\d+(\.\d+)?", t.label) for t in ticks)
    scale, ticks, _ = charts.value_axis(charts.Quantity("seconds", "t ({unit})"), [1e-4, 1e-1], 200, 0)
    assert scale.log and [t.label for t in ticks] == ["0.1", "1", "10", "100"]  # ms, one per decade
    scale, ticks, _ = charts.value_axis(charts.Quantity("seconds", "t ({unit})"), [1e-3, 2e-2], 200, 0)
    assert scale.log and [t.label for t in ticks] == ["1", "2", "5", "10", "20"]
    scale, _, label = charts.value_axis(charts.Quantity("bytes", "peak memory ({unit})"), [3 * 2**20], 200, 0)
    assert not scale.log and label == "peak memory (MiB)"


def test_line_chart_breaks_its_line_where_a_run_failed():
    plot = charts.Plot("baseline", "c0", [0, 1, 2, 3, 4], [1.0, 2.0, math.nan, 3.0, 4.0])
    chart = charts.line_chart("x", "T", charts.Quantity("seconds", "t ({unit})"), [plot], [(0, "a")], "commit")
    assert len(chart.lines[0].paths) == 2 and len(chart.failures) == 1


def test_stored_alerts_are_shown_when_a_check_has_run(tmp_path):
    from proofbench.db import alerts

    url = f"sqlite:///{tmp_path / 'alerts.sqlite'}"
    make_db(url)
    engine = connect(url)
    with Session(engine) as session, session.begin():
        run = alerts.CheckRun(branch="main")
        session.add(run)
        session.flush()
        bench = session.scalars(select(Benchmark).where(Benchmark.subject == "tokenization.batch_tokenize",
                                                        Benchmark.metric == "time")).one()
        commit = session.scalars(select(Commit).where(Commit.position == 5)).one()
        session.add(alerts.Alert(machine_id=1, environment_id=1, benchmark_id=bench.id,
                                 params_key='["baseline", "small"]', params={}, commit_id=commit.id, direction=1,
                                 regression=True, before=0.05, after=0.0777, p_value=1e-4, score=9.0,
                                 status="open", raised_by_id=run.id, seen_by_id=run.id))
    render(engine, tmp_path / "site")
    html = (tmp_path / "site" / "regressions.html").read_text()
    opened = html[html.index("Open regressions"):html.index("Recent improvements")]
    assert opened.count("<tr>\n<td>") == 1 and "+55.4%" in opened and "tokenization.batch_tokenize" in opened
    assert "check #" in html


def test_detection_in_worker_processes_matches_detection_in_process(monkeypatch):
    rng = np.random.default_rng(3)
    jobs = []
    for k in range(5):  # job k steps up 30% at commit 20 + 5k
        values = np.exp(rng.normal(0, 0.01, 60)) * np.where(np.arange(60) >= 20 + 5 * k, 1.3, 1.0)
        jobs.append(changes.Job(list(range(100, 160)), values.tolist(), higher_is_better=False))
    serial = changes.Detection(jobs).result()
    monkeypatch.setattr(changes, "PARALLEL_MIN_POINTS", 0)
    monkeypatch.setattr(changes.os, "cpu_count", lambda: 2)
    detection = changes.Detection(jobs)
    assert detection._pool is not None  # really in worker processes
    parallel = detection.result()
    assert parallel == serial
    assert [[s.rank for s in steps] for steps in parallel] == [[120 + 5 * k] for k in range(5)]
    assert all(s.regression and s.open for steps in parallel for s in steps)
    changes.Detection(jobs).close()  # given up before its result: the workers stop


def test_a_weak_step_is_marked_apart_and_never_open():
    # a machine that is sometimes 12% slower, and a 5% slowdown at commit 30: found by the
    # detector's sensitive pass, short of the gates an alert needs
    rng = np.random.default_rng(0)
    y = rng.normal(0.0, 0.015, 60) + (rng.random(60) < 0.3) * math.log(1.12)
    y[30:] += math.log(1.05)
    ((step,),) = changes.Detection([changes.Job(list(range(60)), np.exp(y).tolist(), higher_is_better=False)]).result()
    assert (step.rank, step.regression, step.weak, step.open, step.mark) == (30, True, True, False, "weak")
    flat = np.exp(np.random.default_rng(1).normal(0.0, 0.002, 60)) * np.where(np.arange(60) >= 30, 1.02, 1.0)
    assert changes.Detection([changes.Job(list(range(60)), flat.tolist(), False)]).result() == [[]]  # under 3%


def test_each_environment_of_a_machine_shows_its_own_newest_run(tmp_path):
    # `proofbench run` measures in the existing environment, `history` in a virtualenv: the
    # existing environment's section showed the virtualenv's newest figures under its own heading
    import re

    engine = connect(f"sqlite:///{tmp_path / 'envs.sqlite'}")
    with Session(engine) as session, session.begin():
        commits = [Commit(hash=f"{i}" * 40, position=i, committed_at=START + dt.timedelta(days=i)) for i in range(3)]
        bench = Benchmark(name="loading.X.time_call", version="1", subject="loading.x", area="loading",
                          metric="time", unit="seconds", higher_is_better=False, param_names=["variant", "size"])
        machine = Machine(name="m", fingerprint="f", profile={})
        existing, virtualenv = Environment(name="existing-py3.11"), Environment(name="virtualenv-py3.11")
        session.add_all([*commits, bench, machine, existing, virtualenv])
        for variant, value in (("baseline", 1.65e-3), ("optimized", 0.44e-3)):
            session.add(_result(bench, machine, commits[0], existing, variant, value, [value] * 3))
        for commit in commits:
            for variant, value in (("baseline", 1.5e-3), ("optimized", 0.908e-3)):
                session.add(_result(bench, machine, commit, virtualenv, variant, value, [value] * 3))
    render(engine, tmp_path / "site")
    page = (tmp_path / "site" / "subjects" / "loading.x.html").read_text()
    sections = dict(re.findall(r"environment ([\w.-]+)</h3>(.*?)</section>", page, re.S))
    assert set(sections) == {"existing-py3.11", "virtualenv-py3.11"}
    assert f"Newest run: commit <code>{'0' * 10}</code>" in sections["existing-py3.11"]
    assert "440" in sections["existing-py3.11"] and "908" not in sections["existing-py3.11"]
    assert f"Newest run: commit <code>{'2' * 10}</code>" in sections["virtualenv-py3.11"]
    assert "908" in sections["virtualenv-py3.11"] and "440" not in sections["virtualenv-py3.11"]


def test_a_machine_column_takes_each_subject_from_one_environment(tmp_path):
    # two asv environments (say two torch versions) measured every commit: the index's column
    # read the first rows the query gave, its timing and its speedup possibly from different ones
    import re

    def shown(newest_in: tuple[int, ...]) -> list[str]:
        engine = connect(f"sqlite:///{tmp_path / f'envs{len(newest_in)}.sqlite'}")
        with Session(engine) as session, session.begin():
            commits = [Commit(hash=f"{i}" * 40, position=i, committed_at=START + dt.timedelta(days=i))
                       for i in range(3)]
            bench = Benchmark(name="loading.X.time_call", version="1", subject="loading.x", area="loading",
                              metric="time", unit="seconds", higher_is_better=False, param_names=["variant", "size"])
            machine = Machine(name="m", fingerprint="f", profile={})
            envs = [Environment(name="virtualenv-py3.11-torch2.12"), Environment(name="virtualenv-py3.11-torch2.13")]
            session.add_all([*commits, bench, machine, *envs])
            for commit in commits:
                for e, levels in enumerate(((1.65e-3, 0.44e-3), (1.5e-3, 0.908e-3))):  # x3.75, x1.65
                    for variant, value in zip(("baseline", "optimized"), levels):
                        if commit.position < 2 or e in newest_in:
                            session.add(_result(bench, machine, commit, envs[e], variant, value, [value] * 3))
        render(engine, tmp_path / "site")
        return re.findall(r'class="factor">([\d.]+x)<', (tmp_path / "site" / "index.html").read_text())

    assert shown((0, 1)) == ["1.65x"]  # both measured the newest commit: the one stored last
    assert shown((0,)) == ["3.75x"]  # the one that measured the newest commit


def test_a_machine_known_only_from_asv_has_its_gpus_unknown_not_none():
    # asv's machine.json names no GPUs: the report must not say the machine has none
    from proofbench.reports.machines import column, profile_rows

    asv_only = Machine(id=1, name="gha-aws-skylake", fingerprint="f", profile={"machine": "gha-aws-skylake"})
    captured = Machine(id=2, name="box", fingerprint="g", profile={"cpu_model": "EPYC", "gpus": []})
    assert dict(profile_rows([asv_only, captured]))["GPUs"] == ["—", "none"]
    assert [column(m, m.name, [], [], None, None).hardware for m in (asv_only, captured)] == [
        "CPU unknown; GPU unknown", "EPYC; no GPU"]


def test_a_machine_whose_hardware_changed_is_a_second_column_named_by_fingerprint():
    from proofbench.reports.machines import labels, profile_rows

    old = Machine(id=1, name="box", fingerprint="11112222aaaa", profile={"cpu_model": "old CPU", "gpus": []})
    new = Machine(id=2, name="box", fingerprint="33334444bbbb", previous_id=1,
                  profile={"cpu_model": "new CPU", "gpus": "not a list", "odd_key": {"x": 1}})
    assert labels([old, new]) == {1: "box (11112222)", 2: "box (33334444)"}
    rows = dict(profile_rows([old, new]))
    assert rows["CPU"] == ["old CPU", "new CPU"] and rows["GPUs"] == ["none", "—"]  # a list of none; not a list
    assert rows["odd_key"] == ["—", '{"x": 1}']
    assert rows["replaces (hardware changed)"] == ["—", "box (11112222)"]


def test_subject_page_links_traces_and_shows_operators_side_by_side(site):
    html = (site / "subjects" / "loading.lmdb_read.html").read_text()
    for variant in ("baseline", "optimized"):
        href = f"../profiles/loading.lmdb_read/small/{variant}.trace.json"
        assert f'href="{href}"' in html and (site / "subjects" / href).resolve().is_file()
    table = html[html.index('<table class="operators">'):]
    table = table[:table.index("</table>")]
    assert table.index("Transaction.get") < table.index("batches (subjects/lmdb_store.py:183)")  # baseline order
    assert "1.5 ms" in table and "—" in table  # an operator absent from the other variant's top rows
    assert "stale_at_two_threads" not in html  # the profile at the results' thread count is the one shown
    # data-bound: bytes/s of the newest results' median against the 20 GB/s copy
    assert "of this machine&#39;s measured memory bandwidth" in html and "median of the newest results" in html
    assert "not measurable here" in html and "no RAPL: test machine" in html
    assert "20 µJ" in html and "RAPL counts the whole CPU package" in html  # 2 J / 100 calls / 1000 items


def test_a_share_above_the_measured_peak_is_flagged_not_celebrated(site):
    page = next((site / "subjects").glob("inference.*.html")).read_text()
    assert "over peak" in page and "above 100% is a measurement problem" in page
    assert "of this machine&#39;s measured float32 peak" in page  # the baseline, under the peak
    assert "aten::addmm" in page


def test_machines_page_shows_the_calibrations(site):
    html = (site / "machines.html").read_text()
    assert "Measured limits" in html and "float32 matmul peak (cpu, 1 thread)" in html
    assert "100 GFLOP/s (n=256" in html and "10% below best" in html
    assert "not available here: test" in html and "memory bandwidth (cpu, 1 thread)" in html
    assert "other processes used 1.50 cores meanwhile; the machine was busy" in html


def test_profile_traces_that_are_gone_are_said_to_be_missing(db_url, tmp_path):
    make_db(db_url)  # profiles name trace files that do not exist
    render(connect(db_url), tmp_path / "site")
    html = (tmp_path / "site" / "subjects" / "loading.lmdb_read.html").read_text()
    assert "python trace file not found" in html and "profiles/" not in html


def test_plain_benchmark_page_charts_every_combination_with_a_line_per_version_and_tooltips(site):
    html = (site / "benchmarks" / f"{PLAIN}.html").read_text()
    assert html.count("<svg") == 2 * 4  # machines x parameter combinations
    assert "version 1" in html and "version 2" in html and "2 versions" in html
    assert "n=10, kind=quick" in html and "kind=&lt;b&gt;merge&lt;/b&gt;" in html and "<b>merge" not in html
    tips = re.findall(r'<circle class="tip" [^>]*><title>([^<]*)</title>', html)
    assert len(tips) == 2 * 4 * COMMITS  # a tooltip on every point
    assert f"{_hash(3)[:10]} · 2026-01-01 · Change number 3 · " in "\n".join(tips)
    assert re.search(r"Change number 3 · \d+(\.\d+)? µs", "\n".join(tips))
    step = html[html.index('class="changes"'):]
    assert "regression (open)" in step and _hash(STEP_AT)[:10] in step and 'class="mark regression"' in html


def test_index_lists_plain_benchmarks_by_module_without_inventing_failures(site):
    html = (site / "index.html").read_text()
    listed = html[html.index('id="benchmarks"'):]
    assert f'href="benchmarks/{PLAIN}.html"' in listed and "n, kind" in listed
    assert '<tr class="area-row"><th colspan="6">suite</th></tr>' in listed
    assert "suite.../../&lt;script&gt;" in listed  # the hostile name, as text
    matrix = html[:html.index('id="benchmarks"')]
    assert "TimeSort" not in matrix and "baseline failed" not in matrix  # no cell, no phantom baseline failure
    assert matrix.count('<tr class="subject-row">') == len(SUBJECTS)


def test_commits_page_says_what_ordered_the_commits(site):
    html = (site / "commits.html").read_text()
    assert "Here the order comes from first-parent history." in html


def test_the_regressions_page_and_the_check_agree_alert_for_alert(tmp_path):
    from proofbench.analysis.check import run_check

    url = f"sqlite:///{tmp_path / 'agree.sqlite'}"
    make_db(url)
    engine = connect(url)
    report = run_check(engine, "main")
    render(engine, tmp_path / "site")
    html = (tmp_path / "site" / "regressions.html").read_text()
    opened = html[html.index("Open regressions"):html.index("Recent improvements")]
    regressions = [f for f in report.findings if f.regression and f.state in ("new", "open")]
    assert len(regressions) == opened.count("<tr>\n<td>") == 3
    for f in regressions:
        assert f.commit.hash[:10] in opened


HALF = "inference.half_precision"  # bf16 reads 3.26x by time, 1.82x paired; inference_mode 0.93x and 1.06x
HALF_TIMES = {"baseline": 1e-2, "bf16": 1e-2 / 3.26, "inference_mode": 1e-2 / 0.93}
HALF_PAIRED = {"bf16": (1.82, 1.80), "inference_mode": (1.06, 1.05)}  # stored at the two newest commits


def _half_precision_site(where: Path) -> str:
    """A subject whose variants store no items per call (skipped by design), inference_mode's
    time_call failed at commit 1, and paired speedups only at commits 2 and 3; two claims of 1.5x.
    The page of the subject, rendered."""
    engine = connect(f"sqlite:///{where / 'half.sqlite'}")
    with Session(engine) as session, session.begin():
        commits = [Commit(hash=f"{i}" * 40, position=i, committed_at=START + dt.timedelta(days=i)) for i in range(4)]
        details = {"variants": {v: {"description": v, "requires": []} for v in HALF_TIMES}}
        benches = {metric: Benchmark(name=f"inference.Half.{method}", version="1", subject=HALF, area="inference",
                                     metric=metric, unit=unit, higher_is_better=metric != "time", item="sequence",
                                     param_names=["variant", "size"], details=details)
                   for method, metric, unit in (("time_call", "time", "seconds"), ("track_items", "items", "sequences"),
                                                ("track_speedup", "speedup", "x"))}
        machine, env = Machine(name="m", fingerprint="f", profile={}), Environment(name="e")
        session.add_all([*commits, *benches.values(), machine, env])
        rng = np.random.default_rng(5)
        for i, commit in enumerate(commits):
            for variant, seconds in HALF_TIMES.items():
                failed = variant == "inference_mode" and i == 1
                session.add(_result(benches["time"], machine, commit, env, variant, None if failed else seconds,
                                    None if failed else [seconds] * 3, status="failed" if failed else "ok"))
                baseline = variant == "baseline"
                session.add(_result(benches["items"], machine, commit, env, variant, 64.0 if baseline else None,
                                    status="ok" if baseline else "skipped"))
                if variant in HALF_PAIRED and i >= 2:
                    paired = HALF_PAIRED[variant][i - 2]
                    session.add(_result(benches["speedup"], machine, commit, env, variant, paired,
                                        rounds=_rounds(1e-2, paired, rng)))
        session.add_all(ClaimRow(id=f"{HALF}/{v}", subject=HALF, variant=v, source="000_seed.txt", quote="1.5x",
                                 kind="speedup", metric="time", low=1.5, high=1.5, device="any", note="")
                        for v in HALF_PAIRED)
    render(engine, where / "site")
    return (where / "site" / "subjects" / f"{HALF}.html").read_text()


def _figure(page: str, chart_id: str) -> str:
    return re.search(rf'<figure class="chart" id="{chart_id}">(.*?)</figure>', page, re.S).group(1)


def _plotted(figure: str) -> dict[tuple[str, bool], list[tuple[float, float]]]:
    """Each polyline's (x, value) points by (css class, dashed), values read off the y axis's ticks."""
    tick = r'<line class="grid" [^>]*y1="([\d.]+)"[^>]*/><text class="tick" [^>]*>([\d.]+)</text>'
    ticks = [(float(y), float(label)) for y, label in re.findall(tick, figure)]
    (y0, v0), (y1, v1) = ticks[0], ticks[-1]
    out: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    for css, dashed, points in re.findall(r'<polyline class="ln (c\d)"( stroke-dasharray="[^"]+")? points="([^"]+)"',
                                          figure):
        for point in points.split():
            x, y = map(float, point.split(","))
            out.setdefault((css, bool(dashed)), []).append((x, v0 + (y - y0) * (v1 - v0) / (y1 - y0)))
    return out


def test_speedup_chart_plots_the_stored_paired_speedups_and_names_the_time_ratio_where_none_is(tmp_path):
    # the chart drew bf16 at the time ratio 3.26x beside a paired verdict of 1.82x
    figure = _figure(_half_precision_site(tmp_path), "m1-e1-small-speedup")
    assert "Speedup over the baseline (alternating rounds; dashed: time ratio)" in figure
    assert "bf16 (time ratio)" in figure and "inference_mode (time ratio)" in figure
    lines = _plotted(figure)
    for css, variant in (("c1", "bf16"), ("c2", "inference_mode")):  # commits 2 and 3
        assert [v for _, v in lines[(css, False)]] == pytest.approx(HALF_PAIRED[variant], abs=0.01)
    assert [v for _, v in lines[("c1", True)]] == pytest.approx([3.26, 3.26], abs=0.01)  # commits 0 and 1
    assert ("c2", True) not in lines and figure.count('class="pt c2"') == 1  # commit 0 alone: it failed at 1
    assert figure.count('<text class="fail"') == 1  # inference_mode at commit 1: neither figure
    # the two 1.5x claims: one line, one label naming both variants
    assert figure.count("rule-claim") == 1 and "claimed 1.5× (bf16/inference_mode, 000_seed.txt)" in figure


def test_throughput_chart_has_every_variant_from_the_baselines_items_and_marks_only_real_failures(tmp_path):
    # variants' track_items are skipped by design: the chart showed the baseline and a failure mark per commit
    figure = _figure(_half_precision_site(tmp_path), "m1-e1-small-rate")
    lines = _plotted(figure)
    assert {css for css, _ in lines} == {"c0", "c1", "c2"}
    base, bf16 = [v for _, v in lines[("c0", False)]], [v for _, v in lines[("c1", False)]]
    assert len(base) == len(bf16) == 4
    assert [b / a for a, b in zip(base, bf16)] == pytest.approx([3.26] * 4, rel=0.01)
    assert figure.count('<text class="fail"') == 1  # inference_mode's failed time_call at commit 1
    assert len(lines[("c2", False)]) == 2  # its commits 2 and 3 (commit 0 is a lone dot)


def test_legend_moves_under_a_long_title_and_close_rule_labels_move_apart():
    plot = charts.Plot("a variant with a long name", "c1", [0, 1], [1.0, 2.0])
    quantity = charts.Quantity("factor", "speedup ({unit})")
    title = "Speedup over the baseline (alternating rounds; dashed: time ratio)"
    chart = charts.line_chart("x", title, quantity, [plot], [(0, "a")], "commit",
                              rules=[(1.5, "claimed 1.5×", "rule-claim"), (1.52, "claimed 1.52×", "rule-claim")])
    assert all(e.y >= charts.ROW for e in chart.legend) and chart.top == charts.TOP + charts.ROW
    first, second = chart.rules
    assert abs(first.label_y - second.label_y) >= charts.RULE_LABEL_PX
    short = charts.line_chart("x", "Time", quantity, [plot], [(0, "a")], "commit")
    assert [e.y for e in short.legend] == [8] and short.top == charts.TOP
