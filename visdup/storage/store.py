"""The store: every query the rest of visdup needs, over the schema of ``storage.schema``.

SQLite by default (WAL, busy timeout, one writing process at a time) and PostgreSQL for
several processes. Each page's row, its fingerprints and the links found on it are written in
one transaction, so a crash never leaves a label without its page or a page whose links are
lost; those stored links are the frontier a later run of the same crawl resumes from.

Callers build no statement and open no connection: one that must hold several of the store's
writes together (a page and its labels, a cluster merge) takes a handle from
:meth:`Store.transaction` (with the advisory locks it names) and passes it back to the store's
methods. The layers under :class:`Store`, one module per concept: connections and transactions
(:mod:`visdup.storage.transactions`), the per-page statements run on SQLite's driver
(:mod:`visdup.storage.fastpath`), clusters and layout signatures
(:mod:`visdup.storage.clusters`), the crawl's measures (:mod:`visdup.storage.comparisons`) and
drift snapshots (:mod:`visdup.storage.snapshots`, which :mod:`visdup.drift.snapshot` calls
directly), and the shared band table of fingerprints (:mod:`visdup.storage.fingerprints`).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, insert, or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.dml import Insert

from visdup.errors import StoreError, VisdupError
from visdup.storage import clusters as _clusters
from visdup.storage import comparisons, schema
from visdup.storage import links as _links
from visdup.storage import responses as _responses
from visdup.storage.body import pack_body, unpack_body
from visdup.storage.clusters import GROW_CLUSTER
from visdup.storage.engine import database_path, describe, dispose, make_engine
from visdup.storage.fastpath import StatementRunner, new_id, runs_on_driver
from visdup.storage.locks import WriterLock
from visdup.storage.page_record import PageRecord
from visdup.storage.schema import errors, links, pages, runs, unsigned
from visdup.storage.transactions import Handle
from visdup.storage.urls import canonical_url, mask_password

logger = logging.getLogger(__name__)

__all__ = ["Handle", "PageRecord", "Store", "pack_body", "unpack_body"]


def _nothing() -> None:
    pass


def now() -> datetime:
    """The store's clock: every row it stamps reads it (tests set it)."""
    return datetime.now(UTC)


# Statements run for every page, built once: building one costs more than running it.
_PAGE_BY_URL = runs_on_driver(select(pages.c.id).where(pages.c.url == bindparam("page_url")))
_INSERT_PAGE = runs_on_driver(insert(pages))
_PAGE_BY_BODY_HASH = runs_on_driver(
    select(pages.c.id)
    .where(pages.c.body_hash == bindparam("body_hash"), pages.c.problem.is_(None))
    .order_by(pages.c.id)
    .limit(1)
)


@functools.cache
def _insert_new_page() -> Insert:
    """PostgreSQL: a page's insert that gives its id, or no row where another process stored
    its URL since this one looked (one statement, where a savepoint around a plain insert
    took three)."""
    from sqlalchemy.dialects import postgresql

    return (
        postgresql.insert(pages)
        .on_conflict_do_nothing(index_elements=[pages.c.url])
        .returning(pages.c.id)
    )


class Store(StatementRunner):
    """Schema owner and query surface; thread-safe (one connection per call from the pool).

    Reads go through a connection that begins a deferred transaction (WAL readers never wait);
    everything else begins IMMEDIATE on SQLite (:mod:`visdup.storage.transactions`).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        url: str | None = None,
        writer: bool = False,
        create: bool = True,
        migrate: bool = True,
    ):
        super().__init__(engine)
        self.url = mask_password(url if url is not None else engine.url.render_as_string())
        path = database_path(engine.url)
        self._writer = WriterLock(path) if path is not None else None
        #: Layout of the shared band table (VISDUP_INDEX_LAYOUT: "bands" or "pairs").
        self.index_layout = "bands"
        #: The schema version the database held when opened; None: it was empty.
        self.schema_found: int | None = None
        if writer:
            self.claim_writer()
        if not create:
            with self._reader.connect() as conn:
                try:
                    self.schema_found = schema.existing_version(conn, migrate=migrate)
                except StoreError as exc:
                    raise StoreError(f"{self.url}: {exc}") from None
        if create or migrate:
            self.migrate()
        with self._reader.connect() as conn:
            self._canonical_from = schema.canonical_from(conn)

    @classmethod
    def from_url(
        cls, url: str, *, writer: bool = False, create: bool = True, migrate: bool = True
    ) -> Store:
        """Open the store at ``url``; StoreError names what is wrong.

        By default an empty database becomes a store and an older one is upgraded: what a
        command that writes pages needs. ``create=False`` opens only a visdup store that is
        there already (a missing SQLite file, an empty database or another application's is
        refused, and nothing is written to it), and with ``migrate=False`` too only one at this
        visdup's schema version, left as it is: what a command that reads a store needs.

        ``writer=True`` (a crawl) also claims the SQLite file's one writer lock at once, so a
        second live crawl is refused before it fetches anything.
        """
        engine = make_engine(url, create=create)
        try:
            return cls(engine, url=url, writer=writer, create=create, migrate=migrate)
        except VisdupError:
            dispose(engine)
            raise
        except SQLAlchemyError as exc:
            dispose(engine)
            raise StoreError(
                f"cannot open the store {mask_password(url)!r}: {describe(exc, url)}"
            ) from None

    def claim_writer(self) -> None:
        """Become the one writing process of a SQLite store (a no-op on PostgreSQL)."""
        if self._writer is not None:
            self._writer.acquire()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.release()
        dispose(self.engine)

    def close_handing_over(self) -> Callable[[], None]:
        """Close, but keep SQLite's writer lock for the next store this process opens as the
        file's writer (:meth:`WriterLock.hand_over`); the callable given back releases it if
        no store took it. On PostgreSQL, a plain close."""
        writer = self._writer
        if writer is None or not writer.held:
            self.close()
            return _nothing
        database = writer.database
        writer.hand_over()
        self.close()
        return functools.partial(WriterLock.release_handed, database)

    # ------------------------------------------------------------------ schema
    def migrate(self) -> int:
        """Create the schema on first use, or upgrade it, under the schema lock."""
        with self._reader.connect() as conn:
            version = self.schema_found = schema.stored_version(conn)
        if version == schema.SCHEMA_VERSION:
            return version
        with self.engine.begin() as conn:
            return schema.migrate(conn)

    # ------------------------------------------------------------------ runs
    def begin_run(self, spider: str, crawl: str | None = None) -> int:
        """Start a run of ``crawl`` (:func:`visdup.storage.urls.crawl_key`) as the store's writer.

        A second live writer on the same SQLite file gets a StoreError that names PostgreSQL.
        """
        self.claim_writer()
        with self.engine.begin() as conn:
            result = conn.execute(insert(runs).values(spider=spider, crawl=crawl, started_at=now()))
            return new_id(result)

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
            page_id = conn.execute(_insert_new_page(), row).scalar()
            if page_id is None:
                return None  # another process stored this URL a moment ago
        else:  # SQLite writes in BEGIN IMMEDIATE: no one stored it between the look and here
            page_id = self._insert(conn, _INSERT_PAGE, row)
        self._add_links(conn, page_id, record, run_id, links_followed)
        if record.cluster_id is not None:
            self._run(conn, GROW_CLUSTER, {"cluster": record.cluster_id})
        return page_id

    def _add_links(
        self,
        conn: Connection,
        page_id: int,
        record: PageRecord,
        run_id: int | None,
        followed: bool,
    ) -> None:
        urls = _links.canonical(record.links)
        if urls:
            _links.add(self, conn, page_id, urls, (record.depth or 0) + 1, run_id, followed)

    def add_links(
        self, page_id: int, urls: Iterable[str], depth: int, run_id: int | None, followed: bool
    ) -> None:
        """Links of a stored page fetched again (a new snapshot): the new ones join the
        frontier, in a transaction of their own."""
        found = _links.canonical(urls)
        if found:
            with self.transaction() as conn:
                _links.add(self, conn, page_id, found, depth, run_id, followed)

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
                yield row[0], unsigned(row[1])

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
        alike: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for page_id, vals in values.items():  # one statement per set of columns, many rows
            alike.setdefault(tuple(vals), []).append({**vals, "b_page_id": page_id})
        if not alike:
            return
        with self.engine.begin() as conn:
            for rows in alike.values():
                conn.execute(update(pages).where(pages.c.id == bindparam("b_page_id")), rows)

    # ------------------------------------------------------------------ responses
    def responses_ready(self) -> bool:
        """Create the responses table where a store of schema version 3 predates it."""
        return _responses.ready(self)

    def has_responses(self) -> bool:
        """Whether the store has the responses table (stores made before it do not)."""
        return _responses.present(self)

    def put_responses(self, rows: Iterable[dict[str, Any]]) -> int:
        """URLs that gave no HTML page, one row each (:mod:`visdup.storage.responses`)."""
        return _responses.put(self, rows, self.is_postgres)

    def response_rows(self) -> list[Any]:
        """Every stored response, by URL (:func:`visdup.storage.responses.rows`)."""
        return _responses.rows(self)

    # ------------------------------------------------------------------ comparisons
    def comparisons_ready(self) -> bool:
        """Create the comparisons table where a store of schema version 3 predates it."""
        return comparisons.ready(self)

    def has_comparisons(self) -> bool:
        """Whether the store has the comparisons table (stores made before it do not)."""
        return comparisons.present(self)

    def add_comparisons(
        self, conn: Connection, page_id: int, rows: Iterable[tuple[int, str, float]]
    ) -> None:
        """A page's measured candidates, (other page, channel, similarity), in its transaction."""
        comparisons.add(self, conn, page_id, rows)

    def comparison_rows(self) -> list[Any]:
        """Every stored comparison (page_id, other_id, channel, similarity), by page."""
        return comparisons.rows(self)

    def pages_without_comparisons(self) -> int:
        """Pages whose closest match is stored but none of their comparisons are."""
        return comparisons.pages_without(self)

    # ------------------------------------------------------------------ clusters
    def save_clusters(
        self,
        items: list[dict[str, Any]],
        current_key: Callable[[list[str], list[int]], int] | None = None,
    ) -> None:
        """Replace the stored clusters (a batch re-clustering), and the pages' cluster ids.

        An item's ``layouts`` (its signatures, when given) are stored under its id and the
        signatures of another version go, so a later crawl starts from the clusters the batch
        made; signatures of pages the batch could not read again stay. ``current_key`` gives
        a signature's key as this version of visdup makes it (with ``layouts``: a stored
        signature whose key differs was made by another version, and goes).
        """
        if current_key is None:
            if any("layouts" in item for item in items):
                raise ValueError("clusters with their layouts need current_key")
            current_key = _no_key
        _clusters.replace_all(self, items, now, current_key)

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
        ids = {url: page_id for page_id, url in self.rows("id", "url")}
        self.save_clusters(
            _clusters.template_items(templates, records, clusters, representatives, ids)
        )

    def clusters_version(self, conn: Connection) -> int:
        return _clusters.version(conn)

    def clusters_version_now(self) -> int:
        """:meth:`clusters_version` as committed now, read outside any transaction."""
        row = self.read_first(_clusters.VERSION, {})
        return int(row[0]) if row is not None else 0

    def changed_clusters(self, conn: Connection, since: int) -> list[Any]:
        """Clusters written after version ``since`` (by this process or another one)."""
        return _clusters.changed(conn, since)

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
        _clusters.put(
            self,
            conn,
            cluster_id,
            version=version,
            clock=now,
            representative=representative,
            state=state,
            template=template,
        )

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
        return _clusters.put_layout(
            self, conn, key, cluster_id=cluster_id, labels=labels, sizes=sizes, version=version
        )

    def changed_layouts(
        self, conn: Connection, since: int
    ) -> list[tuple[int, list[str], list[int]]]:
        """Layout signatures written after version ``since``: (unsigned key, labels, sizes)."""
        return _clusters.changed_layouts(conn, since)

    def merge_clusters(self, conn: Connection, into: int, absorbed: Sequence[int]) -> None:
        """Clusters ``absorbed`` became part of ``into``: their pages and signatures follow,
        their rows go, and ``into`` counts its pages anew (in the caller's transaction)."""
        _clusters.merge(conn, into, absorbed, now)

    def move_page_cluster(self, page_id: int, old: int, live: Callable[[int], int]) -> int:
        """A page stored under template ``old`` as it merged into another: it follows to the
        id ``live(old)`` gives, which then counts it (the merge counted its pages without this
        one); the id it is stored under now.

        ``live`` is read inside the move's transaction, under the clusters' lock: a merge that
        took the lock first has renamed the template by then, and one that takes it later moves
        this page itself. An id read before the transaction could be dead by the time it
        was written (a blog crawl's page stored under a template merged a moment before).
        """
        return _clusters.move_page(self, page_id, old, live)

    def cluster_rows(self) -> list[Any]:
        return _clusters.rows(self)

    def cluster_pages(self, conn: Connection) -> Iterator[tuple[int, str]]:
        """(cluster id, URL) of every stored page placed in a template cluster."""
        return _clusters.member_pages(conn)

    def set_representatives(self, conn: Connection, representatives: Mapping[int, str]) -> None:
        """Name the page that stands for each of these clusters (rows that name another)."""
        _clusters.set_representatives(conn, representatives, now)

    def error_rows(self) -> list[Any]:
        with self._reader.connect() as conn:
            return list(conn.execute(select(errors).order_by(errors.c.id)))

    def run_rows(self) -> list[Any]:
        with self._reader.connect() as conn:
            return list(conn.execute(select(runs).order_by(runs.c.id)))


def _no_key(_labels: list[str], _sizes: list[int]) -> int:
    """No signature to key: clusters saved without their layouts touch no stored signature."""
    return 0
