"""The one place SQL lives: schema, migrations and the queries the rest of visdup needs.

SQLite by default (WAL, busy timeout: a killed crawl keeps every committed page) and
PostgreSQL for several processes. Each page's row, its fingerprints and the links found on it
are written in one transaction, so a crash never leaves a label without its page or a page
whose links are lost.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError

from visdup.errors import VisdupError

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1

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
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("reason", String(200)),
    Column("stats", Text),
)

pages = Table(
    "visdup_pages",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("url", Text, nullable=False, unique=True),
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
    Column("url", Text, primary_key=True),
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
    Column("size", Integer, nullable=False, default=0),
    Column("state", Text),
    Column("template", Text),
    Column("version", Integer, nullable=False, default=0, index=True),
    Column("updated_at", DateTime(timezone=True)),
)

Index("visdup_pages_run", pages.c.run_id)

#: Migrations from version N to N+1: lists of SQL statements (portable ALTERs) or callables.
MIGRATIONS: dict[int, list[Any]] = {}


def now() -> datetime:
    return datetime.now(UTC)


def pack_body(body: bytes | None) -> bytes | None:
    return None if body is None else zlib.compress(body, 1)  # crawl time matters more than bytes


def unpack_body(blob: bytes | None) -> bytes | None:
    return None if blob is None else zlib.decompress(blob)


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
        for key in ("simhash", "content_simhash"):
            if values[key] is not None:
                values[key] = to_signed(values[key])
        return values


def to_signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def to_unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, pool_pre_ping=False
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)


class Store:
    """Schema owner and query surface; thread-safe (one connection per call from the pool)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.migrate()

    @classmethod
    def from_url(cls, url: str) -> Store:
        try:
            return cls(make_engine(url))
        except VisdupError:
            raise
        except Exception as exc:
            raise VisdupError(f"cannot open database {url!r}: {exc}") from exc

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ schema
    def migrate(self) -> int:
        """Create the schema on first use, then walk MIGRATIONS up to SCHEMA_VERSION."""
        with self.engine.begin() as conn:
            if self.is_postgres:
                conn.execute(text("SELECT pg_advisory_xact_lock(715517)"))
            existing = set(inspect(conn).get_table_names())
            if meta_table.name not in existing:
                metadata.create_all(conn)
                conn.execute(
                    insert(meta_table).values(key="schema_version", value=str(SCHEMA_VERSION))
                )
                return SCHEMA_VERSION
            metadata.create_all(conn, checkfirst=True)
            version = int(
                conn.execute(
                    select(meta_table.c.value).where(meta_table.c.key == "schema_version")
                ).scalar_one()
            )
            if version > SCHEMA_VERSION:
                raise VisdupError(
                    f"database schema version {version} is newer than this visdup "
                    f"({SCHEMA_VERSION})"
                )
            while version < SCHEMA_VERSION:
                for step in MIGRATIONS.get(version, []):
                    conn.execute(text(step)) if isinstance(step, str) else step(conn)
                version += 1
                logger.info("Migrated the visdup schema to version %d", version)
            conn.execute(
                update(meta_table)
                .where(meta_table.c.key == "schema_version")
                .values(value=str(version))
            )
            return version

    def schema_version(self) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    select(meta_table.c.value).where(meta_table.c.key == "schema_version")
                ).scalar_one()
            )

    # ------------------------------------------------------------------ runs
    def begin_run(self, spider: str) -> int:
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    insert(runs).values(spider=spider, started_at=now())
                ).inserted_primary_key[0]
            )

    def finish_run(self, run_id: int, reason: str, stats: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(runs)
                .where(runs.c.id == run_id)
                .values(finished_at=now(), reason=reason, stats=json.dumps(stats, default=str))
            )

    # ------------------------------------------------------------------ pages
    def insert_page(
        self,
        conn: Connection,
        record: PageRecord,
        run_id: int | None,
        *,
        links_followed: bool = True,
    ) -> int | None:
        """Insert one page and its links inside the caller's transaction; None if the URL exists."""
        row = record.row()
        row["run_id"] = run_id
        row["fetched_at"] = now()
        existing = conn.execute(select(pages.c.id).where(pages.c.url == record.url)).scalar()
        if existing is not None:
            return None
        try:
            with conn.begin_nested():
                page_id = int(conn.execute(insert(pages).values(**row)).inserted_primary_key[0])
        except IntegrityError:
            return None  # another process stored this URL a moment ago
        self._add_links(conn, page_id, record, run_id, links_followed)
        return page_id

    def _add_links(
        self,
        conn: Connection,
        page_id: int,
        record: PageRecord,
        run_id: int | None,
        followed: bool,
    ) -> None:
        urls = sorted(set(record.links))
        if not urls:
            return
        depth = (record.depth or 0) + 1
        rows = [
            {"url": u, "found_on": page_id, "depth": depth, "run_id": run_id, "followed": followed}
            for u in urls
        ]
        if self.is_postgres:
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            conn.execute(pg_insert(links).on_conflict_do_nothing(), rows)
        else:
            from sqlalchemy.dialects.sqlite import insert as sqlite_insert

            conn.execute(sqlite_insert(links).on_conflict_do_nothing(), rows)

    def add_error(self, run_id: int | None, url: str | None, stage: str, message: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                insert(errors).values(
                    run_id=run_id, url=url, stage=stage, message=message[:2000], at=now()
                )
            )

    def has_url(self, url: str) -> bool:
        with self.engine.connect() as conn:
            return conn.execute(select(pages.c.id).where(pages.c.url == url)).first() is not None

    def page_count(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(pages)).scalar_one())

    def page_by_body_hash(self, conn: Connection, body_hash: str) -> int | None:
        return conn.execute(
            select(pages.c.id)
            .where(pages.c.body_hash == body_hash, pages.c.problem.is_(None))
            .order_by(pages.c.id)
            .limit(1)
        ).scalar()

    def values(self, column: str, ids: Iterable[int]) -> dict[int, Any]:
        """One column of the given pages (terms, content prints), keyed by page id."""
        ids = list(ids)
        if not ids:
            return {}
        col = pages.c[column]
        with self.engine.connect() as conn:
            return dict(conn.execute(select(pages.c.id, col).where(pages.c.id.in_(ids))).all())

    def fingerprints(self, column: str = "simhash") -> Iterator[tuple[int, int]]:
        """(page id, unsigned fingerprint) of every stored page, to warm an in-memory index."""
        col = pages.c[column]
        with self.engine.connect() as conn:
            for row in conn.execute(
                select(pages.c.id, col).where(col.is_not(None)).order_by(pages.c.id)
            ):
                yield row[0], to_unsigned(row[1])

    def stored_urls(self) -> set[str]:
        with self.engine.connect() as conn:
            return set(conn.execute(select(pages.c.url)).scalars())

    def unfetched_links(self, limit: int = 100_000) -> list[tuple[str, int]]:
        """Links found by earlier runs that no run stored yet: the frontier a crash left behind."""
        with self.engine.connect() as conn:
            query = (
                select(links.c.url, links.c.depth)
                .outerjoin(pages, pages.c.url == links.c.url)
                .where(pages.c.id.is_(None), links.c.followed.is_(True))
                .order_by(links.c.depth, links.c.url)
                .limit(limit)
            )
            return [(r.url, r.depth or 0) for r in conn.execute(query)]

    def rows(self, *columns: str) -> list[Any]:
        cols = [pages.c[c] for c in columns] if columns else [pages]
        with self.engine.connect() as conn:
            return list(conn.execute(select(*cols).order_by(pages.c.id)))

    def page_bodies(self) -> Iterator[tuple[int, str, bytes]]:
        """(id, url, body) of every stored page with a usable body, for offline re-processing."""
        with self.engine.connect() as conn:
            query = (
                select(pages.c.id, pages.c.url, pages.c.body)
                .where(pages.c.body.is_not(None), pages.c.problem.is_(None))
                .order_by(pages.c.id)
            )
            for row in conn.execute(query):
                yield row.id, row.url, unpack_body(row.body) or b""

    def update_pages(self, values: dict[int, dict[str, Any]]) -> None:
        with self.engine.begin() as conn:
            for page_id, vals in values.items():
                conn.execute(update(pages).where(pages.c.id == page_id).values(**vals))

    def save_clusters(self, items: list[dict[str, Any]]) -> None:
        """Replace the stored clusters (a batch re-clustering), and the pages' cluster ids."""
        with self.engine.begin() as conn:
            conn.execute(clusters.delete())
            conn.execute(update(pages).values(cluster_id=None))
            for item in items:
                conn.execute(
                    insert(clusters).values(
                        id=item["id"],
                        representative=item.get("representative"),
                        size=item["size"],
                        state=json.dumps(item.get("state")) if item.get("state") else None,
                        template=json.dumps(item.get("template")) if item.get("template") else None,
                        version=0,
                        updated_at=now(),
                    )
                )
                members = item.get("members", [])
                for start in range(0, len(members), 500):
                    conn.execute(
                        update(pages)
                        .where(pages.c.id.in_(members[start : start + 500]))
                        .values(cluster_id=item["id"])
                    )

    def save_templates(
        self, templates: list[dict[str, Any]], records: list[dict[str, Any]]
    ) -> None:
        """Store an extraction's clusters: their templates, sizes and the pages' cluster ids."""
        members: dict[Any, list[str]] = {}
        for record in records:
            if record.get("cluster") is not None:
                members.setdefault(record["cluster"], []).append(record["url"])
        ids = {url: page_id for page_id, url in self.rows("id", "url")}
        self.save_clusters(
            [
                {
                    "id": t["cluster"],
                    "size": len(members.get(t["cluster"], [])),
                    "representative": t.get("representative"),
                    "template": t,
                    "members": [ids[u] for u in members.get(t["cluster"], []) if u in ids],
                }
                for t in templates
                if t.get("cluster") is not None
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
        size: int | None = None,
        state: Any = None,
        template: Any = None,
    ) -> None:
        """Insert or update one cluster row; only the given values change."""
        values: dict[str, Any] = {"version": version, "updated_at": now()}
        if representative is not None:
            values["representative"] = representative
        if size is not None:
            values["size"] = size
        if state is not None:
            values["state"] = json.dumps(state)
        if template is not None:
            values["template"] = json.dumps(template)
        done = conn.execute(update(clusters).where(clusters.c.id == cluster_id).values(**values))
        if done.rowcount == 0:
            values.setdefault("size", 0)
            conn.execute(insert(clusters).values(id=cluster_id, **values))

    def cluster_rows(self) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(select(clusters).order_by(clusters.c.id)))

    def error_rows(self) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(select(errors).order_by(errors.c.id)))

    def run_rows(self) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(select(runs).order_by(runs.c.id)))
