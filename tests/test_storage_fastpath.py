"""The store's SQLite fast path (visdup.storage.fastpath) against SQLAlchemy's own execution.

Every statement declared to run on the driver is run both ways, in the writes and reads a crawl
makes, and must give the same answers and leave the same rows, value for value and type for
type. The fast path reads SQLAlchemy's compiler internals: a new SQLAlchemy that changes them
fails here, and pyproject.toml pins SQLAlchemy below the next minor until it has been checked.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

import visdup.storage.store as store_module
from tests.conftest import REPO
from visdup.storage import fastpath, snapshots
from visdup.storage.store import PageRecord, Store

TABLES = (
    "visdup_runs",
    "visdup_pages",
    "visdup_links",
    "visdup_comparisons",
    "visdup_clusters",
    "visdup_layouts",
)


def _raw_rows(path: Path, table: str) -> list[tuple[Any, ...]]:
    """Every row of ``table`` with each value's SQLite type, as the file holds it."""
    db = sqlite3.connect(path)
    try:
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        picks = ", ".join(f"typeof({c}), {c}" for c in columns)
        return sorted(db.execute(f"SELECT {picks} FROM {table}").fetchall(), key=repr)
    finally:
        db.close()


def _page(url: str, **values: Any) -> PageRecord:
    return PageRecord(**{"url": url, "status": 200, "depth": 1, "verdict": "novel", **values})


def _row(row: Any) -> Any:
    """A read row as comparable values: its columns by name."""
    return None if row is None else (tuple(row._fields), tuple(row))


def _work(store: Store) -> list[Any]:
    """A crawl's writes and reads through every statement the fast path runs; what each
    gave."""
    got: list[Any] = []
    run = store.begin_run("test", "http://x")
    with store.transaction() as conn:
        store.put_cluster(conn, 3, version=1, representative="http://x/a", state={"s": 1})
        store.put_cluster(conn, 3, version=2, template={"t": 1})  # the update of a known row
        store.put_cluster(conn, 4, version=3)
        got.append(
            store.put_layout(conn, 2**63 + 7, cluster_id=3, labels=["b"], sizes=[1], version=1)
        )
        got.append(store.put_layout(conn, 5, cluster_id=4, labels=["c"], sizes=[2], version=2))
        got.append(  # stored already: left as it is
            store.put_layout(conn, 2**63 + 7, cluster_id=4, labels=["d"], sizes=[3], version=3)
        )
    first = _page(
        "http://x/a.html#top",
        body=b"\x00\xffbody",
        body_hash="abc",
        truncated=True,
        replacement_ratio=0.25,
        term="(grp)",
        simhash=2**64 - 3,
        content_simhash=2**63,
        similarity=0.5,
        title="A \u00e9",
        cluster_id=3,
        links=["http://x/b.html#s", "http://x/c.html", "http://x/b.html"],
    )
    copy = _page(
        "http://x/copy.html",
        body_hash="abc",
        duplicate_of=1,
        kind="exact",
        verdict="duplicate",
        similarity=1.0,
        cluster_id=3,
        links=["http://x/c.html", "http://x/d.html"],
    )
    broken = _page("http://x/broken.html", body_hash="zzz", problem="binary", cluster_id=4)
    with store.transaction() as conn:
        page_id = store.insert_page(conn, first, run, links_followed=False)
        got.append(page_id)
        got.append(store.page_by_body_hash(conn, "abc"))
        got.append(store.page_by_body_hash(conn, "nothing"))
        store.add_comparisons(conn, page_id, [(1, "structure", 0.5), (1, "content", 1.0)])
    with store.transaction() as conn:
        got.append(store.insert_page(conn, copy, run))
        got.append(store.insert_page(conn, broken, run))
        got.append(store.page_by_body_hash(conn, "zzz"))  # a page with a problem: not a twin
        store.add_comparisons(conn, 2, [(1, "structure", 1.0)])
        store.add_comparisons(conn, 2, [])
    with store.transaction() as conn:  # stored already: nothing written, nothing counted
        got.append(store.insert_page(conn, first, run))
    store.add_links(2, ["http://x/e.html", "http://x/d.html#again"], 3, run, True)
    store.add_links(2, [], 3, run, True)
    for url in ("http://x/a.html#x", "http://x/copy.html", "http://x/none.html"):
        got.append(_row(snapshots.stored_labels(store, url)))
    got.append(store.unfetched_links())
    return got


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "now", lambda: datetime(2024, 5, 6, 7, 8, 9, 123, UTC))


@pytest.mark.usefixtures("frozen_clock")
def test_every_statement_on_the_driver_gives_what_sqlalchemy_gives(tmp_path: Path) -> None:
    paths: dict[str, Path] = {}
    answers: dict[str, list[Any]] = {}
    for way in ("driver", "sqlalchemy"):
        paths[way] = tmp_path / f"{way}.sqlite3"
        store = Store.from_url(f"sqlite:///{paths[way]}")
        store._on_driver = way == "driver"
        try:
            answers[way] = _work(store)
            if way == "driver":
                compiled = store._driver_statements
                assert None not in compiled.values(), "a statement fell back to SQLAlchemy"
                ran = {id(driver.statement) for driver in compiled.values()}
                declared = {id(statement) for statement in fastpath.DRIVER_STATEMENTS}
                assert ran == declared, "every declared statement ran, and only those"
            else:
                assert store._driver_statements == {}
        finally:
            store.close()
    assert answers["driver"] == answers["sqlalchemy"]
    assert answers["driver"][:3] == [True, True, False]
    for table in TABLES:
        assert _raw_rows(paths["driver"], table) == _raw_rows(paths["sqlalchemy"], table), table
    sizes = {row[1]: row[5] for row in _raw_rows(paths["driver"], "visdup_clusters")}
    assert sizes == {3: 2, 4: 1}  # (id, size): each stored page counted once


def test_the_fast_path_is_sqlite_only(tmp_path: Path) -> None:
    """On PostgreSQL SQLAlchemy runs every statement (its round trips outweigh its work)."""
    store = Store.from_url(f"sqlite:///{tmp_path / 's.sqlite3'}")
    try:
        assert store._on_driver
        assert store._driver_statement(snapshots.STORED_LABELS) is not None
        store._on_driver = False
        assert store._driver_statement(snapshots.STORED_LABELS) is None
    finally:
        store.close()


def test_sqlalchemy_is_pinned_below_a_minor_the_fast_path_was_not_checked_on() -> None:
    """pyproject.toml bounds SQLAlchemy below its next minor, and the installed one (the one
    the test above checked) is inside the bounds."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    pin = re.search(r'"sqlalchemy>=(\d+)\.(\d+),<(\d+)\.(\d+)"', text)
    assert pin is not None, "SQLAlchemy needs an upper bound: the fast path reads its internals"
    low, high = (int(pin[1]), int(pin[2])), (int(pin[3]), int(pin[4]))
    assert high[0] == low[0], "the bound stays within one major"
    installed = tuple(int(part) for part in version("sqlalchemy").split(".")[:2])
    assert low <= installed < high
