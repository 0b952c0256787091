"""``formats.sqlite_read.connect``: a capture's database is read with nothing made beside it,
and rows a stopped writer left in its ``-wal`` file are read too."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from mindspeed_prof.formats.sqlite_read import connect


def _wal_db(path: Path, rows: int) -> sqlite3.Connection:
    """A database in WAL mode (as torch_npu writes them) with ``rows`` rows checkpointed into
    it; the writer's connection, still open."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("CREATE TABLE t (x INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(rows)])
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return con


@pytest.mark.parametrize("name", ["capture.db", "odd ?#% name.db"])
def test_reading_a_wal_database_makes_no_file_beside_it(tmp_path: Path, name: str) -> None:
    db = tmp_path / name
    _wal_db(db, 3).close()  # closed: checkpointed, its -wal and -shm removed
    assert db.read_bytes()[18:20] == b"\x02\x02"  # still WAL mode in its header
    before = sorted(tmp_path.iterdir())
    with closing(connect(db)) as con:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)
    assert sorted(tmp_path.iterdir()) == before
    with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as con:  # what it avoids
        con.execute("SELECT count(*) FROM t").fetchone()
        assert db.with_name(f"{name}-shm").exists()


def test_rows_left_in_a_stopped_writers_wal_file_are_read(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    writer = _wal_db(live / "capture.db", 3)
    writer.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(3, 10)])
    writer.commit()  # in the -wal file only: no checkpoint
    copy = tmp_path / "copy"
    shutil.copytree(live, copy)  # as a writer killed now leaves it
    writer.close()
    assert (copy / "capture.db-wal").stat().st_size > 0
    with closing(connect(copy / "capture.db")) as con:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (10,)
