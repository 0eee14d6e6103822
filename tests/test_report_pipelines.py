"""The whole-pipeline section of a subject page: the whole beside the product of its parts, and the ablation.

A small database is built row by row (no asv run): a pipeline with two parts and a GPU-only part
it leaves out, its two per-part subjects measured at the same commit; a second pipeline one of
whose parts was measured alone only at an older commit. Every sample of a side is equal, so the
speedups are known exactly.
"""
from __future__ import annotations

import datetime as dt
import math
import re

import pytest
from sqlalchemy.orm import Session

from proofbench.db.models import Benchmark, ClaimRow, Commit, Environment, Machine, Result
from proofbench.db.session import connect
from proofbench.reports.pipelines import Ratio, product, quotient
from proofbench.reports.render import render

PIPELINE = "pipelines.demo"
PARTS = [{"name": "cache", "subject": "inference.cache_alone", "variant": "cached", "description": "an LRU cache",
          "requires": [], "left_out": ""},
         {"name": "bf16", "subject": "training.bf16_alone", "variant": "bf16", "description": "autocast",
          "requires": ["bf16"], "left_out": ""},
         {"name": "pin_memory", "subject": "loading.pin_alone", "variant": "pinned", "description": "pinned",
          "requires": ["cuda"], "left_out": "GPU-only: pinned host memory speeds copies to a GPU"}]
# seconds per call: the pipeline's whole is 4x, the parts alone 2x and 3x (product 6x, gap 2/3)
PIPELINE_TIMES = {"baseline": 1.2, "optimized": 0.3, "only_cache": 0.8, "without_cache": 0.6,
                  "only_bf16": 0.5, "without_bf16": 0.5}
PIPELINE_PARTS = {"baseline": [], "optimized": ["cache", "bf16"], "only_cache": ["cache"],
                  "without_cache": ["bf16"], "only_bf16": ["bf16"], "without_bf16": ["cache"]}
ALONE = {"inference.cache_alone": ("cached", 2.0), "training.bf16_alone": ("bf16", 3.0)}
OPEN = "pipelines.open"  # its part "late" has its own figure only at the older commit
OPEN_PARTS = [PARTS[0], {"name": "late", "subject": "loading.late_alone", "variant": "fast", "description": "",
                         "requires": [], "left_out": ""}]


def _bench(subject: str, metric: str, variants: dict, parts: list | None = None) -> Benchmark:
    details = {"description": f"what {subject} does", "variants": variants,
               "equivalence": {"metric": "loss_delta", "tolerance": 0.02, "higher_is_better": False,
                               "description": "same losses"}, "rates": []}
    if parts is not None:
        details["parts"] = parts
    method = {"time": "time_call", "peak_memory": "track_peak_memory"}[metric]
    area, name = subject.split(".")
    return Benchmark(name=f"{area}.{name.title()}.{method}", version="1", subject=subject, area=area, metric=metric,
                     unit="seconds" if metric == "time" else "bytes", higher_is_better=False, item="sequence",
                     param_names=["variant", "size"], details=details)


def _results(session, bench, machine, commit, env, values: dict) -> None:
    for variant, value in values.items():
        samples = [value] * 6 if bench.metric == "time" else None
        session.add(Result(benchmark=bench, machine=machine, commit=commit, environment=env, status="ok",
                           params={"variant": variant, "size": "small"}, params_key=f'["{variant}", "small"]',
                           value=value, samples=samples, profile="pipelines", threads=1,
                           started_at=commit.committed_at))


def make_db(url: str) -> None:
    engine = connect(url)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    with Session(engine) as session, session.begin():
        machine = Machine(name="ci-box", fingerprint="aaaa", profile={"cpu_model": "Test CPU", "gpus": []})
        old, new = (Commit(hash=f"{i}" * 40, subject=f"change {i}", author="t", position=i, branch="main",
                           committed_at=start + dt.timedelta(hours=i)) for i in (1, 2))
        env = Environment(name="existing-py3.11")
        variants = {v: {"description": v, "requires": [], "parts": p} for v, p in PIPELINE_PARTS.items()}
        _results(session, _bench(PIPELINE, "time", variants, PARTS), machine, new, env, PIPELINE_TIMES)
        memory = {v: 100.0 * 2**20 * (0.5 if "bf16" in p else 1.0) for v, p in PIPELINE_PARTS.items()}
        _results(session, _bench(PIPELINE, "peak_memory", variants, PARTS), machine, new, env, memory)
        for subject, (variant, speed) in ALONE.items():
            alone = {"baseline": {"description": "naive", "requires": []}, variant: {"description": "", "requires": []}}
            _results(session, _bench(subject, "time", alone), machine, new, env, {"baseline": 1.0, variant: 1 / speed})
        stale = {"baseline": {"description": "naive", "requires": []}, "fast": {"description": "", "requires": []}}
        _results(session, _bench("loading.late_alone", "time", stale), machine, old, env,
                 {"baseline": 1.0, "fast": 0.5})
        both = {"baseline": {"description": "", "requires": [], "parts": []},
                "optimized": {"description": "", "requires": [], "parts": ["cache", "late"]}}
        _results(session, _bench(OPEN, "time", both, OPEN_PARTS), machine, new, env,
                 {"baseline": 1.0, "optimized": 0.5})
        session.add(ClaimRow(id=f"{PIPELINE}/speed", subject=PIPELINE, variant="optimized", source="000_seed.txt",
                             quote="2-4x faster", kind="speedup", metric="time", low=2.0, high=4.0, device="any",
                             note=""))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    where = tmp_path_factory.mktemp("pipelines-site")
    url = f"sqlite:///{where / 'db.sqlite'}"
    make_db(url)
    render(connect(url), where / "site")
    return where / "site"


def _page(site, name: str) -> str:
    found = [p for p in (site / "subjects").glob("*.html") if name in p.name]
    assert len(found) == 1, found
    return found[0].read_text()


@pytest.fixture(scope="module")
def page(site) -> str:
    return _page(site, "demo")


def _row(page: str, header: str) -> str:
    match = re.search(rf"<th>{re.escape(header)}</th><td class=\"num\">(.*?)</td>", page, re.S)
    assert match, header
    return match.group(1)


def test_the_whole_stands_beside_the_product_of_its_parts(page):
    assert "<strong>4.00x</strong>" in _row(page, "whole: every part on (optimized)")
    assert "<strong>6.00x</strong>" in _row(page, "product of the parts, each as its own subject measured it")
    assert "<strong>0.67x</strong>" in _row(page, "gap: whole / product (1 = the parts multiply)")
    assert "<strong>3.60x</strong>" in _row(page, "product of each part alone on in this pipeline")  # 1.5 x 2.4


def test_the_ablation_has_a_row_per_part_the_whole_turns_on(page):
    table = page[page.index('<table class="ablation">'):]
    table = table[:table.index("</table>")]
    rows = table.split("<tr>")[2:]
    assert [re.search(r"<strong>(\w+)</strong>", r).group(1) for r in rows] == ["cache", "bf16"]
    cache = rows[0]
    # alone 2x in its own subject; 1.5x alone on here; 2x without it; the whole loses 2x without it
    assert re.findall(r"<strong>([\d.]+x)</strong>", cache) == ["2.00x", "1.50x", "2.00x", "2.00x"]
    assert "−50.0%" in rows[1] and "+0.0%" in rows[0]  # bf16 halves peak memory; the cache alone does not


def test_a_left_out_part_is_named_with_its_reason_beside_the_whole(page):
    assert re.search(r"Judged without: <strong>pin_memory</strong> <span class=\"small muted\">\(GPU-only: pinned "
                     r"host memory speeds copies to a GPU\)</span>", page)
    assert "pin_alone" not in page.split('<table class="ablation">')[1].split("</table>")[0]


def test_a_part_measured_only_at_another_commit_leaves_the_product_open(site):
    page = _page(site, "open")
    assert "<strong>2.00x</strong>" in _row(page, "whole: every part on (optimized)")
    product_cell = _row(page, "product of the parts, each as its own subject measured it")
    assert "<strong>" not in product_cell and "a part has no figure of its own at this commit" in product_cell
    assert "not measured on this machine at this commit" in page


def test_products_and_quotients_carry_their_intervals_in_log_space():
    assert product([Ratio(2.0, 1.5, 2.5), Ratio(3.0)]).low is None  # a factor without an interval: none for all
    both = product([Ratio(2.0, 1.0, 4.0), Ratio(3.0, 1.5, 6.0)])
    assert both.estimate == pytest.approx(6.0) and both.low == pytest.approx(6.0 / 2 ** math.sqrt(2))
    assert both.high == pytest.approx(6.0 * 2 ** math.sqrt(2))
    gap = quotient(Ratio(4.0, 3.0, 5.0), Ratio(6.0, 3.0, 12.0))
    assert gap.estimate == pytest.approx(2 / 3) and gap.low < gap.estimate < gap.high
