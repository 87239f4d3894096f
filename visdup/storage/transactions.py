"""The store's connections: reads that never wait, and the transactions callers hold.

A caller outside :mod:`visdup.storage` never opens a connection: when several of the store's
writes must commit together (a page with its labels and links, a cluster merge) it takes a
handle from :meth:`Database.transaction`, naming the advisory locks it needs
(:mod:`visdup.storage.locks`), and passes the handle back to the store's methods. Whether a lock
is taken depends on the database, and that decision is made here: SQLite has one writer, whose
transactions begin IMMEDIATE (:mod:`visdup.storage.engine`), so it needs none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeAlias

from sqlalchemy import Connection, Engine

from visdup.storage.engine import READ_ONLY
from visdup.storage.locks import advisory_lock

__all__ = ["Database", "Handle"]

#: What :meth:`Database.transaction` hands its caller: an open transaction, to pass back to the
#: store's methods (and to the band index's) that take ``conn``; callers use it for nothing
#: else.
Handle: TypeAlias = Connection


class Database:
    """An engine, with a reading twin: reads begin a deferred transaction on SQLite (WAL
    readers never wait for the writer); everything else begins IMMEDIATE."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._reader = engine.execution_options(**{READ_ONLY: True})
        #: One statement's reads outside any transaction: on PostgreSQL in autocommit (a
        #: transaction around it cost a BEGIN and a ROLLBACK, two round trips more).
        self._single = (
            engine.execution_options(isolation_level="AUTOCOMMIT")
            if engine.dialect.name == "postgresql"
            else self._reader
        )

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @property
    def several_writers(self) -> bool:
        """Whether other processes may write to this store while this one does (PostgreSQL):
        what one process holds in memory is then not all there is. A SQLite store has one
        writer (:class:`visdup.storage.locks.WriterLock`)."""
        return self.is_postgres

    def reading(self) -> AbstractContextManager[Connection]:
        """A connection for reads, rolled back as it closes."""
        return self._reader.connect()

    @contextmanager
    def transaction(self, locks: Iterable[int] = ()) -> Iterator[Handle]:
        """One transaction, committed as the block ends (rolled back on an error), holding
        the advisory ``locks`` (taken on PostgreSQL only)."""
        with self.engine.begin() as conn:
            advisory_lock(conn, locks)
            yield conn

    @contextmanager
    def transaction_on_use(self, locks: Iterable[int] = ()) -> Iterator[Callable[[], Handle]]:
        """:meth:`transaction` begun only when first asked for: the block calls what it is
        given for the handle. Work that turns out to write nothing then takes no write lock
        (SQLite's ``BEGIN IMMEDIATE``) and makes no commit."""
        lazy = _OnUse(self, list(locks))
        try:
            yield lazy
        except BaseException as exc:
            lazy.end(exc)
            raise
        lazy.end(None)

    @contextmanager
    def holding(self, locks: Iterable[int]) -> Iterator[None]:
        """Hold the advisory ``locks`` while the block runs, whatever transactions it opens
        (PostgreSQL: in a transaction of their own; nothing on SQLite, whose one writer has
        nobody to wait for)."""
        if not self.several_writers:
            yield
            return
        with self.engine.begin() as conn:
            advisory_lock(conn, locks)
            yield


class _OnUse:
    """The transaction of :meth:`Database.transaction_on_use`: begun on the first call."""

    def __init__(self, database: Database, locks: list[int]):
        self._database = database
        self._locks = locks
        self._begun: AbstractContextManager[Connection] | None = None
        self._conn: Connection | None = None

    def __call__(self) -> Connection:
        if self._conn is None:
            self._begun = self._database.transaction(self._locks)
            self._conn = self._begun.__enter__()
        return self._conn

    def end(self, exc: BaseException | None) -> None:
        """Commit (``exc`` None) or roll back what was begun."""
        begun, self._begun, self._conn = self._begun, None, None
        if begun is not None:
            if exc is None:
                begun.__exit__(None, None, None)
            else:
                begun.__exit__(type(exc), exc, exc.__traceback__)
