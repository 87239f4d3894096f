"""From a database URL to a working SQLAlchemy engine, or one clear error.

Every failure a user can cause (a typo in the scheme, a missing driver, an unreachable server,
a path that cannot be written) becomes a :class:`~visdup.errors.StoreError` whose message names
the problem and shows the URL without its password.

SQLite runs with SQLAlchemy's documented pysqlite recipe: the driver's own transaction handling
is switched off (``isolation_level = None``) and every transaction starts with a ``BEGIN`` that
visdup emits. Under the driver's legacy handling no ``BEGIN`` came before a SAVEPOINT, so the
SAVEPOINT opened the transaction and its RELEASE committed a page without its links.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DisconnectionError, NoSuchModuleError, SQLAlchemyError

from visdup.errors import StoreError
from visdup.storage import checkpoints
from visdup.storage.urls import mask_password

#: Execution option of the store's read-only work: a plain (deferred) BEGIN, so readers never
#: wait for the writer in WAL mode. Everything else begins IMMEDIATE: it takes the write lock
#: up front, so a transaction that reads and then writes never fails on a stale snapshot
#: (SQLITE_BUSY_SNAPSHOT is not retried by the busy timeout).
READ_ONLY = "visdup_read_only"

_BACKENDS = ("sqlite", "postgresql")
_EXAMPLES = "sqlite:///visdup.sqlite3 or postgresql+psycopg://user@host/database"
_INSTALL = "pip install 'visdup[postgres]'"


def database_path(url: URL) -> Path | None:
    """The file of a SQLite URL; None for an in-memory database or another backend."""
    if url.get_backend_name() != "sqlite":
        return None
    name = url.database or ""
    if not name or name == ":memory:" or name.startswith("file:") or url.query.get("mode"):
        return None
    return Path(name).expanduser().resolve()


def parse(url: str) -> URL:
    """The URL parsed and checked: a known backend, and psycopg where PostgreSQL names none."""
    shown = mask_password(url)
    if not isinstance(url, str) or not url.strip():
        raise StoreError(f"no database URL given: use {_EXAMPLES}")
    try:
        parsed = make_url(url.strip())
    except (ArgumentError, ValueError):
        raise StoreError(f"not a database URL: {shown!r} (use {_EXAMPLES})") from None
    backend = parsed.get_backend_name()
    if backend not in _BACKENDS:
        import difflib  # here: only a mistyped URL needs it, and every process opens a store

        near = difflib.get_close_matches(backend, _BACKENDS, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise StoreError(
            f"unsupported database {backend!r} in {shown!r}: {hint}visdup stores pages in "
            f"SQLite or PostgreSQL ({_EXAMPLES})"
        )
    if backend == "postgresql" and parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def make_engine(url: str, *, create: bool = True) -> Engine:
    """A checked, connected engine for ``url`` (pysqlite recipe and pragmas on SQLite).

    ``create=False`` opens a database that must exist already, for a command that only reads
    a store: a missing SQLite file is refused instead of created empty, and the connection
    leaves the file's journal mode as it is (a visdup store is in WAL mode since its first
    writer; another application's file must not be changed by a command that reads it).
    """
    parsed = parse(url)
    shown = mask_password(url)
    path = database_path(parsed)
    if path is not None:
        if create:
            _check_path(path)
        else:
            _check_existing(path)
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = create_engine(parsed, connect_args={"check_same_thread": False, "timeout": 30})
            beside = path if create else None  # a file written to: checkpoints beside
            _sqlite_transactions(engine, wal=create, own_checkpoints=beside is None)
            if beside is not None:
                checkpoints.attach(engine, beside)
        else:
            engine = create_engine(parsed, pool_size=5, max_overflow=5)
            _ping_when_idle(engine)
    except (NoSuchModuleError, ImportError) as exc:
        raise StoreError(
            f"the database driver {parsed.drivername!r} for {shown!r} is not installed: "
            f"{_INSTALL} (PostgreSQL through psycopg)"
            + (f" [{exc.name}]" if isinstance(exc, ImportError) and exc.name else "")
        ) from None
    except (ArgumentError, SQLAlchemyError, ValueError, TypeError) as exc:
        raise StoreError(f"cannot use database {shown!r}: {describe(exc, url)}") from None
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except Exception as exc:
        dispose(engine)
        raise StoreError(f"cannot connect to {shown!r}: {describe(exc, url)}") from None
    return engine


def dispose(engine: Engine) -> None:
    """Close the engine's connections, its checkpoint thread first (the last connection to
    close checkpoints what the log still holds)."""
    checkpoints.stop(engine)
    engine.dispose()


def describe(exc: BaseException, url: str) -> str:
    """The first line of a driver's error, without the URL's password or SQL noise."""
    original = getattr(exc, "orig", None) or exc
    message = str(original).strip().splitlines()[0] if str(original).strip() else ""
    message = message or type(original).__name__
    try:
        password = make_url(url).password
    except Exception:
        password = None
    if password:
        message = message.replace(str(password), "***")
    return message


def _check_path(path: Path) -> None:
    """A SQLite file needs a directory that exists and can be written (WAL adds files)."""
    if path.is_dir():
        raise StoreError(f"the SQLite database {path} is a directory")
    parent = path.parent
    if not parent.is_dir():
        raise StoreError(f"cannot create the SQLite database {path}: no directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write the SQLite database {path}: {parent} is not writable")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"cannot write the SQLite database {path}: permission denied")


def _check_existing(path: Path) -> None:
    """A SQLite file that a reading command opens: it must be there (connecting creates it)."""
    if path.is_dir():
        raise StoreError(f"the SQLite database {path} is a directory")
    if not path.exists():
        raise StoreError(f"no store at {path}: crawl into it first, or give another --db")
    if not os.access(path, os.R_OK):
        raise StoreError(f"cannot read the SQLite database {path}: permission denied")


#: Seconds a pooled PostgreSQL connection may have been unused before it is pinged as it is
#: handed out again.
IDLE_PING = 1.0
#: Where a pooled connection's last use is kept (its record's ``info``, cleared when the
#: connection is replaced).
_LAST_USED = "visdup_last_used"


def _ping_when_idle(engine: Engine) -> None:
    """A pooled connection unused for :data:`IDLE_PING` seconds is pinged as it is handed out,
    and replaced when the ping fails (the pool connects anew), as SQLAlchemy's
    ``pool_pre_ping`` does for every one. The label process hands out a connection several
    times a page (its transaction, its placing, the snapshot's read), each a round trip to ask
    a server that answered a few milliseconds before; a server gone within the last second is
    met by the first statement instead, which fails as an outage (:mod:`visdup.storage.outage`):
    the crawl waits and tries the page again.
    """
    dialect = engine.dialect

    def on_checkin(dbapi_conn: Any, record: Any) -> None:
        if dbapi_conn is not None:
            record.info[_LAST_USED] = time.monotonic()

    def on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        used = record.info.get(_LAST_USED)
        if used is None or time.monotonic() - used < IDLE_PING:
            return  # just connected, or used a moment ago
        try:
            dialect.do_ping(dbapi_conn)
        except Exception as exc:
            raise DisconnectionError(f"a pooled connection no longer answers: {exc}") from exc

    event.listen(engine, "checkin", on_checkin)
    event.listen(engine, "checkout", on_checkout)


def _sqlite_transactions(engine: Engine, *, wal: bool = True, own_checkpoints: bool = True) -> None:
    """SQLAlchemy's pysqlite recipe: the driver emits no BEGIN of its own; visdup does.

    ``wal``: switch the file to WAL mode (persistent in the file; a store's writer does it).
    ``own_checkpoints`` false: the connections' commits make no checkpoint, a thread of the
    engine does (:mod:`visdup.storage.checkpoints`).
    """

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        if wal:
            cur.execute("PRAGMA journal_mode=WAL")
        if not own_checkpoints:
            cur.execute("PRAGMA wal_autocheckpoint=0")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    def on_begin(conn: Connection) -> None:
        reading = conn.get_execution_options().get(READ_ONLY)
        conn.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")

    event.listen(engine, "connect", on_connect)
    event.listen(engine, "begin", on_begin)
