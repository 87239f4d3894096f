"""Every lock the store takes: PostgreSQL advisory lock keys, and the one-writer lock of SQLite.

PostgreSQL serves several crawl processes: they serialise schema changes, cluster changes and
the check-and-insert of near-identical pages through transaction-level advisory locks, whose
keys are named here so that no two uses collide. SQLite has one writer at a time: two crawls on
one file lost labels silently (35 of 300 mirror groups unlinked, every page fetched twice), so a
second writer is refused while the first is alive.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from sqlalchemy import text

from visdup.errors import StoreError

if TYPE_CHECKING:
    from sqlalchemy import Connection

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory file locks through fcntl
    fcntl = None  # type: ignore[assignment]

#: Advisory lock held while the schema is created or migrated: processes starting together on
#: an empty database otherwise raced on CREATE TABLE (``UniqueViolation pg_type_typname``).
SCHEMA_LOCK = 715517
#: Advisory lock held while a process changes the template clusters.
CLUSTERS_LOCK = 715518
#: Advisory lock held while a process derives the store's final labels (visdup.dedup.settle).
SETTLE_LOCK = 715519
# Band keys (visdup.storage.fingerprints) are salted 63-bit hashes: a collision with these is
# possible in principle and harmless (two unrelated writers wait for each other once).


def advisory_lock(conn: Connection, keys: Iterable[int]) -> None:
    """PostgreSQL transaction-level advisory locks on ``keys``, taken in sorted order.

    Every writer takes its keys in one ascending sweep, so two writers can never wait for
    each other in a cycle. A no-op on other databases (SQLite has one writer at a time).
    """
    if conn.dialect.name != "postgresql":
        return
    wanted = sorted(set(keys))
    if not wanted:
        return
    # unnest without ORDER BY yields the array in order, so the locks are taken in order.
    conn.execute(
        text("SELECT pg_advisory_xact_lock(x) FROM unnest(CAST(:keys AS BIGINT[])) AS x"),
        {"keys": wanted},
    )


#: Writer locks this process holds for the next store it opens as a file's writer, by lock
#: file (:meth:`WriterLock.hand_over`).
_handed: dict[Path, IO[str]] = {}
_handed_guard = threading.Lock()


class WriterLock:
    """An OS file lock beside a SQLite database, held by the one process that writes to it.

    ``flock`` belongs to the open file: the kernel drops it when the process ends, however it
    ends (``kill -9`` included), so a dead writer never blocks the next one. The file records
    who holds it (pid, host, since) for the message the second writer gets.
    """

    def __init__(self, database: Path):
        self.database = database
        self.path = database.with_name(database.name + ".writer-lock")
        self._file: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self) -> None:
        if self._file is not None or fcntl is None:
            return
        with _handed_guard:
            self._file = _handed.pop(self.path, None)
        if self._file is not None:
            return
        try:
            handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held open on purpose
        except OSError as exc:
            raise StoreError(
                f"cannot create the writer lock {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = self._holder(handle)
            handle.close()
            raise StoreError(
                f"another visdup process ({holder}) is writing to {self.database}: SQLite "
                "stores take one writer at a time. Wait for it to finish, crawl into another "
                "file, or use PostgreSQL for several crawl processes "
                "(VISDUP_DATABASE_URL = 'postgresql+psycopg://...')"
            ) from None
        handle.seek(0)
        handle.truncate()
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        handle.write(json.dumps(info))
        handle.flush()
        self._file = handle

    def release(self) -> None:
        handle, self._file = self._file, None
        if handle is not None:
            _unlock(handle)

    def hand_over(self) -> None:
        """Keep the lock past this store, for the next one this process opens as the writer.

        A command opens its store to check it, then starts the crawl, whose own store opens
        later. Released in between, the lock let a second crawl started at the same moment
        pass its check and fail in the middle of its crawl; handed over, it is never free
        between the check and the crawl. :meth:`release_handed` drops it if no store took it.
        """
        handle, self._file = self._file, None
        if handle is None:
            return
        with _handed_guard:
            earlier = _handed.pop(self.path, None)
            _handed[self.path] = handle
        if earlier is not None:
            _unlock(earlier)

    @staticmethod
    def release_handed(database: Path) -> None:
        """Release the lock handed over for ``database`` if no store took it."""
        path = database.with_name(database.name + ".writer-lock")
        with _handed_guard:
            handle = _handed.pop(path, None)
        if handle is not None:
            _unlock(handle)

    @staticmethod
    def _holder(handle: IO[str]) -> str:
        try:
            handle.seek(0)
            info: dict[str, Any] = json.loads(handle.read() or "{}")
        except (OSError, ValueError):
            info = {}
        if not info:
            return "unknown process"
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info.get("since", 0))))
        return f"pid {info.get('pid')} on {info.get('host')}, since {since}"


def _unlock(handle: IO[str]) -> None:
    with contextlib.suppress(OSError):
        handle.seek(0)
        handle.truncate()
    handle.close()  # closing the file drops the lock
