"""Template clusters and their layout signatures: every statement on ``visdup_clusters`` and
``visdup_layouts`` (:mod:`visdup.templates.assign` places pages through them, the batch
commands replace them whole).

Each function takes the store (its statement runner, :mod:`visdup.storage.fastpath`) and,
where the caller's transaction must hold the change, the handle :meth:`Store.transaction`
gives. Rows are stamped with the caller's clock (the store's, :func:`visdup.storage.store.now`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, func, insert, or_, select, update
from sqlalchemy.sql.dml import Insert

from visdup.storage.fastpath import runs_on_driver
from visdup.storage.locks import CLUSTERS_LOCK
from visdup.storage.schema import (
    clusters,
    layouts,
    pages,
    signed,
    snapshot_pages,
    snapshot_templates,
)

if TYPE_CHECKING:
    from visdup.storage.fastpath import StatementRunner

#: A stored page's cluster counts it (in the page's transaction).
GROW_CLUSTER = runs_on_driver(
    update(clusters).where(clusters.c.id == bindparam("cluster")).values(size=clusters.c.size + 1)
)
#: One cluster's row; the columns to set are the other keys of the parameters.
_UPDATE_CLUSTER = runs_on_driver(update(clusters).where(clusters.c.id == bindparam("cluster_id")))
#: A new cluster's row, of the columns the parameters name.
_INSERT_CLUSTER = runs_on_driver(insert(clusters))


@functools.cache
def _insert_layout(postgres: bool) -> Insert:
    """A layout signature's insert in the store's dialect, a row already there left as it is
    (a signature another process stored first), with no savepoint. Built on first use: a
    process on SQLite never imports PostgreSQL's dialect. (PostgreSQL's driver reports no row
    count for it: the row it returns says it was written.)"""
    if postgres:
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(layouts).on_conflict_do_nothing().returning(layouts.c.key)
    from sqlalchemy.dialects import sqlite

    return runs_on_driver(sqlite.insert(layouts).on_conflict_do_nothing())


#: The highest version a cluster row was written at (0: none).
VERSION = select(func.coalesce(func.max(clusters.c.version), 0))


def version(conn: Connection) -> int:
    """The highest version a cluster row was written at (0: none)."""
    return int(conn.execute(VERSION).scalar_one())


def changed(conn: Connection, since: int) -> list[Any]:
    """Clusters written after version ``since`` (by this process or another one)."""
    return list(
        conn.execute(select(clusters).where(clusters.c.version > since).order_by(clusters.c.id))
    )


def put(
    store: StatementRunner,
    conn: Connection,
    cluster_id: int,
    *,
    version: int,
    clock: Callable[[], datetime],
    representative: str | None = None,
    state: Any = None,
    template: Any = None,
) -> None:
    """Insert or update one cluster row; only the given values change."""
    values: dict[str, Any] = {"version": version, "updated_at": clock()}
    if representative is not None:
        values["representative"] = representative
    if state is not None:
        values["state"] = json.dumps(state)
    if template is not None:
        values["template"] = json.dumps(template)
    if store._run(conn, _UPDATE_CLUSTER, {"cluster_id": cluster_id, **values}) == 0:
        store._run(conn, _INSERT_CLUSTER, {"id": cluster_id, "size": 0, **values})


def put_layout(
    store: StatementRunner,
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
        "key": signed(key),
        "cluster_id": cluster_id,
        "labels": json.dumps(list(labels)),
        "sizes": json.dumps(list(sizes)),
        "version": version,
    }
    statement = _insert_layout(store.is_postgres)
    if store.is_postgres:
        return conn.execute(statement, row).first() is not None
    return store._run(conn, statement, row) == 1


def changed_layouts(conn: Connection, since: int) -> list[tuple[int, list[str], list[int]]]:
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


def merge(
    conn: Connection, into: int, absorbed: Sequence[int], clock: Callable[[], datetime]
) -> None:
    """Clusters ``absorbed`` became part of ``into``: their pages and signatures follow,
    their rows go, and ``into`` counts its pages anew (in the caller's transaction)."""
    if not absorbed:
        return
    gone = list(absorbed)
    conn.execute(update(pages).where(pages.c.cluster_id.in_(gone)).values(cluster_id=into))
    conn.execute(update(layouts).where(layouts.c.cluster_id.in_(gone)).values(cluster_id=into))
    # every snapshot sees the merged template under its new id
    conn.execute(
        update(snapshot_pages).where(snapshot_pages.c.cluster_id.in_(gone)).values(cluster_id=into)
    )
    taken = select(snapshot_templates.c.snapshot_id).where(snapshot_templates.c.cluster_id == into)
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
        conn.execute(insert(clusters).values(id=into, size=size, updated_at=clock()))


def move_page(store: StatementRunner, page_id: int, old: int, live: Callable[[int], int]) -> int:
    """A page stored under template ``old`` as it merged into another follows to the id
    ``live(old)`` gives, read under the clusters' lock (:meth:`Store.move_page_cluster`)."""
    with store.transaction(locks=[CLUSTERS_LOCK]) as conn:
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


def rows(store: StatementRunner) -> list[Any]:
    """Every cluster row, by id."""
    with store.reading() as conn:
        return list(conn.execute(select(clusters).order_by(clusters.c.id)))


def templates(conn: Connection) -> dict[int, str]:
    """Cluster id → its stored template (JSON), of the clusters that have one."""
    query = select(clusters.c.id, clusters.c.template).where(clusters.c.template.is_not(None))
    return {int(cid): text for cid, text in conn.execute(query)}


def member_pages(conn: Connection) -> Iterator[tuple[int, str]]:
    """(cluster id, URL) of every stored page placed in a template cluster."""
    query = select(pages.c.cluster_id, pages.c.url).where(pages.c.cluster_id.is_not(None))
    for cluster_id, url in conn.execute(query):
        yield int(cluster_id), url


def set_representatives(
    conn: Connection, representatives: Mapping[int, str], clock: Callable[[], datetime]
) -> None:
    """Name the page that stands for each of these clusters (rows that name another)."""
    c = clusters.c
    for cluster_id, url in sorted(representatives.items()):
        conn.execute(
            update(clusters)
            .where(c.id == cluster_id, or_(c.representative.is_(None), c.representative != url))
            .values(representative=url, updated_at=clock())
        )


def replace_all(
    store: StatementRunner,
    items: list[dict[str, Any]],
    clock: Callable[[], datetime],
    current_key: Callable[[list[str], list[int]], int],
) -> None:
    """Replace the stored clusters and the pages' cluster ids (:meth:`Store.save_clusters`);
    ``current_key`` gives a signature's key as this version of visdup makes it (a stored
    signature whose key differs was made by another version)."""
    with store.transaction() as conn:
        conn.execute(clusters.delete())
        conn.execute(update(pages).values(cluster_id=None))
        if any("layouts" in item for item in items):
            # signatures of another version go; those of pages the batch could not read
            # again (no stored body) stay, for the crawl to link as before
            foreign = [
                signed(key)
                for key, labels, sizes in changed_layouts(conn, -1)
                if current_key(labels, sizes) != key
            ]
            for start in range(0, len(foreign), 500):
                conn.execute(
                    layouts.delete().where(layouts.c.key.in_(foreign[start : start + 500]))
                )
        for item in items:
            for layout in item.get("layouts", ()):
                if not put_layout(
                    store,
                    conn,
                    layout.key,
                    cluster_id=item["id"],
                    labels=layout.stored_labels,
                    sizes=layout.sizes,
                    version=1,
                ):
                    conn.execute(
                        update(layouts)
                        .where(layouts.c.key == signed(layout.key))
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
                    updated_at=clock(),
                )
            )
            for start in range(0, len(members), 500):
                conn.execute(
                    update(pages)
                    .where(pages.c.id.in_(members[start : start + 500]))
                    .values(cluster_id=item["id"])
                )


def template_items(
    templates: list[dict[str, Any]],
    records: list[dict[str, Any]],
    placed: dict[str, int] | None,
    representatives: Mapping[int, str] | None,
    ids: Mapping[str, int],
) -> list[dict[str, Any]]:
    """The items :func:`replace_all` stores for an extraction (:meth:`Store.save_templates`):
    ``placed`` is URL → cluster id, ``ids`` URL → stored page id."""
    chosen = representatives or {}
    members: dict[Any, list[str]] = {}
    if placed is not None:
        for url, cid in placed.items():
            members.setdefault(cid, []).append(url)
    else:
        for record in records:
            if record.get("cluster") is not None:
                members.setdefault(record["cluster"], []).append(record["url"])
    by_cluster = {t["cluster"]: t for t in templates if t.get("cluster") is not None}
    return [
        {
            "id": cid,
            "representative": chosen.get(cid)
            or (by_cluster.get(cid) or {}).get("representative")
            or min(urls),
            "template": by_cluster.get(cid),
            "members": [ids[u] for u in urls if u in ids],
        }
        for cid, urls in sorted(members.items())
    ] + [
        {
            "id": cid,
            "representative": chosen.get(cid) or t.get("representative"),
            "template": t,
        }
        for cid, t in by_cluster.items()
        if cid not in members
    ]
