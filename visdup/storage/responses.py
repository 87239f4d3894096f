"""The URLs a crawl met that gave no HTML page (``visdup_responses``): what the report's
responses section lists (broken links, redirects, server errors, other content, URLs robots.txt
forbade), each with the page that linked to it.

A URL keeps one row, its latest answer: a crawl resumed or run again overwrites it, so the
store says what the site answers now. The table came after schema version 3: a store made
before it gets it on first use (:func:`ready`), and readers ask :func:`present` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from visdup.storage import schema
from visdup.storage.schema import responses
from visdup.storage.urls import canonical_url

if TYPE_CHECKING:
    from sqlalchemy import Insert

    from visdup.storage.fastpath import StatementRunner

#: What a row says of its URL, in the order the report lists them.
KINDS = (
    "client_error",  # 4xx: a broken link when a page links to it
    "server_error",  # 5xx, after the crawl's retries
    "failed",  # no answer: refused, reset, timed out, unresolved
    "redirect",  # 3xx, with its target
    "not_html",  # an answer, but not an HTML page (a PDF, an image, a feed)
    "robots",  # robots.txt forbade the request: never fetched
    "other",  # any other status (1xx, 2xx other than 200 with no page)
)

_COLUMNS = ("url", "kind", "status", "target", "content_type", "referer", "reason", "run_id")


def _upsert(postgres: bool) -> Insert:
    """A row for a URL, replacing the one an earlier answer left."""
    if postgres:
        from sqlalchemy.dialects import postgresql

        pg = postgresql.insert(responses)
        return pg.on_conflict_do_update(
            index_elements=[responses.c.url],
            set_={c: pg.excluded[c] for c in (*_COLUMNS[1:], "at")},
        )
    from sqlalchemy.dialects import sqlite

    lite = sqlite.insert(responses)
    return lite.on_conflict_do_update(
        index_elements=[responses.c.url],
        set_={c: lite.excluded[c] for c in (*_COLUMNS[1:], "at")},
    )


def ready(store: StatementRunner) -> bool:
    """Create the table where a store of schema version 3 predates it."""
    return schema.table_ready(store, responses)


def present(store: StatementRunner) -> bool:
    """Whether the store has the table (stores made before it do not)."""
    return schema.table_present(store, responses)


def put(store: StatementRunner, rows: Iterable[Mapping[str, Any]], postgres: bool) -> int:
    """Store rows (keys of :data:`_COLUMNS`), one per URL, the last of a URL winning; in one
    transaction. The number stored."""
    at = datetime.now(UTC)
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        values = {c: row.get(c) for c in _COLUMNS}
        url = values["url"] = canonical_url(str(row["url"]))
        values["at"] = at
        latest[url] = values
    if not latest:
        return 0
    ordered = [latest[u] for u in sorted(latest)]  # one lock order for concurrent writers
    with store.transaction() as conn:
        conn.execute(_upsert(postgres), ordered)
    return len(ordered)


def rows(store: StatementRunner) -> list[Any]:
    """Every stored response (the columns of :data:`_COLUMNS`), by URL."""
    c = responses.c
    query = select(*(c[name] for name in _COLUMNS)).order_by(c.url)
    with store.reading() as conn:
        return list(conn.execute(query))
