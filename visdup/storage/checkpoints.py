"""A SQLite store's WAL checkpoints, made beside its writer instead of inside its commits.

In WAL mode a commit appends the transaction's pages to the ``-wal`` file; a checkpoint
copies them into the database file and syncs both to disk. SQLite's default runs one inside
whichever commit finds the log past 1,000 pages: that commit then waits for the copy and two
``fsync`` calls, tens of milliseconds for a crawl's four megabytes, and a crawl's label
process commits every page in one thread. Here the store's own connections never checkpoint
(``wal_autocheckpoint=0``); every :data:`COMMITS` commits a thread of the store runs a
``PASSIVE`` checkpoint on a connection of its own, which copies what no reader still needs and
never blocks a writer. The GIL is released while SQLite works, so the copy and the syncs run
beside the labelling.

Nothing about what is stored changes: a commit is durable in the log, as before, whether the
process is killed before or during a checkpoint (the next connection replays the log), and the
last connection to close checkpoints the whole log and removes it, as before.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

logger = logging.getLogger(__name__)

#: Commits between two checkpoints. A crawl commits a page's tens of kilobytes at a time, so
#: the log stays near the four megabytes SQLite's own default lets it reach.
COMMITS = 64
#: Seconds the checkpoint's connection waits for a lock SQLite holds only briefly.
TIMEOUT = 30.0


class Checkpoints:
    """The checkpoint thread of one engine on one SQLite file (started on first need)."""

    def __init__(self, path: Path, commits: int = COMMITS):
        self.path = path
        self.commits = commits
        self._count = 0
        self._due = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        #: Checkpoints made, and the last one's (busy, log frames, frames copied).
        self.made = 0
        self.last: tuple[int, int, int] | None = None
        self._warned = False

    def committed(self) -> None:
        """One commit of the engine's: wake the thread every :attr:`commits` of them."""
        self._count += 1
        if self._count < self.commits:
            return
        self._count = 0
        with self._lock:
            if self._stopping:
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="visdup-wal-checkpoints", daemon=True
                )
                self._thread.start()
        self._due.set()

    def stop(self) -> None:
        """End the thread (after the checkpoint it may be making); the engine's last
        connection, as it closes, checkpoints what is left."""
        with self._lock:
            self._stopping = True
            thread = self._thread
        self._due.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            self._due.wait()
            self._due.clear()
            if self._stopping:
                return
            self.checkpoint()

    def checkpoint(self) -> None:
        """One ``PASSIVE`` checkpoint on a connection of its own, opened for it: between two,
        the thread holds nothing open on the file."""
        try:
            conn = sqlite3.connect(self.path, timeout=TIMEOUT, isolation_level=None)
            try:
                row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            if not self._warned:  # the next commits' checkpoints try again
                self._warned = True
                logger.warning("visdup: cannot checkpoint the SQLite log of %s: %s", self.path, exc)
            return
        self.made += 1
        self.last = (int(row[0]), int(row[1]), int(row[2])) if row else None


_ATTACHED: weakref.WeakKeyDictionary[Engine, Checkpoints] = weakref.WeakKeyDictionary()


def attach(engine: Engine, path: Path, commits: int = COMMITS) -> Checkpoints:
    """Checkpoint ``engine``'s SQLite file beside its commits; its connections must be
    opened with ``PRAGMA wal_autocheckpoint=0`` (:func:`visdup.storage.engine.make_engine`)."""
    checkpoints = Checkpoints(path, commits)
    _ATTACHED[engine] = checkpoints

    def on_commit(_conn: Any) -> None:
        checkpoints.committed()

    event.listen(engine, "commit", on_commit)
    return checkpoints


def attached(engine: Engine) -> Checkpoints | None:
    return _ATTACHED.get(engine)


def stop(engine: Engine) -> None:
    """Stop the checkpoint thread of ``engine``, if it has one (before it is disposed)."""
    checkpoints = _ATTACHED.pop(engine, None)
    if checkpoints is not None:
        checkpoints.stop()
