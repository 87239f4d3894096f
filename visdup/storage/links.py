"""The links found on stored pages (``visdup_links``): the frontier a later run of the same crawl
resumes from, written in the page's own transaction."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlalchemy import Connection, text
from sqlalchemy.sql.dml import Insert

from visdup.storage.fastpath import runs_on_driver
from visdup.storage.schema import links
from visdup.storage.urls import canonical_url

if TYPE_CHECKING:
    from visdup.storage.fastpath import StatementRunner

#: PostgreSQL: a page's links in one statement, their URLs one array, a link already known
#: left as it is. An ``executemany`` sent a statement for each link and converted each row's
#: five values: twice the CPU and half again the time of the whole insert.
_INSERT_ARRAY = text(
    f"INSERT INTO {links.name} (url, found_on, depth, run_id, followed)"
    " SELECT url, CAST(:found_on AS INTEGER), CAST(:depth AS INTEGER),"
    " CAST(:run_id AS INTEGER), CAST(:followed AS BOOLEAN)"
    " FROM unnest(CAST(:urls AS TEXT[])) AS url ON CONFLICT DO NOTHING"
)


@functools.cache
def _sqlite_insert() -> Insert:
    """SQLite: a link's insert, a link already known left as it is, with no savepoint (run
    for each of a page's links in one ``executemany`` on the driver). Built on first use: a
    process on PostgreSQL never imports SQLite's dialect."""
    from sqlalchemy.dialects import sqlite

    return runs_on_driver(sqlite.insert(links).on_conflict_do_nothing())


def canonical(urls: Iterable[str]) -> list[str]:
    """The links found on a page, each URL once in canonical form, sorted."""
    return sorted({canonical_url(u) for u in urls})


def add(
    store: StatementRunner,
    conn: Connection,
    page_id: int,
    urls: list[str],
    depth: int,
    run_id: int | None,
    followed: bool,
) -> None:
    """Store links ``urls`` (canonical) of page ``page_id``, those not known yet, in ``conn``'s
    transaction."""
    found = {"found_on": page_id, "depth": depth, "run_id": run_id, "followed": followed}
    if store.is_postgres:
        conn.execute(_INSERT_ARRAY, {"urls": urls, **found})
    else:
        store._run_many(conn, _sqlite_insert(), [{"url": u, **found} for u in urls])
