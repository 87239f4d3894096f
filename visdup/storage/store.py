"""The store: every query the rest of visdup needs, over the schema of ``storage.schema``.

SQLite by default (WAL, busy timeout, one writing process at a time) and PostgreSQL for
several processes. Each page's row, its fingerprints and the links found on it are written in
one transaction, so a crash never leaves a label without its page or a page whose links are
lost; those stored links are the frontier a later run of the same crawl resumes from.
"""

from __future__ import annotations

import functools
import json
import logging
import operator
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from keyword import iskeyword
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Column,
    Connection,
    CursorResult,
    Engine,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError, StatementError
from sqlalchemy.sql.dml import Insert

from visdup.errors import StoreError, VisdupError
from visdup.index.base import to_signed, to_unsigned
from visdup.storage import schema
from visdup.storage.body import pack_body, unpack_body
from visdup.storage.engine import READ_ONLY, database_path, describe, make_engine
from visdup.storage.locks import CLUSTERS_LOCK, WriterLock, advisory_lock
from visdup.storage.schema import (
    clusters,
    errors,
    layouts,
    links,
    pages,
    runs,
    snapshot_pages,
    snapshot_templates,
)
from visdup.storage.urls import canonical_url, mask_password

if TYPE_CHECKING:
    from visdup.index.sql import SqlIndex

logger = logging.getLogger(__name__)

__all__ = ["PageRecord", "Store", "pack_body", "unpack_body"]


def now() -> datetime:
    return datetime.now(UTC)


def _signed(key: int) -> int:
    """A 64-bit key as the signed integer a BIGINT column holds."""
    return key - (1 << 64) if key >= 1 << 63 else key


@dataclass
class PageRecord:
    """Everything stored about one page; the pipelines fill it in stage by stage."""

    url: str
    final_url: str | None = None
    status: int | None = None
    depth: int | None = None
    referer: str | None = None
    content_type: str | None = None
    encoding: str | None = None
    body_hash: str | None = None
    body: bytes | None = None
    problem: str | None = None
    truncated: bool = False
    replacement_ratio: float | None = None
    term: str | None = None
    term_size: int | None = None
    term_nodes: int | None = None
    simhash: int | None = None
    duplicate_of: int | None = None
    similarity: float | None = None
    kind: str | None = None
    title: str | None = None
    canonical: str | None = None
    content_print: str | None = None
    content_simhash: int | None = None
    content_duplicate_of: int | None = None
    content_similarity: float | None = None
    content_kind: str | None = None
    verdict: str | None = None
    cluster_id: int | None = None
    links: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        values = {k: v for k, v in self.__dict__.items() if k != "links"}
        values["url"] = canonical_url(self.url)
        for key in ("simhash", "content_simhash"):
            if values[key] is not None:
                values[key] = to_signed(values[key])
        return values


def _new_id(result: CursorResult[Any]) -> int:
    """The primary key an INSERT gave its row."""
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


# Statements of every stored page, built once: building one per page costs more than the
# database's own work on it.
_PAGE_BY_URL = select(pages.c.id).where(pages.c.url == bindparam("page_url"))
_INSERT_PAGE = insert(pages)
_GROW_CLUSTER = (
    update(clusters).where(clusters.c.id == bindparam("cluster")).values(size=clusters.c.size + 1)
)
# Statements run for every page, built once: building one costs more than running it.
_PAGE_BY_BODY_HASH = (
    select(pages.c.id)
    .where(pages.c.body_hash == bindparam("body_hash"), pages.c.problem.is_(None))
    .order_by(pages.c.id)
    .limit(1)
)
_INSERT_COMPARISONS = insert(schema.comparisons)

#: One cluster's row; the columns to set are the other keys of the parameters.
_UPDATE_CLUSTER = update(clusters).where(clusters.c.id == bindparam("cluster_id"))
#: A new cluster's row, of the columns the parameters name.
_INSERT_CLUSTER = insert(clusters)


#: A parameter the caller must give (no value of its own in the statement).
_REQUIRED = object()


@dataclass(frozen=True, slots=True)
class _DriverStatement:
    """A statement compiled once for SQLite, run on the driver's own connection.

    SQLAlchemy's execution (its context, events and result objects) costs 15-20 µs a
    statement, ten times SQLite's own work on a lookup by key, and a page's transaction runs
    half a dozen, one of them a row per link. The SQL and each parameter's conversion (a
    datetime's text, a boolean's integer) are SQLAlchemy's, read from the compiled statement,
    so what is stored does not change.
    """

    #: The statement compiled (kept: the store's cache is keyed by its id).
    statement: Any
    sql: str
    #: (name, value when not given or _REQUIRED, conversion) per positional parameter.
    params: tuple[tuple[str, Any, Callable[[Any], Any] | None], ...]
    #: A row of the columns it selects (None: it selects none).
    row: Any
    #: The parameters read in one call, where every one is given (a row of many).
    take: Callable[[Mapping[str, Any]], tuple[Any, ...]] | None = None
    #: (position, conversion) of the parameters ``take`` reads that are converted.
    converted: tuple[tuple[int, Callable[[Any], Any]], ...] = ()

    def values(self, given: Mapping[str, Any]) -> tuple[Any, ...]:
        if self.take is not None:
            taken = self.take(given)
            if not self.converted:
                return taken
            out = list(taken)
            for position, conversion in self.converted:
                out[position] = conversion(out[position])
            return tuple(out)
        values = []
        for name, default, convert in self.params:
            value = given[name] if default is _REQUIRED else given.get(name, default)
            values.append(value if convert is None else convert(value))
        return tuple(values)


def _compile_for_driver(
    statement: Any, keys: tuple[str, ...] | None, dialect: Dialect
) -> _DriverStatement | None:
    """``statement`` compiled for the driver; None where SQLAlchemy would add work of its
    own at execution (a column default, a list expanded into the SQL): it runs it then."""
    compiled = statement.compile(dialect=dialect, column_keys=list(keys) if keys else None)
    if (
        compiled.positiontup is None
        or getattr(compiled, "insert_prefetch", None)
        or getattr(compiled, "update_prefetch", None)
        or compiled.literal_execute_params
        or compiled.post_compile_params
    ):
        return None
    params = []
    for name in compiled.positiontup:
        bind = compiled.binds[name]
        default = _REQUIRED if bind.required or (keys and name in keys) else bind.effective_value
        params.append((name, default, bind.type.dialect_impl(dialect).bind_processor(dialect)))
    selected = getattr(statement, "selected_columns", None)
    row: Any = None
    if selected is not None:
        # rows come back as the driver gives them: only a table's own columns (an expression
        # or a label is named by SQLAlchemy's compiler), each named once, that SQLAlchemy
        # would hand over unconverted (no result processor: not a datetime, not a boolean)
        names = [getattr(c, "name", None) for c in selected]
        if (
            not names
            or not all(isinstance(c, Column) for c in selected)
            or len(set(names)) != len(names)
            or not all(isinstance(n, str) and n.isidentifier() and not iskeyword(n) for n in names)
            or any(c.type.dialect_impl(dialect).result_processor(dialect, None) for c in selected)
        ):
            return None
        row = _row_type(tuple(str(n) for n in names))
    take = None
    if len(params) > 1 and all(default is _REQUIRED for _n, default, _c in params):
        take = operator.itemgetter(*(name for name, _d, _c in params))
    converted = tuple((i, convert) for i, (_n, _d, convert) in enumerate(params) if convert)
    return _DriverStatement(statement, compiled.string, tuple(params), row, take, converted)


def _row_type(names: tuple[str, ...]) -> Any:
    """The type of a row read on the driver: its columns by name (plain values, as read)."""
    return namedtuple("StoredRow", names)


def _values(driver: _DriverStatement, params: Any, many: bool = False) -> Any:
    """The driver's parameters of ``params``; a value a parameter's conversion refuses
    raises StatementError, as SQLAlchemy's own execution does."""
    try:
        if many:
            return [driver.values(row) for row in params]
        return driver.values(params)
    except (TypeError, ValueError) as exc:
        raise StatementError(str(exc), driver.sql, params, exc) from exc


@functools.cache
def _inserts_ignoring_conflicts(postgres: bool) -> tuple[Insert, Insert]:
    """(a layout signature's insert, a page's links' insert) in the store's dialect, rows
    already there left as they are: a signature another process stored first, a link already
    known, with no savepoint. Built on first use: a process on SQLite never imports
    PostgreSQL's dialect. (PostgreSQL's driver reports no row count for the layout's insert:
    the row it returns says it was written.)"""
    if postgres:
        from sqlalchemy.dialects import postgresql

        return (
            postgresql.insert(layouts).on_conflict_do_nothing().returning(layouts.c.key),
            postgresql.insert(links).on_conflict_do_nothing(),
        )
    from sqlalchemy.dialects import sqlite

    return (
        sqlite.insert(layouts).on_conflict_do_nothing(),
        sqlite.insert(links).on_conflict_do_nothing(),
    )


class Store:
    """Schema owner and query surface; thread-safe (one connection per call from the pool).

    Reads go through a connection that begins a deferred transaction (WAL readers never wait);
    everything else begins IMMEDIATE on SQLite (see :mod:`visdup.storage.engine`).
    """

    def __init__(self, engine: Engine, *, url: str | None = None, writer: bool = False):
        self.engine = engine
        self._reader = engine.execution_options(**{READ_ONLY: True})
        self.url = mask_password(url if url is not None else engine.url.render_as_string())
        path = database_path(engine.url)
        self._writer = WriterLock(path) if path is not None else None
        #: Layout of the shared band table (VISDUP_INDEX_LAYOUT: "bands" or "pairs").
        self.index_layout = "bands"
        #: SQLite runs each page's statements on its driver (:class:`_DriverStatement`).
        self._on_driver = engine.dialect.name == "sqlite"
        self._driver_statements: dict[tuple[int, tuple[str, ...] | None], Any] = {}
        if writer:
            self.claim_writer()
        self.migrate()
        with self._reader.connect() as conn:
            self._canonical_from = schema.canonical_from(conn)

    @classmethod
    def from_url(cls, url: str, *, writer: bool = False) -> Store:
        """Open (and create or migrate) the store at ``url``; StoreError names what is wrong.

        ``writer=True`` (a crawl) also claims the SQLite file's one writer lock at once, so a
        second live crawl is refused before it fetches anything.
        """
        engine = make_engine(url)
        try:
            return cls(engine, url=url, writer=writer)
        except VisdupError:
            engine.dispose()
            raise
        except SQLAlchemyError as exc:
            engine.dispose()
            raise StoreError(
                f"cannot open the store {mask_password(url)!r}: {describe(exc, url)}"
            ) from None

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def claim_writer(self) -> None:
        """Become the one writing process of a SQLite store (a no-op on PostgreSQL)."""
        if self._writer is not None:
            self._writer.acquire()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.release()
        self.engine.dispose()

    # ------------------------------------------------------------------ per-page statements
    def _driver_statement(
        self, statement: Any, keys: tuple[str, ...] | None = None
    ) -> _DriverStatement | None:
        """``statement`` for the driver itself (``keys``: the columns an INSERT or UPDATE is
        given); None on PostgreSQL, whose own round trips outweigh SQLAlchemy's work."""
        if not self._on_driver:
            return None
        key = (id(statement), keys)
        if key not in self._driver_statements:  # None is kept too: SQLAlchemy runs it
            self._driver_statements[key] = _compile_for_driver(statement, keys, self.engine.dialect)
        return self._driver_statements[key]

    def _on(
        self, conn: Connection, driver: _DriverStatement, params: Any, many: bool = False
    ) -> Any:
        """Run ``driver`` with ``params`` (a mapping, or a list of them with ``many``) on the
        SQLite connection under ``conn``, in its transaction (begun here as SQLAlchemy begins
        one, where none is yet: the driver alone would commit each statement). Errors reach
        the caller as SQLAlchemy raises them: a value no parameter takes as a StatementError,
        the driver's own as its DBAPIError (IntegrityError)."""
        values = _values(driver, params, many)
        if not conn.in_transaction():
            conn.begin()
        return self._execute(conn.connection.driver_connection, driver, values, many)

    def _execute(self, raw: Any, driver: _DriverStatement, values: Any, many: bool = False) -> Any:
        """``driver`` on the sqlite3 connection ``raw``: its cursor; the driver's error raised
        as SQLAlchemy raises it (its DBAPIError: IntegrityError, OperationalError, ...)."""
        assert raw is not None
        error: type[Exception] = self.engine.dialect.loaded_dbapi.Error
        try:
            if many:
                return raw.executemany(driver.sql, values)
            return raw.execute(driver.sql, values)
        except error as exc:
            raise DBAPIError.instance(
                driver.sql, values, exc, error, dialect=self.engine.dialect
            ) from exc

    def _scalar(self, conn: Connection, statement: Any, params: Mapping[str, Any]) -> Any:
        """The first column of the first row, or None."""
        driver = self._driver_statement(statement)
        if driver is None:
            return conn.execute(statement, params).scalar()
        row = self._on(conn, driver, params).fetchone()
        return None if row is None else row[0]

    def _run(self, conn: Connection, statement: Any, params: Mapping[str, Any]) -> int:
        """Run an INSERT or UPDATE with ``params``: the rows it changed."""
        driver = self._driver_statement(statement, tuple(params))
        if driver is None:
            return int(conn.execute(statement, params).rowcount)
        return int(self._on(conn, driver, params).rowcount)

    def _insert(self, conn: Connection, statement: Any, row: Mapping[str, Any]) -> int:
        """Insert one row: the primary key it was given."""
        driver = self._driver_statement(statement, tuple(row))
        if driver is None:
            return _new_id(conn.execute(statement, row))
        return int(self._on(conn, driver, row).lastrowid)

    def _run_many(self, conn: Connection, statement: Any, rows: list[dict[str, Any]]) -> None:
        """Run an INSERT for each of ``rows`` (given the same columns), in one call."""
        driver = self._driver_statement(statement, tuple(rows[0]))
        if driver is None:
            conn.execute(statement, rows)
            return
        self._on(conn, driver, rows, many=True)

    def read_first(self, statement: Any, params: Mapping[str, Any]) -> Any:
        """The first row of a read outside any transaction (its columns by name), or None.

        On SQLite one statement on a pooled connection, in SQLite's own autocommit: what a
        deferred BEGIN and its end around it would give, for a fifth of the work.
        """
        driver = self._driver_statement(statement)
        if driver is None:
            with self._reader.connect() as conn:
                return conn.execute(statement, params).first()
        values = _values(driver, params)
        raw = self.engine.raw_connection()
        try:
            row = self._execute(raw.driver_connection, driver, values).fetchone()
        finally:
            raw.close()
        return None if row is None else driver.row._make(row)

    # ------------------------------------------------------------------ schema
    def migrate(self) -> int:
        """Create the schema on first use, or upgrade it, under the schema lock."""
        with self._reader.connect() as conn:
            version = schema.stored_version(conn)
        if version == schema.SCHEMA_VERSION:
            return version
        with self.engine.begin() as conn:
            return schema.migrate(conn)

    def band_index(
        self, channel: str, k: int, max_candidates: int | None = None
    ) -> SqlIndex | None:
        """The shared SQL band index of a channel, where another process may read it.

        Only PostgreSQL has several writers; a SQLite store has one process, whose in-memory
        index (warmed from the pages' fingerprints) sees every page, so no band rows are written.
        Its layout is :attr:`index_layout` (VISDUP_INDEX_LAYOUT, set by the crawl).
        """
        if not self.is_postgres:
            return None
        from visdup.index.sql import SqlIndex

        try:
            return SqlIndex(
                self.engine, channel, k=k, layout=self.index_layout, max_candidates=max_candidates
            )
        except ValueError as exc:  # another layout or k wrote this store's band table
            raise StoreError(
                f"the store's band table does not fit VISDUP_HAMMING_K={k} and "
                f"VISDUP_INDEX_LAYOUT={self.index_layout!r}: {exc}"
            ) from None

    # ------------------------------------------------------------------ runs
    def begin_run(self, spider: str, crawl: str | None = None) -> int:
        """Start a run of ``crawl`` (:func:`visdup.storage.urls.crawl_key`) as the store's writer.

        A second live writer on the same SQLite file gets a StoreError that names PostgreSQL.
        """
        self.claim_writer()
        with self.engine.begin() as conn:
            result = conn.execute(insert(runs).values(spider=spider, crawl=crawl, started_at=now()))
            return _new_id(result)

    def finish_run(self, run_id: int, reason: str, stats: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(runs)
                .where(runs.c.id == run_id)
                .values(finished_at=now(), reason=reason, stats=json.dumps(stats, default=str))
            )
        if self._writer is not None:
            self._writer.release()

    # ------------------------------------------------------------------ pages
    def insert_page(
        self,
        conn: Connection,
        record: PageRecord,
        run_id: int | None,
        *,
        links_followed: bool = True,
    ) -> int | None:
        """Insert one page and its links inside the caller's transaction; None if the URL exists.

        The page's cluster counts one more page in the same transaction, so a cluster's size is
        always the number of stored pages that carry it.
        """
        row = record.row()
        row["run_id"] = run_id
        row["fetched_at"] = now()
        existing = self._scalar(conn, _PAGE_BY_URL, {"page_url": row["url"]})
        if existing is not None:
            return None
        if self.is_postgres:
            try:
                with conn.begin_nested():
                    page_id = _new_id(conn.execute(_INSERT_PAGE, row))
            except IntegrityError:
                return None  # another process stored this URL a moment ago
        else:  # SQLite writes in BEGIN IMMEDIATE: no one stored it between the look and here
            page_id = self._insert(conn, _INSERT_PAGE, row)
        self._add_links(conn, page_id, record, run_id, links_followed)
        if record.cluster_id is not None:
            self._run(conn, _GROW_CLUSTER, {"cluster": record.cluster_id})
        return page_id

    def _add_links(
        self,
        conn: Connection,
        page_id: int,
        record: PageRecord,
        run_id: int | None,
        followed: bool,
    ) -> None:
        urls = sorted({canonical_url(u) for u in record.links})
        if not urls:
            return
        depth = (record.depth or 0) + 1
        rows = [
            {"url": u, "found_on": page_id, "depth": depth, "run_id": run_id, "followed": followed}
            for u in urls
        ]
        self._run_many(conn, _inserts_ignoring_conflicts(self.is_postgres)[1], rows)

    def add_error(self, run_id: int | None, url: str | None, stage: str, message: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                insert(errors).values(
                    run_id=run_id, url=url, stage=stage, message=message[:2000], at=now()
                )
            )

    def page_by_body_hash(self, conn: Connection, body_hash: str) -> int | None:
        found: int | None = self._scalar(conn, _PAGE_BY_BODY_HASH, {"body_hash": body_hash})
        return found

    def parent_of(self, conn: Connection, page_id: int, column: str) -> int | None:
        """A page's ``duplicate_of`` or ``content_duplicate_of``, as ``conn`` sees it."""
        return conn.execute(select(pages.c[column]).where(pages.c.id == page_id)).scalar()

    def page_fields(self, conn: Connection, page_id: int, *names: str) -> Any:
        """Some columns of one page, as ``conn`` sees it (None when there is no such page)."""
        return conn.execute(
            select(*(pages.c[n] for n in names)).where(pages.c.id == page_id)
        ).first()

    def repoint_group(
        self, conn: Connection, old: int, new: int, old_fields: dict[str, Any]
    ) -> None:
        """``new`` becomes the original of ``old``'s group, inside the caller's transaction.

        Every page that named ``old`` as its original names ``new``; ``old`` takes
        ``old_fields`` (its verdict as a duplicate of ``new``).
        """
        for column in (pages.c.duplicate_of, pages.c.content_duplicate_of):
            conn.execute(
                update(pages).where(column == old, pages.c.id != new).values({column: new})
            )
        conn.execute(update(pages).where(pages.c.id == old).values(**old_fields))

    def values(self, column: str, ids: Iterable[int]) -> dict[int, Any]:
        """One column of the given pages (terms, content prints), keyed by page id."""
        ids = list(ids)
        if not ids:
            return {}
        col = pages.c[column]
        with self._reader.connect() as conn:
            return {
                row[0]: row[1]
                for row in conn.execute(select(pages.c.id, col).where(pages.c.id.in_(ids)))
            }

    def fingerprints(self, column: str = "simhash") -> Iterator[tuple[int, int]]:
        """(page id, unsigned fingerprint) of every stored page, to warm an in-memory index."""
        col = pages.c[column]
        with self._reader.connect() as conn:
            for row in conn.execute(
                select(pages.c.id, col).where(col.is_not(None)).order_by(pages.c.id)
            ):
                yield row[0], to_unsigned(row[1])

    def stored_urls(self) -> set[str]:
        """Every stored page's URL in canonical form (rows of schema version 1 made so here)."""
        first = self._canonical_from
        with self._reader.connect() as conn:
            return {
                url if page_id >= first else canonical_url(url)
                for page_id, url in conn.execute(select(pages.c.id, pages.c.url))
            }

    def stored_page(self, url: str) -> Any:
        """The stored page of this URL with its labels (``id``, ``run_id``, ``verdict``,
        ``kind``, ``duplicate_of``, ``similarity``, ``problem``, ``truncated``), or None."""
        c = pages.c
        query = select(
            c.id, c.run_id, c.verdict, c.kind, c.duplicate_of, c.similarity, c.problem, c.truncated
        ).where(c.url == canonical_url(url))
        with self._reader.connect() as conn:
            return conn.execute(query).first()

    def is_stored(self, url: str) -> bool:
        """Whether a page of this canonical URL is stored (one indexed lookup)."""
        with self._reader.connect() as conn:
            return conn.execute(select(pages.c.id).where(pages.c.url == url)).first() is not None

    def unfetched_links(
        self, crawl: str | None = None, limit: int = 100_000
    ) -> list[tuple[str, int]]:
        """Links found by earlier runs of ``crawl`` that no run stored yet: the frontier a stop
        or a crash left behind (``crawl=None``: the links of every run)."""
        query = (
            select(links.c.url, links.c.depth)
            .outerjoin(pages, pages.c.url == links.c.url)
            .where(pages.c.id.is_(None), links.c.followed.is_(True))
        )
        if crawl is not None:
            # runs of schema version 1 name no crawl: their links stay candidates, which the
            # spider's scope (scheme, host, port) then sorts
            query = query.join(runs, runs.c.id == links.c.run_id).where(
                or_(runs.c.crawl == crawl, runs.c.crawl.is_(None))
            )
        query = query.order_by(links.c.depth, links.c.url).limit(limit)
        with self._reader.connect() as conn:
            return [(r.url, r.depth or 0) for r in conn.execute(query)]

    def rows(self, *columns: str) -> list[Any]:
        cols = [pages.c[c] for c in columns] if columns else [pages]
        with self._reader.connect() as conn:
            return list(conn.execute(select(*cols).order_by(pages.c.id)))

    def page_bodies(self) -> Iterator[tuple[int, str, bytes, str | None]]:
        """(id, url, body, encoding the crawl read it in) of every stored page with a usable
        body, for offline re-processing."""
        with self._reader.connect() as conn:
            query = (
                select(pages.c.id, pages.c.url, pages.c.body, pages.c.encoding)
                .where(pages.c.body.is_not(None), pages.c.problem.is_(None))
                .order_by(pages.c.id)
            )
            for row in conn.execute(query):
                yield row.id, row.url, unpack_body(row.body) or b"", row.encoding

    def update_pages(self, values: dict[int, dict[str, Any]]) -> None:
        """Rewrite some columns of some pages in one transaction (a saved re-analysis)."""
        with self.engine.begin() as conn:
            for page_id, vals in values.items():
                conn.execute(update(pages).where(pages.c.id == page_id).values(**vals))

    # ------------------------------------------------------------------ comparisons
    def comparisons_ready(self) -> bool:
        """Create the comparisons table where a store of schema version 3 predates it."""
        from sqlalchemy import inspect

        table = schema.comparisons
        with self._reader.connect() as conn:
            if inspect(conn).has_table(table.name):
                return True
        with self.engine.begin() as conn:
            schema.lock_schema(conn)
            table.create(conn, checkfirst=True)  # with its index
        return True

    def has_comparisons(self) -> bool:
        """Whether the store has the comparisons table (stores made before it do not)."""
        from sqlalchemy import inspect

        with self._reader.connect() as conn:
            return bool(inspect(conn).has_table(schema.comparisons.name))

    def add_comparisons(
        self, conn: Connection, page_id: int, rows: Iterable[tuple[int, str, float]]
    ) -> None:
        """A page's measured candidates, (other page, channel, similarity), in its transaction."""
        values = [
            {"page_id": page_id, "other_id": o, "channel": c, "similarity": s} for o, c, s in rows
        ]
        if values:
            self._run_many(conn, _INSERT_COMPARISONS, values)

    def comparison_rows(self) -> list[Any]:
        """Every stored comparison (page_id, other_id, channel, similarity), by page."""
        table = schema.comparisons
        with self._reader.connect() as conn:
            return list(
                conn.execute(
                    select(
                        table.c.page_id, table.c.other_id, table.c.channel, table.c.similarity
                    ).order_by(table.c.page_id, table.c.channel, table.c.similarity.desc())
                )
            )

    def pages_without_comparisons(self) -> int:
        """Pages whose closest match is stored but none of their comparisons are (stored
        before the table, or with VISDUP_COMPARISONS_MAX at 0)."""
        table = schema.comparisons
        matched = or_(
            pages.c.similarity.is_not(None)
            & pages.c.term.is_not(None)
            & or_(pages.c.kind.is_(None), pages.c.kind != "exact"),
            pages.c.content_similarity.is_not(None),
        )
        # a copy stored before its original is listed only as the other page of a comparison
        listed = or_(
            select(table.c.page_id).where(table.c.page_id == pages.c.id).exists(),
            select(table.c.other_id).where(table.c.other_id == pages.c.id).exists(),
        )
        with self._reader.connect() as conn:
            return int(
                conn.execute(
                    select(func.count()).select_from(pages).where(matched, ~listed)
                ).scalar_one()
            )

    # ------------------------------------------------------------------ clusters
    def save_clusters(self, items: list[dict[str, Any]]) -> None:
        """Replace the stored clusters (a batch re-clustering), and the pages' cluster ids.

        An item's ``layouts`` (its signatures, when given) are stored under its id and the
        signatures of another version go, so a later crawl starts from the clusters the batch
        made; signatures of pages the batch could not read again stay.
        """
        from visdup.templates.signature import layout_key

        with self.engine.begin() as conn:
            conn.execute(clusters.delete())
            conn.execute(update(pages).values(cluster_id=None))
            if any("layouts" in item for item in items):
                # signatures of another version go; those of pages the batch could not read
                # again (no stored body) stay, for the crawl to link as before
                foreign = [
                    _signed(key)
                    for key, labels, sizes in self.changed_layouts(conn, -1)
                    if layout_key(labels, sizes) != key
                ]
                for start in range(0, len(foreign), 500):
                    conn.execute(
                        layouts.delete().where(layouts.c.key.in_(foreign[start : start + 500]))
                    )
            for item in items:
                for layout in item.get("layouts", ()):
                    if not self.put_layout(
                        conn,
                        layout.key,
                        cluster_id=item["id"],
                        labels=layout.stored_labels,
                        sizes=layout.sizes,
                        version=1,
                    ):
                        conn.execute(
                            update(layouts)
                            .where(layouts.c.key == _signed(layout.key))
                            .values(cluster_id=item["id"])
                        )
                members = item.get("members", [])
                conn.execute(
                    insert(clusters).values(
                        id=item["id"],
                        representative=item.get("representative"),
                        size=len(members),
                        state=json.dumps(item.get("state")) if item.get("state") else None,
                        template=json.dumps(item.get("template")) if item.get("template") else None,
                        version=0,
                        updated_at=now(),
                    )
                )
                for start in range(0, len(members), 500):
                    conn.execute(
                        update(pages)
                        .where(pages.c.id.in_(members[start : start + 500]))
                        .values(cluster_id=item["id"])
                    )

    def save_templates(
        self,
        templates: list[dict[str, Any]],
        records: list[dict[str, Any]],
        clusters: dict[str, int] | None = None,
        representatives: Mapping[int, str] | None = None,
    ) -> None:
        """Store an extraction's clusters: their templates, sizes and the pages' cluster ids.

        ``clusters`` (URL → cluster id) keeps every page's cluster, with or without a template;
        without it, pages are placed by their records' template. ``representatives`` (cluster
        id → URL): the page that stands for each cluster; without one, its template's.
        """
        chosen = representatives or {}
        members: dict[Any, list[str]] = {}
        if clusters is not None:
            for url, cid in clusters.items():
                members.setdefault(cid, []).append(url)
        else:
            for record in records:
                if record.get("cluster") is not None:
                    members.setdefault(record["cluster"], []).append(record["url"])
        ids = {url: page_id for page_id, url in self.rows("id", "url")}
        by_cluster = {t["cluster"]: t for t in templates if t.get("cluster") is not None}
        self.save_clusters(
            [
                {
                    "id": cid,
                    "representative": chosen.get(cid)
                    or (by_cluster.get(cid) or {}).get("representative")
                    or min(urls),
                    "template": by_cluster.get(cid),
                    "members": [ids[u] for u in urls if u in ids],
                }
                for cid, urls in sorted(members.items())
            ]
            + [
                {
                    "id": cid,
                    "representative": chosen.get(cid) or t.get("representative"),
                    "template": t,
                }
                for cid, t in by_cluster.items()
                if cid not in members
            ]
        )

    def clusters_version(self, conn: Connection) -> int:
        return int(
            conn.execute(select(func.coalesce(func.max(clusters.c.version), 0))).scalar_one()
        )

    def changed_clusters(self, conn: Connection, since: int) -> list[Any]:
        """Clusters written after version ``since`` (by this process or another one)."""
        return list(
            conn.execute(select(clusters).where(clusters.c.version > since).order_by(clusters.c.id))
        )

    def put_cluster(
        self,
        conn: Connection,
        cluster_id: int,
        *,
        version: int,
        representative: str | None = None,
        state: Any = None,
        template: Any = None,
    ) -> None:
        """Insert or update one cluster row; only the given values change.

        A cluster's size is not written here: :meth:`insert_page` counts each stored page.
        """
        values: dict[str, Any] = {"version": version, "updated_at": now()}
        if representative is not None:
            values["representative"] = representative
        if state is not None:
            values["state"] = json.dumps(state)
        if template is not None:
            values["template"] = json.dumps(template)
        if self._run(conn, _UPDATE_CLUSTER, {"cluster_id": cluster_id, **values}) == 0:
            self._run(conn, _INSERT_CLUSTER, {"id": cluster_id, "size": 0, **values})

    def put_layout(
        self,
        conn: Connection,
        key: int,
        *,
        cluster_id: int,
        labels: Sequence[str],
        sizes: Sequence[int],
        version: int,
    ) -> bool:
        """Store a layout signature met for the first time; False if another process has."""
        row = {
            "key": _signed(key),
            "cluster_id": cluster_id,
            "labels": json.dumps(list(labels)),
            "sizes": json.dumps(list(sizes)),
            "version": version,
        }
        insert_layout = _inserts_ignoring_conflicts(self.is_postgres)[0]
        if self.is_postgres:
            return conn.execute(insert_layout, row).first() is not None
        return self._run(conn, insert_layout, row) == 1

    def changed_layouts(
        self, conn: Connection, since: int
    ) -> list[tuple[int, list[str], list[int]]]:
        """Layout signatures written after version ``since``: (unsigned key, labels, sizes)."""
        rows = conn.execute(
            select(layouts.c.key, layouts.c.labels, layouts.c.sizes)
            .where(layouts.c.version > since)
            .order_by(layouts.c.version, layouts.c.key)
        )
        return [
            (key + (1 << 64) if key < 0 else key, json.loads(labels), json.loads(sizes))
            for key, labels, sizes in rows
        ]

    def merge_clusters(self, conn: Connection, into: int, absorbed: Sequence[int]) -> None:
        """Clusters ``absorbed`` became part of ``into``: their pages and signatures follow,
        their rows go, and ``into`` counts its pages anew (in the caller's transaction)."""
        if not absorbed:
            return
        gone = list(absorbed)
        conn.execute(update(pages).where(pages.c.cluster_id.in_(gone)).values(cluster_id=into))
        conn.execute(update(layouts).where(layouts.c.cluster_id.in_(gone)).values(cluster_id=into))
        # every snapshot sees the merged template under its new id
        conn.execute(
            update(snapshot_pages)
            .where(snapshot_pages.c.cluster_id.in_(gone))
            .values(cluster_id=into)
        )
        taken = select(snapshot_templates.c.snapshot_id).where(
            snapshot_templates.c.cluster_id == into
        )
        for old in gone:  # one at a time: a snapshot keeps one aggregate row per template
            conn.execute(
                update(snapshot_templates)
                .where(
                    snapshot_templates.c.cluster_id == old,
                    snapshot_templates.c.snapshot_id.not_in(taken.scalar_subquery()),
                )
                .values(cluster_id=into)
            )
        conn.execute(clusters.delete().where(clusters.c.id.in_(gone)))
        size = conn.execute(
            select(func.count()).select_from(pages).where(pages.c.cluster_id == into)
        ).scalar_one()
        done = conn.execute(update(clusters).where(clusters.c.id == into).values(size=size))
        if done.rowcount == 0:  # a renamed template: its new id has no row yet
            conn.execute(insert(clusters).values(id=into, size=size, updated_at=now()))

    def move_page_cluster(self, page_id: int, old: int, live: Callable[[int], int]) -> int:
        """A page stored under template ``old`` as it merged into another: it follows to the
        id ``live(old)`` gives, which then counts it (the merge counted its pages without this
        one); the id it is stored under now.

        ``live`` is read inside the move's transaction, under the clusters' lock: a merge that
        took the lock first has renamed the template by then, and one that takes it later moves
        this page itself. An id read before the transaction could be dead by the time it
        was written (a blog crawl's page stored under a template merged a moment before).
        """
        with self.engine.begin() as conn:
            advisory_lock(conn, [CLUSTERS_LOCK])
            into = live(old)
            if into == old:
                return old
            moved = conn.execute(
                update(pages)
                .where(pages.c.id == page_id, pages.c.cluster_id == old)
                .values(cluster_id=into)
            )
            if moved.rowcount == 1:  # counted where it was (a row the merge deleted)
                conn.execute(
                    update(clusters).where(clusters.c.id == into).values(size=clusters.c.size + 1)
                )
        return into

    def cluster_rows(self) -> list[Any]:
        with self._reader.connect() as conn:
            return list(conn.execute(select(clusters).order_by(clusters.c.id)))

    def cluster_pages(self, conn: Connection) -> Iterator[tuple[int, str]]:
        """(cluster id, URL) of every stored page placed in a template cluster."""
        query = select(pages.c.cluster_id, pages.c.url).where(pages.c.cluster_id.is_not(None))
        for cluster_id, url in conn.execute(query):
            yield int(cluster_id), url

    def set_representatives(self, conn: Connection, representatives: Mapping[int, str]) -> None:
        """Name the page that stands for each of these clusters (rows that name another)."""
        c = clusters.c
        for cluster_id, url in sorted(representatives.items()):
            conn.execute(
                update(clusters)
                .where(c.id == cluster_id, or_(c.representative.is_(None), c.representative != url))
                .values(representative=url, updated_at=now())
            )

    def error_rows(self) -> list[Any]:
        with self._reader.connect() as conn:
            return list(conn.execute(select(errors).order_by(errors.c.id)))

    def run_rows(self) -> list[Any]:
        with self._reader.connect() as conn:
            return list(conn.execute(select(runs).order_by(runs.c.id)))
