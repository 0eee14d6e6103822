"""What the hostile-input tests share: the command line run in this process, its one-line error,
and the report tests' database, made once per module (copy it before changing it).

Test modules import the fixture they use: `from hostile import site_db`.
"""
from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from pathlib import Path

import pytest
from test_report_site import make_db

from proofbench.cli import main


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`proofbench ARGV` in this process: (exit status, stdout, stderr)."""
    code = main([*argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    """The one `proofbench:` line an error printed (and no traceback)."""
    lines = [line for line in err.splitlines() if line.startswith("proofbench:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def digest(path: Path) -> str:
    """The hash of a file's bytes: what 'left as it was' is checked by."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sql(path: Path, statement: str, *values) -> None:
    """Run one statement on a SQLite file and close it (nothing left in a -wal beside it)."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(statement, values)


@pytest.fixture(scope="module")
def site_db(tmp_path_factory) -> Path:
    """The report tests' database (two machines, thirty commits, a step, a hostile machine name)."""
    path = tmp_path_factory.mktemp("hostile-db") / "report.sqlite"
    make_db(f"sqlite:///{path}")
    sql(path, "PRAGMA wal_checkpoint(TRUNCATE)")  # one file, nothing beside it, as a copied database is
    return path
