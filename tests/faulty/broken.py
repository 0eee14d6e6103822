"""Broken inputs made from sound ones: results files of other commits, with NaN, with parameters
its label does not name; a database whose names and texts are hostile (path climbs, markup)."""
from __future__ import annotations

import json


def variant_of(data: dict, commit: str, sizes: int = 1) -> tuple[str, dict]:
    """A copy of results data for another commit, its sound subject's time row widened to
    `sizes` size values (more rows per file); returns the file name asv would give it."""
    data = json.loads(json.dumps(data))
    data["commit_hash"] = commit
    columns = data["result_columns"]
    row = data["results"]["loading.FaultySound.time_call"]
    (variants, old_sizes) = row[columns.index("params")]
    combos = len(variants) * len(old_sizes)
    widened = []
    for name, value in zip(columns, row):
        if name == "params":
            value = [variants, [repr(f"s{i}") for i in range(sizes)]]
        elif isinstance(value, list) and len(value) == combos:
            value = [v for v in value for _ in range(sizes)]
        widened.append(value)
    data["results"]["loading.FaultySound.time_call"] = widened
    return f"{commit[:8]}-{data['env_name']}.json", data


def with_wrong_parameters(data: dict) -> str:
    """Results data whose labelled benchmark has three parameter lists where its label names two."""
    data = json.loads(json.dumps(data))
    row = data["results"]["loading.FaultySound.time_call"]
    params = data["result_columns"].index("params")
    data["results"]["loading.FaultySound.time_call"] = [None, [*row[params], ["'extra'"]], *row[params + 1:]]
    return json.dumps(data)


def with_nan(data: dict, column: str) -> str:
    """Results data with NaN where a number belongs: a raw sample, or the duration."""
    data = json.loads(json.dumps(data))
    row = data["results"]["loading.FaultySound.time_call"]
    index = data["result_columns"].index(column)
    row[index] = [[float("nan"), *row[index][0][1:]], row[index][1]] if column == "samples" else float("nan")
    return json.dumps(data)


HOSTILE = "../../../../../../../../escaped-<script>alert(1)</script>"


def hostile_database(url: str) -> None:
    """A database whose every name and text a page shows or is named by holds `HOSTILE`."""
    from sqlalchemy.orm import Session

    from proofbench.db.models import Benchmark, Commit, Environment, Machine, Result
    from proofbench.db.session import connect

    with Session(connect(url)) as session, session.begin():
        machine = Machine(name=HOSTILE, fingerprint="f", profile={"cpu": HOSTILE})
        commit = Commit(hash="c" * 40, subject=HOSTILE, branch="main", position=1)
        env = Environment(name=HOSTILE)
        bench = Benchmark(name=f"loading.{HOSTILE}.time_call", version="1", subject=HOSTILE, area="loading",
                          metric="time", unit="seconds", higher_is_better=False, param_names=["variant", "size"],
                          details={"description": HOSTILE, "variants": {HOSTILE: {"description": HOSTILE}}})
        session.add_all([machine, commit, env, bench])
        session.flush()
        for variant, status in (("baseline", "ok"), (HOSTILE, "failed")):
            session.add(Result(benchmark_id=bench.id, machine_id=machine.id, commit_id=commit.id,
                               environment_id=env.id, params={"variant": variant, "size": HOSTILE},
                               params_key=json.dumps([variant, HOSTILE]), status=status, reason=HOSTILE,
                               value=1.0 if status == "ok" else None,
                               samples=[1.0, 1.1, 0.9] if status == "ok" else None))
