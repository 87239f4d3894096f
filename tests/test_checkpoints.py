"""A SQLite store's WAL checkpoints run beside its commits: none inside them, none lost."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text

from visdup.storage import checkpoints
from visdup.storage.store import Store

REPO = Path(__file__).resolve().parent.parent

#: What a page's commit writes, about: the log passes SQLite's own limit within a few dozen.
ROW = b"x" * 30_000


def _fill(store: Store, rows: int) -> None:
    with store.engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS filler (id INTEGER PRIMARY KEY, b BLOB)"))
    for _ in range(rows):
        with store.engine.begin() as conn:
            conn.execute(text("INSERT INTO filler (b) VALUES (:b)"), {"b": ROW})


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def test_commits_make_no_checkpoint_and_the_thread_does(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    store = Store.from_url(f"sqlite:///{path}")
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        made = checkpoints.attached(store.engine)
        assert made is not None
        # 300 commits of 30 kB: 9 MB, past SQLite's own limit (4 MB) twice over; the log is
        # copied into the file by the thread, every 64 commits
        _fill(store, 300)
        _wait_for(lambda: made.made >= 4, "four checkpoints")
        assert made.last is not None and made.last[2] > 0  # frames copied into the file
        assert path.stat().st_size > 2_000_000  # the file holds rows, not only the log
    finally:
        store.close()
    assert made._thread is not None and not made._thread.is_alive()
    assert checkpoints.attached(store.engine) is None
    # the last connection checkpointed the rest and removed the log, as SQLite always did
    assert not Path(f"{path}-wal").exists()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM filler").fetchone()[0] == 300


def test_a_store_that_only_reads_keeps_sqlite_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    Store.from_url(f"sqlite:///{path}").close()
    reader = Store.from_url(f"sqlite:///{path}", create=False, migrate=False)
    try:
        assert checkpoints.attached(reader.engine) is None
        with reader.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 1000
    finally:
        reader.close()


WRITER = """
import sys
from sqlalchemy import text
from visdup.storage.store import Store
store = Store.from_url(sys.argv[1])
with store.engine.begin() as conn:
    conn.execute(text("CREATE TABLE filler (id INTEGER PRIMARY KEY, b BLOB)"))
row = b"x" * 30_000
while True:
    with store.engine.begin() as conn:
        done = conn.execute(text("INSERT INTO filler (b) VALUES (:b)"), {"b": row}).lastrowid
    print(done, flush=True)
"""


def test_a_writer_killed_between_and_during_checkpoints_loses_no_commit(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, f"sqlite:///{path}"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    committed = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            committed.append(int(line))
            if len(committed) >= 500:  # seven checkpoints and more begun, some under way
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(committed) == 500, "the writer stopped before it was killed"
    with sqlite3.connect(path) as conn:  # the log is replayed: every commit is there
        stored = {row[0] for row in conn.execute("SELECT id FROM filler")}
    assert set(committed) <= stored
