"""The measures a crawl took (``visdup_comparisons``): per page, its candidates' similarity
in each channel, which the final labels (:mod:`visdup.dedup.settle`) and the report reuse.

The table came after schema version 3: a store made before it gets it on first use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, insert, or_, select, text

from visdup.storage import schema
from visdup.storage.fastpath import runs_on_driver
from visdup.storage.schema import comparisons, pages

if TYPE_CHECKING:
    from visdup.storage.fastpath import StatementRunner

#: A page's comparisons, written with the page (on SQLite's driver: the page's hot path).
_INSERT = runs_on_driver(insert(comparisons))
#: PostgreSQL: a page's comparisons in one statement, each column one array (an
#: ``executemany`` sent a statement for each row).
_INSERT_ARRAYS = text(
    f"INSERT INTO {comparisons.name} (page_id, other_id, channel, similarity)"
    " SELECT CAST(:page_id AS INTEGER), other_id, channel, similarity FROM unnest("
    "CAST(:others AS INTEGER[]), CAST(:channels AS TEXT[]), CAST(:similarities AS FLOAT8[]))"
    " AS given(other_id, channel, similarity)"
)


def ready(store: StatementRunner) -> bool:
    """Create the table where a store of schema version 3 predates it."""
    return schema.table_ready(store, comparisons)


def present(store: StatementRunner) -> bool:
    """Whether the store has the table (stores made before it do not)."""
    return schema.table_present(store, comparisons)


def add(
    store: StatementRunner, conn: Connection, page_id: int, rows: Iterable[tuple[int, str, float]]
) -> None:
    """A page's measured candidates, (other page, channel, similarity), in its transaction."""
    given = list(rows)
    if not given:
        return
    if store.is_postgres:
        others, channels, similarities = (list(column) for column in zip(*given, strict=True))
        conn.execute(
            _INSERT_ARRAYS,
            {
                "page_id": page_id,
                "others": others,
                "channels": channels,
                "similarities": similarities,
            },
        )
        return
    values = [
        {"page_id": page_id, "other_id": o, "channel": c, "similarity": s} for o, c, s in given
    ]
    store._run_many(conn, _INSERT, values)


def rows(store: StatementRunner) -> list[Any]:
    """Every stored comparison (page_id, other_id, channel, similarity), by page."""
    c = comparisons.c
    query = select(c.page_id, c.other_id, c.channel, c.similarity).order_by(
        c.page_id, c.channel, c.similarity.desc()
    )
    with store.reading() as conn:
        return list(conn.execute(query))


def pages_without(store: StatementRunner) -> int:
    """Pages whose closest match is stored but none of their comparisons are (stored before
    the table, or with VISDUP_COMPARISONS_MAX at 0)."""
    matched = or_(
        pages.c.similarity.is_not(None)
        & pages.c.term.is_not(None)
        & or_(pages.c.kind.is_(None), pages.c.kind != "exact"),
        pages.c.content_similarity.is_not(None),
    )
    # a copy stored before its original is listed only as the other page of a comparison
    listed = or_(
        select(comparisons.c.page_id).where(comparisons.c.page_id == pages.c.id).exists(),
        select(comparisons.c.other_id).where(comparisons.c.other_id == pages.c.id).exists(),
    )
    query = select(func.count()).select_from(pages).where(matched, ~listed)
    with store.reading() as conn:
        return int(conn.execute(query).scalar_one())
