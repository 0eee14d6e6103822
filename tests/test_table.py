"""`proofbench table`: what it says when it has nothing to show (an unknown machine, a database
without proofbench subjects' speedups), and that a machine is chosen as `compare` chooses it."""
from __future__ import annotations

import json

from test_check import TIME, History
from test_compare import plain_suite

from proofbench import cli
from proofbench.db.session import connect
from proofbench.reports import table


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_unknown_machine_is_refused_as_compare_refuses_it(sqlite_url, capsys):
    url = plain_suite(sqlite_url)
    _, _, refused = _run(capsys, "compare", "nosuch", "box-b", "--db", url)
    for fmt in ("text", "json", "markdown"):
        code, out, err = _run(capsys, "table", "--machine", "nosuch", "--format", fmt, "--db", url)
        assert (code, out) == (2, "") and err == refused, fmt
        assert err == "proofbench: machine 'nosuch': no results stored for it (machines with results: box-a, " \
                      "box-b)\n"


def test_a_plain_asv_suites_database_has_no_speedups_and_says_so(sqlite_url, capsys):
    url = plain_suite(sqlite_url)
    for argv in ([], ["--format", "json"], ["--format", "markdown"], ["--machine", "box-a"]):
        code, out, err = _run(capsys, "table", *argv, "--db", url)
        assert (code, out) == (2, ""), argv  # as a check of a database with no results: never an empty pass
        assert err.count("\n") == 1 and "no speedups to show: `table` shows proofbench subjects' speedups" in err
        assert "plain asv benchmarks'" in err and "proofbench report" in err and "proofbench compare" in err
    assert "(machine 'box-a')" in err and "the 8 result(s) here" in err


def test_a_database_with_no_results_says_measure_first(sqlite_url, capsys):
    History(sqlite_url)  # the schema and machines, nothing measured
    code, out, err = _run(capsys, "table", "--format", "json", "--db", sqlite_url)
    assert (code, out) == (2, "") and "the database holds no results: nothing to show (measure first" in err


def test_a_machine_is_chosen_by_name_and_one_without_results_is_refused(sqlite_url, capsys):
    history = History(sqlite_url)
    history.night(1, {TIME: 0.01})  # on "box"; "other" is stored but measured nothing
    code, out, _ = _run(capsys, "table", "--machine", "box", "--format", "json", "--db", sqlite_url)
    assert code == 0 and {r["machine"] for r in json.loads(out)["records"]} == {"box"}
    code, out, err = _run(capsys, "table", "--machine", "other", "--db", sqlite_url)
    assert (code, out) == (2, "") and "machine 'other': no results stored for it (machines with results: box)" in err
    # after a run, the table of the machine just measured: nothing shown (and no error) when it stored nothing
    table.print_latest(connect(sqlite_url), "other", ())
    assert capsys.readouterr().out == ""


def test_without_a_machine_each_name_shows_the_fingerprint_measured_last(sqlite_url, capsys):
    """Hardware may change and change back: the plain table (and the one `run` prints) shows the
    fingerprint with the newest result, as `table --machine` and `compare` take it, not the one
    stored last."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session
    from test_check import PARAMS, _hash

    from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result

    history = History(sqlite_url)
    history.night(1, {TIME: 0.02})
    with Session(history.engine) as session, session.begin():  # "box" on new hardware, measured at commit 1 only
        newer = Machine(name="box", fingerprint="f3")
        session.add(newer)
        session.flush()
        session.add(Result(benchmark_id=session.scalar(select(Benchmark.id).where(Benchmark.name == TIME)),
                           machine_id=newer.id, commit_id=session.scalar(select(Commit.id)),
                           environment_id=session.scalar(select(Environment.id)), params=PARAMS,
                           params_key=json.dumps(list(PARAMS.values())), status="ok", value=0.05, samples=[0.05] * 5))
    history.night(5, {TIME: 0.01})  # and back on the first hardware, measured last
    for argv in ([], ["--machine", "box"]):
        code, out, _ = _run(capsys, "table", "--format", "json", *argv, "--db", sqlite_url)
        assert code == 0 and {r["commit"] for r in json.loads(out)["records"]} == {_hash(5)}, argv


def test_every_claim_about_a_variant_is_shown_in_one_order_whichever_command_reads_them(tmp_path, capsys):
    # the table showed the first claim it met: `run` (the catalogue's order) and `table` (the
    # database's) showed different claims, and so different verdicts, of the same results
    from sqlalchemy.orm import Session
    from test_report_site import make_db

    from proofbench.db.models import ClaimRow
    from proofbench.reports.render import stored_claims

    url = f"sqlite:///{tmp_path / 'claims.sqlite'}"
    make_db(url)
    engine = connect(url)
    with Session(engine) as session, session.begin():
        session.add(ClaimRow(id="loading.lmdb_read/0-modest", subject="loading.lmdb_read", variant="optimized",
                             source="001_other.txt", quote="a bit faster", kind="speedup", metric="time", low=1.2,
                             high=1.2, device="any", note=""))
    with Session(engine) as session:
        claims = tuple(stored_claims(session)[0])
    orders = [table.lines(engine, claims, "ci-box"), table.lines(engine, claims[::-1], "ci-box")]
    ids = [[[c.id for c, _ in line.claims] for line in found] for found in orders]
    assert ids[0] == ids[1]
    code, out, _ = _run(capsys, "table", "--machine", "ci-box", "--format", "json", "--db", url)
    records = {(r["subject"], r["variant"]): r for r in json.loads(out)["records"]}
    assert code == 0 and json.loads(out)["version"] == 2
    shown = records[("loading.lmdb_read", "optimized")]["claims"]
    assert [c["id"] for c in shown] == ["loading.lmdb_read/0-modest", "loading.lmdb_read/speed"]
    assert [c["verdict"] for c in shown] == ["reproduced", "partly"]  # x2.85 against 1.2 and against 5
    assert records[("loading.lmdb_read", "baseline")]["claims"] == []
    code, out, _ = _run(capsys, "table", "--machine", "ci-box", "--format", "markdown", "--db", url)
    row = next(line for line in out.splitlines() if "| loading.lmdb_read | small | optimized |" in line)
    assert "1.2x faster (001)<br>5x faster (000) | reproduced<br>partly |" in row


def test_the_table_after_a_run_of_some_subjects_shows_those_only(tmp_path, capsys):
    # `run --bench X` printed every subject's newest rows, earlier runs' among them, unmarked
    from conftest import catalogue_registry
    from test_report_site import make_db

    from proofbench.pipeline.generate import bench_pattern, selected

    registry = catalogue_registry()
    assert selected(registry, bench_pattern(registry, "lmdb_read")) == {"loading.lmdb_read"}
    assert selected(registry, "^loading\\.") == {s.key for s in registry if s.area == "loading"}
    url = f"sqlite:///{tmp_path / 'some.sqlite'}"
    make_db(url)
    capsys.readouterr()
    table.print_latest(connect(url), "ci-box", (), {"loading.lmdb_read"})
    out = capsys.readouterr().out
    assert "loading.lmdb_read" in out and "tokenization.batch_tokenize" not in out
    table.print_latest(connect(url), "ci-box", ())
    assert "tokenization.batch_tokenize" in capsys.readouterr().out
