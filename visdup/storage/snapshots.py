"""Drift snapshots: every statement on ``visdup_snapshots`` and the tables beside it.

:mod:`visdup.drift.snapshot` decides what a snapshot holds; these functions read and write it,
each in a transaction of its own (reads in the store's deferred one, which never waits for
the crawl's writer on SQLite: :mod:`visdup.storage.engine`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    bindparam,
    delete,
    exists,
    func,
    insert,
    inspect,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from visdup.storage import clusters, schema
from visdup.storage.fastpath import runs_on_driver
from visdup.storage.schema import (
    SNAPSHOT_TABLES,
    pages,
    runs,
    snapshot_pages,
    snapshot_runs,
    snapshot_templates,
    snapshots,
)
from visdup.storage.urls import canonical_url

if TYPE_CHECKING:
    from sqlalchemy.sql.dml import Insert

    from visdup.storage.fastpath import StatementRunner

logger = logging.getLogger(__name__)

#: Asked for every page a snapshot records (built once: building costs more than running).
STORED_LABELS = runs_on_driver(
    select(
        pages.c.id, pages.c.verdict, pages.c.kind, pages.c.duplicate_of, pages.c.similarity
    ).where(pages.c.url == bindparam("page_url"))
)

#: The columns of a snapshot's page rows, in the order a recovery selects them.
_PAGE_ROW = ["snapshot_id", "page_id", "cluster_id", "fit", "body_hash"]


@functools.cache
def _insert_ignore(postgres: bool) -> Insert:
    """A snapshot's page rows' INSERT that skips rows whose key exists (a page recorded twice
    keeps its first row)."""
    if postgres:
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(snapshot_pages).on_conflict_do_nothing()
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(snapshot_pages).on_conflict_do_nothing()


def ensure_tables(store: StatementRunner) -> None:
    """Create the snapshot tables in a store made before them (schema version 3 already)."""
    with store.reading() as conn:
        names = set(inspect(conn).get_table_names())
    if all(t.name in names for t in SNAPSHOT_TABLES):
        return
    with store.transaction() as conn:
        schema.lock_schema(conn)
        for table in SNAPSHOT_TABLES:
            table.create(conn, checkfirst=True)


def has_tables(store: StatementRunner) -> bool:
    with store.reading() as conn:
        return bool(inspect(conn).has_table(snapshots.name))


def listed(store: StatementRunner, crawl: str | None = None) -> list[Any]:
    """Snapshot rows in the order they began (of one crawl when ``crawl`` is given)."""
    query = select(snapshots).order_by(snapshots.c.id)
    if crawl is not None:
        query = query.where(snapshots.c.crawl == crawl)
    with store.reading() as conn:
        return list(conn.execute(query))


def named(store: StatementRunner, name: str) -> Any:
    """The snapshot row of this name, or None."""
    with store.reading() as conn:
        return conn.execute(select(snapshots).where(snapshots.c.name == name)).first()


def create(store: StatementRunner, name: str, crawl: str, source: str) -> bool:
    """A new snapshot row; False when another process made it a moment ago."""
    try:
        with store.transaction() as conn:
            conn.execute(
                insert(snapshots).values(
                    name=name, crawl=crawl, source=source, started_at=datetime.now(UTC)
                )
            )
    except IntegrityError:
        return False
    return True


def add_run(store: StatementRunner, snapshot_id: int, run_id: int) -> None:
    """Run ``run_id`` adds to snapshot ``snapshot_id``."""
    with store.transaction() as conn:
        conn.execute(insert(snapshot_runs).values(run_id=run_id, snapshot_id=snapshot_id))


def template_stats(store: StatementRunner, snapshot_id: int) -> dict[int, str]:
    """The snapshot's aggregates (as stored: JSON) per template."""
    query = select(snapshot_templates.c.cluster_id, snapshot_templates.c.stats).where(
        snapshot_templates.c.snapshot_id == snapshot_id
    )
    with store.reading() as conn:
        return {int(r.cluster_id): r.stats for r in conn.execute(query)}


def page_pairs(
    store: StatementRunner, baseline: int, current: int
) -> list[tuple[Any, Any, bool, int]]:
    """(baseline template, current template, same bytes, pages) over the pages of both."""
    a = snapshot_pages.alias("a")
    b = snapshot_pages.alias("b")
    equal = a.c.body_hash == b.c.body_hash
    query = (
        select(a.c.cluster_id, b.c.cluster_id, equal, func.count())
        .join(b, b.c.page_id == a.c.page_id)
        .where(a.c.snapshot_id == baseline, b.c.snapshot_id == current)
        .group_by(a.c.cluster_id, b.c.cluster_id, equal)
    )
    with store.reading() as conn:
        return [(r[0], r[1], bool(r[2]), int(r[3])) for r in conn.execute(query)]


def templates(store: StatementRunner) -> dict[int, str]:
    """The store's templates now (cluster id → JSON)."""
    with store.reading() as conn:
        return clusters.templates(conn)


def held(store: StatementRunner, snapshot_id: int) -> int:
    """Pages the snapshot holds."""
    query = (
        select(func.count())
        .select_from(snapshot_pages)
        .where(snapshot_pages.c.snapshot_id == snapshot_id)
    )
    with store.reading() as conn:
        return int(conn.execute(query).scalar() or 0)


def add_missing(store: StatementRunner, snapshot_id: int, run_id: int) -> None:
    """Pages run ``run_id`` stored that the snapshot misses join it, their fit unknown."""
    present = exists().where(
        snapshot_pages.c.snapshot_id == snapshot_id, snapshot_pages.c.page_id == pages.c.id
    )  # NOT EXISTS: PostgreSQL plans NOT IN over a large subquery row by row
    missing = select(
        literal(snapshot_id), pages.c.id, pages.c.cluster_id, literal(None), pages.c.body_hash
    ).where(pages.c.run_id == run_id, ~present)
    with store.transaction() as conn:
        conn.execute(_insert_ignore(store.is_postgres).from_select(_PAGE_ROW, missing))


def urls(store: StatementRunner, snapshot_id: int) -> set[str]:
    """Canonical URLs of the pages the snapshot holds."""
    query = (
        select(pages.c.id, pages.c.url)
        .join(snapshot_pages, snapshot_pages.c.page_id == pages.c.id)
        .where(snapshot_pages.c.snapshot_id == snapshot_id)
    )
    first = _canonical_from(store)
    with store.reading() as conn:
        return {u if i >= first else canonical_url(u) for i, u in conn.execute(query)}


def not_fetched(
    store: StatementRunner, snapshot_id: int, crawl: str | None
) -> list[tuple[str, int]]:
    """(canonical URL, depth) of the stored pages of ``crawl``'s runs the snapshot does not
    hold, shallowest first."""
    present = select(snapshot_pages.c.page_id).where(snapshot_pages.c.snapshot_id == snapshot_id)
    # pages first stored by runs of the same sites (runs of schema version 1 name none)
    query = (
        select(pages.c.id, pages.c.url, pages.c.depth)
        .join(runs, runs.c.id == pages.c.run_id)
        .where(pages.c.id.not_in(present), or_(runs.c.crawl == crawl, runs.c.crawl.is_(None)))
        .order_by(pages.c.depth, pages.c.id)
    )
    first = _canonical_from(store)
    with store.reading() as conn:
        return [(u if i >= first else canonical_url(u), d or 0) for i, u, d in conn.execute(query)]


def stored_labels(store: StatementRunner, url: str) -> Any:
    """The stored page of this URL (``id``, ``verdict``, ``kind``, ``duplicate_of``,
    ``similarity``), or None."""
    return store.read_first(STORED_LABELS, {"page_url": canonical_url(url)})


def page_id(store: StatementRunner, url: str) -> int | None:
    """The stored page of this URL, or None."""
    with store.reading() as conn:
        found: int | None = conn.execute(
            select(pages.c.id).where(pages.c.url == canonical_url(url))
        ).scalar()
        return found


def refit(
    store: StatementRunner, snapshot_id: int, page_id: int, cluster: int | None, fit: float | None
) -> None:
    """A page row's template and fit."""
    with store.transaction() as conn:
        conn.execute(
            update(snapshot_pages)
            .where(snapshot_pages.c.snapshot_id == snapshot_id, snapshot_pages.c.page_id == page_id)
            .values(cluster_id=cluster, fit=fit)
        )


def set_fits(
    store: StatementRunner, snapshot_id: int, fits: Iterable[tuple[int, float | None]]
) -> None:
    """Page rows' fits (page id, fit), in one transaction."""
    rows = [{"page": page_id, "new_fit": fit} for page_id, fit in fits]
    if not rows:
        return
    statement = (
        update(snapshot_pages)
        .where(
            snapshot_pages.c.snapshot_id == snapshot_id,
            snapshot_pages.c.page_id == bindparam("page"),
        )
        .values(fit=bindparam("new_fit"))
    )
    with store.transaction() as conn:
        conn.execute(statement, rows)


def add_pages(store: StatementRunner, rows: list[dict[str, Any]]) -> None:
    """Page rows (:data:`_PAGE_ROW`), one per page (the first kept); a row naming no stored
    page is refused, logged, and the others are written."""
    statement = _insert_ignore(store.is_postgres)
    try:
        with store.transaction() as conn:
            conn.execute(statement, rows)
    except IntegrityError:
        with store.transaction() as conn:
            for row in rows:
                try:
                    with conn.begin_nested():
                        conn.execute(statement, [row])
                except IntegrityError:
                    logger.warning("visdup: snapshot row of page %s refused", row["page_id"])


def page_templates(store: StatementRunner, snapshot_id: int) -> list[int]:
    """The templates the snapshot's page rows name."""
    query = (
        select(snapshot_pages.c.cluster_id)
        .where(
            snapshot_pages.c.snapshot_id == snapshot_id, snapshot_pages.c.cluster_id.is_not(None)
        )
        .distinct()
    )
    with store.reading() as conn:
        return [int(cid) for cid in conn.execute(query).scalars()]


def rename_templates(store: StatementRunner, snapshot_id: int, renamed: dict[int, int]) -> None:
    """The snapshot's page rows of template ``old`` name ``renamed[old]``."""
    with store.transaction() as conn:
        for old_id, new_id in sorted(renamed.items()):
            conn.execute(
                update(snapshot_pages)
                .where(
                    snapshot_pages.c.snapshot_id == snapshot_id,
                    snapshot_pages.c.cluster_id == old_id,
                )
                .values(cluster_id=new_id)
            )


def previous_templates(
    store: StatementRunner, snapshot_id: int, crawl: str | None, reason: str
) -> dict[int, int]:
    """Page id → template in the last snapshot of ``crawl`` before this one that closed
    with ``reason``."""
    query = (
        select(snapshots.c.id)
        .where(
            snapshots.c.crawl == crawl,
            snapshots.c.id < snapshot_id,
            snapshots.c.reason == reason,
        )
        .order_by(snapshots.c.id.desc())
        .limit(1)
    )
    with store.reading() as conn:
        previous = conn.execute(query).scalar()
        if previous is None:
            return {}
        rows = conn.execute(
            select(snapshot_pages.c.page_id, snapshot_pages.c.cluster_id).where(
                snapshot_pages.c.snapshot_id == previous,
                snapshot_pages.c.cluster_id.is_not(None),
            )
        )
        return {int(p): int(c) for p, c in rows}


def placed_pages(store: StatementRunner, snapshot_id: int) -> tuple[list[Any], dict[int, str]]:
    """(page id, template, fit, URL) of each of the snapshot's pages placed in a template, and
    the store's templates now (cluster id → JSON), read together."""
    query = (
        select(
            snapshot_pages.c.page_id, snapshot_pages.c.cluster_id, snapshot_pages.c.fit, pages.c.url
        )
        .join(pages, pages.c.id == snapshot_pages.c.page_id)
        .where(
            snapshot_pages.c.snapshot_id == snapshot_id, snapshot_pages.c.cluster_id.is_not(None)
        )
    )
    with store.reading() as conn:
        return list(conn.execute(query)), clusters.templates(conn)


def close(
    store: StatementRunner, snapshot_id: int, stats: Iterable[tuple[int, str]], reason: str | None
) -> None:
    """The snapshot's aggregates (template, JSON) replace its earlier ones, and it closes
    with ``reason``."""
    rows = [{"snapshot_id": snapshot_id, "cluster_id": cid, "stats": s} for cid, s in stats]
    with store.transaction() as conn:
        conn.execute(
            delete(snapshot_templates).where(snapshot_templates.c.snapshot_id == snapshot_id)
        )
        if rows:
            conn.execute(insert(snapshot_templates), rows)
        conn.execute(
            update(snapshots)
            .where(snapshots.c.id == snapshot_id)
            .values(finished_at=datetime.now(UTC), reason=reason)
        )


def _canonical_from(store: StatementRunner) -> int:
    """The first page id stored with a canonical URL (older ones are canonicalised here)."""
    with store.reading() as conn:
        return schema.canonical_from(conn)
