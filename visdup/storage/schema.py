"""Every table visdup writes, the schema version and the migrations between versions.

Creation and migration run in one transaction; on PostgreSQL under the advisory lock
:data:`~visdup.storage.locks.SCHEMA_LOCK`, so processes that start together on an empty
database wait for each other instead of racing on ``CREATE TABLE``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    insert,
    inspect,
    select,
    text,
    update,
)

from visdup.errors import StoreError
from visdup.storage.locks import SCHEMA_LOCK

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from visdup.storage.fastpath import StatementRunner

logger = logging.getLogger(__name__)


def signed(key: int) -> int:
    """An unsigned 64-bit key (a fingerprint, a layout signature) as the signed integer a
    BIGINT column holds."""
    return key - (1 << 64) if key >= 1 << 63 else key


def unsigned(value: int) -> int:
    """A BIGINT column's signed value as the unsigned 64-bit key it holds."""
    return value & 0xFFFFFFFFFFFFFFFF


#: Version 2: runs name their crawl (resume is per crawl), cluster sizes count stored pages,
#: SQLite keeps no band table (its in-memory index reads the pages' fingerprints).
#: Version 3: new tables only (each documented where it is declared).
#: Version 4: a page's body may be a Zstandard frame (:mod:`visdup.storage.compressed`), which
#: a visdup of version 3 cannot read: it refuses the store instead of failing on its bodies.
SCHEMA_VERSION = 4
#: Older versions this visdup reads as they are, without ``visdup migrate``: what the versions
#: since changed holds nothing a reader of theirs misses (version 4 only adds a body format;
#: zlib bodies are read as before).
READ_AS_IS = frozenset({3})

metadata = MetaData()

meta_table = Table(
    "visdup_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "visdup_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("spider", String(200), nullable=False),
    # the crawl a run belongs to (its start URLs' origins): resume continues the same crawl
    Column("crawl", String(500), index=True),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("reason", String(200)),
    Column("stats", Text),
)

pages = Table(
    "visdup_pages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, unique=True),  # canonical form (storage.urls)
    Column("final_url", Text),
    Column("status", Integer),
    Column("depth", Integer),
    Column("referer", Text),
    Column("run_id", Integer, ForeignKey("visdup_runs.id")),
    Column("fetched_at", DateTime(timezone=True), nullable=False),
    Column("content_type", String(200)),
    Column("encoding", String(64)),
    Column("body_hash", String(40), index=True),
    Column("body", LargeBinary),
    Column("problem", Text),
    Column("truncated", Boolean, nullable=False, default=False),
    Column("replacement_ratio", Float),
    # structural channel (seed 000)
    Column("term", Text),
    Column("term_size", Integer),
    Column("term_nodes", Integer),
    Column("simhash", BigInteger),
    Column("duplicate_of", Integer, ForeignKey("visdup_pages.id"), index=True),
    Column("similarity", Float),
    Column("kind", String(20)),
    # content channel (seeds 001, 002)
    Column("title", Text),
    Column("canonical", Text),
    Column("content_print", Text),
    Column("content_simhash", BigInteger),
    Column("content_duplicate_of", Integer, ForeignKey("visdup_pages.id"), index=True),
    Column("content_similarity", Float),
    Column("content_kind", String(20)),
    Column("verdict", String(20), index=True),
    # template clusters (seed 003)
    Column("cluster_id", Integer, index=True),
)

errors = Table(
    "visdup_errors",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("visdup_runs.id")),
    Column("url", Text),
    Column("stage", String(40), nullable=False),
    Column("message", Text, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
)

links = Table(
    "visdup_links",
    metadata,
    Column("url", Text, primary_key=True),  # canonical form: looked up against pages.url
    Column("found_on", Integer, ForeignKey("visdup_pages.id")),
    Column("depth", Integer),
    Column("run_id", Integer, ForeignKey("visdup_runs.id")),
    Column("followed", Boolean, nullable=False, default=True),
)

clusters = Table(
    "visdup_clusters",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("representative", Text),
    # pages that carry this cluster: counted when each page is stored
    Column("size", Integer, nullable=False, default=0),
    Column("state", Text),
    Column("template", Text),
    Column("version", Integer, nullable=False, default=0, index=True),
    Column("updated_at", DateTime(timezone=True)),
)

#: Every stored candidate a page was measured against with its channel's exact measure (tree
#: edit distance, layered text prints), confirmed or rejected, written with the page's row:
#: the report's similarity histogram and its threshold replay read them. The best
#: VISDUP_COMPARISONS_MAX per page and channel are kept (``other_id`` was stored before
#: ``page_id``); no primary key, so a row is its few numbers and the page index.
comparisons = Table(
    "visdup_comparisons",
    metadata,
    Column("page_id", Integer, ForeignKey("visdup_pages.id"), nullable=False),
    Column("other_id", Integer, nullable=False),
    Column("channel", String(16), nullable=False),  # "structure" or "content"
    Column("similarity", Float, nullable=False),
)

Index("visdup_comparisons_page", comparisons.c.page_id)

#: A crawl (or a ``visdup dups --crawl-id`` run) as a snapshot: drift alarms compare two of them
#: (visdup.drift). ``crawl`` is the sites' key (:func:`visdup.storage.urls.crawl_key`).
snapshots = Table(
    "visdup_snapshots",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("crawl", String(500), index=True),
    Column("source", String(20), nullable=False),  # "crawl" or "files"
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("reason", String(200)),
)

#: The snapshot each run added to (a resumed snapshot has several runs).
snapshot_runs = Table(
    "visdup_snapshot_runs",
    metadata,
    Column("run_id", Integer, ForeignKey("visdup_runs.id"), primary_key=True),
    Column("snapshot_id", Integer, ForeignKey("visdup_snapshots.id"), nullable=False, index=True),
)

#: One row per page per snapshot: its template, its fit to it and its body hash (tens of bytes).
snapshot_pages = Table(
    "visdup_snapshot_pages",
    metadata,
    Column("snapshot_id", Integer, ForeignKey("visdup_snapshots.id"), primary_key=True),
    Column("page_id", Integer, ForeignKey("visdup_pages.id"), primary_key=True),
    Column("cluster_id", Integer),
    Column("fit", Float),
    Column("body_hash", String(40)),
)

#: Per snapshot and template the aggregates a comparison needs (JSON, at most 10 KB).
snapshot_templates = Table(
    "visdup_snapshot_templates",
    metadata,
    Column("snapshot_id", Integer, ForeignKey("visdup_snapshots.id"), primary_key=True),
    Column("cluster_id", Integer, primary_key=True, autoincrement=False),
    Column("stats", Text, nullable=False),
)

SNAPSHOT_TABLES = (snapshots, snapshot_runs, snapshot_pages, snapshot_templates)

#: URLs the crawl met that gave no HTML page: redirects, 4xx and 5xx answers, other content,
#: requests robots.txt forbade or that failed. One small row per URL (the latest answer), with
#: the page whose link led there. Added after schema version 3 without a new version: a store
#: made before it gets the table on first use, and readers say the store has none.
responses = Table(
    "visdup_responses",
    metadata,
    Column("url", Text, primary_key=True),  # canonical form, as pages.url
    Column("kind", String(20), nullable=False),  # visdup.storage.responses.KINDS
    Column("status", Integer),  # None where no answer came (robots, network)
    Column("target", Text),  # a redirect's Location, resolved
    Column("content_type", String(200)),
    Column("referer", Text),  # the page that linked to it, as fetched
    Column("reason", Text),
    Column("run_id", Integer, ForeignKey("visdup_runs.id")),
    Column("at", DateTime(timezone=True), nullable=False),
)

Index("visdup_pages_run", pages.c.run_id)
Index("visdup_pages_cluster", pages.c.cluster_id)

#: The distinct layout signatures of the template clusters (visdup.templates.layouts): one row
#: per signature, written once by the process that met it first. Every process rebuilds the
#: clusters from these rows (signatures are linked by similarity, whoever reads them), so
#: template clusters stay single across processes and ids do not depend on arrival order.
layouts = Table(
    "visdup_layouts",
    metadata,
    Column("key", BigInteger, primary_key=True, autoincrement=False),  # signed 64-bit
    Column("cluster_id", Integer, index=True),  # as it was when last written
    Column("labels", Text, nullable=False),  # JSON list
    Column("sizes", Text, nullable=False),  # JSON list
    Column("version", Integer, nullable=False, index=True),
)

#: visdup_meta key: the first page id whose URL was stored in canonical form (absent: all).
CANONICAL_FROM = "canonical_urls_from"

#: The shared SimHash band table of :class:`visdup.index.sql.SqlIndex` (PostgreSQL crawls and
#: direct users of the SQL index); its band columns depend on k, so it is built on demand.
FINGERPRINTS = "visdup_fingerprints"


def _recount_clusters(conn: Connection) -> None:
    """Cluster sizes drifted (the state JSON was written only when representatives moved)."""
    conn.execute(
        text(
            "UPDATE visdup_clusters SET size = (SELECT count(*) FROM visdup_pages "
            "WHERE visdup_pages.cluster_id = visdup_clusters.id)"
        )
    )


def _drop_sqlite_bands(conn: Connection) -> None:
    """SQLite crawls wrote band rows and indexes that nothing read: reclaim them."""
    if conn.dialect.name == "sqlite":
        conn.execute(text(f"DROP TABLE IF EXISTS {FINGERPRINTS}"))


def _mark_canonical_urls(conn: Connection) -> None:
    """Pages stored from now on have canonical URLs; older ones are canonicalised when read."""
    first = conn.execute(text("SELECT coalesce(max(id), 0) + 1 FROM visdup_pages")).scalar_one()
    conn.execute(insert(meta_table).values(key=CANONICAL_FROM, value=str(first)))


def _create_new_tables(conn: Connection) -> None:
    """Tables added since the store was made: created empty, existing ones untouched."""
    metadata.create_all(conn, checkfirst=True)


Step = str | Callable[["Connection"], None]

#: Migrations from version N to N+1: portable SQL statements or callables.
MIGRATIONS: dict[int, list[Step]] = {
    1: [
        "ALTER TABLE visdup_runs ADD COLUMN crawl VARCHAR(500)",
        "CREATE INDEX ix_visdup_runs_crawl ON visdup_runs (crawl)",
        _recount_clusters,
        _drop_sqlite_bands,
        _mark_canonical_urls,
    ],
    2: [
        _create_new_tables,
        "CREATE INDEX IF NOT EXISTS visdup_pages_cluster ON visdup_pages (cluster_id)",
    ],
    3: [],  # the bodies stored from now on may be Zstandard frames; nothing to rewrite
}


def table_ready(store: StatementRunner, table: Table) -> bool:
    """Create ``table`` (with its indexes) where a store made before it lacks it."""
    with store.reading() as conn:
        if inspect(conn).has_table(table.name):
            return True
    with store.transaction() as conn:
        lock_schema(conn)
        table.create(conn, checkfirst=True)
    return True


def table_present(store: StatementRunner, table: Table) -> bool:
    """Whether the store has ``table`` (stores made before it do not)."""
    with store.reading() as conn:
        return bool(inspect(conn).has_table(table.name))


def lock_schema(conn: Connection) -> None:
    """Serialise schema work across PostgreSQL processes until ``conn`` commits."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})


def stored_version(conn: Connection) -> int | None:
    """The store's schema version; None for an empty database; StoreError when unreadable."""
    names = set(inspect(conn).get_table_names())
    if meta_table.name not in names:
        if names & {t.name for t in metadata.sorted_tables}:
            raise StoreError(
                "the database holds visdup tables but no schema version (visdup_meta): "
                "an unknown or damaged store; crawl into a new database"
            )
        return None
    value = conn.execute(
        select(meta_table.c.value).where(meta_table.c.key == "schema_version")
    ).scalar()
    if value is None or not str(value).isdigit():
        raise StoreError(f"unknown visdup schema version {value!r} in visdup_meta")
    return int(value)


def existing_version(conn: Connection, *, migrate: bool) -> int:
    """The schema version of the visdup store already in this database, which is not changed.

    StoreError when there is none (an empty database, or another application's), when it is
    newer than this visdup, or, unless ``migrate``, older than it reads as is
    (:data:`READ_AS_IS`): a command that reads a store must not create one where a URL was
    mistyped nor upgrade it behind its user's back (an older visdup could no longer read it).
    """
    version = stored_version(conn)
    if version is None:
        raise StoreError(
            "the database holds no visdup store (no visdup tables): give --db the URL a crawl "
            "wrote to"
        )
    _check_not_newer(version)
    if version < SCHEMA_VERSION and not migrate and version not in READ_AS_IS:
        raise StoreError(
            f"the store has schema version {version}, older than this visdup's "
            f"({SCHEMA_VERSION}): upgrade it with `visdup migrate --db URL` (a crawl into it "
            "upgrades it too)"
        )
    return version


def _check_not_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the store has schema version {version}, newer than this visdup reads "
            f"({SCHEMA_VERSION}): upgrade visdup"
        )


def canonical_from(conn: Connection) -> int:
    """The first page id stored with a canonical URL (0 for stores created canonical)."""
    value = conn.execute(
        select(meta_table.c.value).where(meta_table.c.key == CANONICAL_FROM)
    ).scalar()
    return int(value) if value is not None and str(value).isdigit() else 0


def migrate(conn: Connection) -> int:
    """Create the schema on an empty database, or walk MIGRATIONS up to SCHEMA_VERSION."""
    lock_schema(conn)
    version = stored_version(conn)
    if version is None:
        metadata.create_all(conn)
        conn.execute(insert(meta_table).values(key="schema_version", value=str(SCHEMA_VERSION)))
        return SCHEMA_VERSION
    _check_not_newer(version)
    if version < 1:
        raise StoreError(f"unknown visdup schema version {version} in visdup_meta")
    start = version
    while version < SCHEMA_VERSION:
        for step in MIGRATIONS.get(version, []):
            if isinstance(step, str):
                conn.execute(text(step))
            else:
                step(conn)
        version += 1
    if version != start:
        conn.execute(
            update(meta_table)
            .where(meta_table.c.key == "schema_version")
            .values(value=str(version))
        )
        logger.info("Migrated the visdup schema from version %d to %d", start, version)
    return version


def fingerprint_table(
    engine: Engine, bands: int, schema: str | None = None, *, create: int | None = None
) -> Table:
    """The band table with at least ``bands`` band columns, created (under the schema lock) with
    ``create`` columns (default ``bands``) if absent.

    An existing table keeps its column count; one with fewer than ``bands`` is refused, since a
    channel's buckets would silently miss.
    """
    with engine.begin() as conn:
        lock_schema(conn)
        insp = inspect(conn)
        count = max(bands, create or 0)
        exists = insp.has_table(FINGERPRINTS, schema=schema)
        if exists:
            names = {c["name"] for c in insp.get_columns(FINGERPRINTS, schema=schema)}
            count = sum(1 for i in range(len(names)) if f"b{i}" in names)
            if count < bands:
                raise ValueError(
                    f"{FINGERPRINTS} has {count} band columns, {bands} are needed: use a new "
                    "table or database, or a smaller k"
                )
        table = _fingerprint_table(count, schema)
        if not exists:
            table.metadata.create_all(conn)
    return table


def _fingerprint_table(count: int, schema: str | None) -> Table:
    own = MetaData(schema=schema)
    columns: list[Column[Any]] = [
        Column("channel", String(32), primary_key=True),
        Column("key", BigInteger, primary_key=True, autoincrement=False),
        Column("fp", BigInteger, nullable=False),
    ]
    columns += [Column(f"b{i}", BigInteger) for i in range(count)]
    table = Table(FINGERPRINTS, own, *columns)
    # (channel, fp, key): the exact lookup reads its keys in order straight from the index.
    Index(f"ix_{FINGERPRINTS}_fp", table.c.channel, table.c.fp, table.c.key)
    for i in range(count):
        # Partial: a layout with fewer tables leaves columns NULL, and those rows cost nothing.
        # fp included: the band probe reads only the index.
        Index(
            f"ix_{FINGERPRINTS}_b{i}",
            table.c.channel,
            table.c[f"b{i}"],
            table.c.fp,
            postgresql_where=table.c[f"b{i}"].isnot(None),
            sqlite_where=table.c[f"b{i}"].isnot(None),
        )
    return table
