"""The store: clear errors without secrets, whole transactions, one SQLite writer, the schema."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.crawling import article, listing, write_site
from visdup.demo.server import serve
from visdup.errors import InputError, StoreError
from visdup.index.sql import band_index
from visdup.storage import schema
from visdup.storage.store import PageRecord, Store
from visdup.storage.urls import canonical_url, crawl_key, mask_password, origin

REPO = Path(__file__).resolve().parent.parent


def _sqlite(tmp_path: Path, name: str = "store.sqlite3") -> str:
    return f"sqlite:///{tmp_path / name}"


def _open_error(url: str) -> StoreError:
    with pytest.raises(StoreError) as info:
        Store.from_url(url)
    assert isinstance(info.value, InputError), "a store that cannot be opened is bad input"
    return info.value


# -- URLs ---------------------------------------------------------------------------------------


def test_urls_in_one_canonical_form():
    assert canonical_url("http://Example.com:80/a.html?b=2&a=1#top") == (
        "http://example.com:80/a.html?a=1&b=2"
    )
    assert canonical_url("http://x/a.html#one") == canonical_url("http://x/a.html#two")
    assert canonical_url("site/page.html") == "site/page.html"  # files keep their names
    assert origin("http://h/a") == "http://h:80" != origin("http://h:8080/a")
    assert origin("https://H/") == "https://h:443"
    assert crawl_key(["http://a:1/x", "http://a:1/y", "http://b/"], "site") == (
        "http://a:1 http://b:80"
    )
    assert crawl_key([], "books") == "spider:books"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql+psycopg://admin:S3cret@db:5432/x", "postgresql+psycopg://admin:***@db:5432/x"),
        (
            "postgresql://u@h/x?password=S3cret&sslmode=require",
            "postgresql://u@h/x?password=***&sslmode=require",
        ),
        ("sqlite:///x.db", "sqlite:///x.db"),
    ],
)
def test_mask_password(url, shown):
    assert mask_password(url) == shown


# -- errors that name the problem, never the password ------------------------------------------


def test_typo_in_the_scheme(tmp_path):
    error = _open_error(f"sqlit:///{tmp_path / 'x.db'}")
    assert "unsupported database 'sqlit'" in str(error)
    assert "did you mean 'sqlite'" in str(error)
    assert not (tmp_path / "x.db").exists()


def test_not_a_url():
    assert "not a database URL" in str(_open_error("just some words"))
    assert "no database URL" in str(_open_error(""))


def test_unreachable_server_hides_the_password():
    error = _open_error("postgresql+psycopg://admin:S3cret@127.0.0.1:1/x")
    assert "cannot connect to 'postgresql+psycopg://admin:***@127.0.0.1:1/x'" in str(error)
    assert "S3cret" not in str(error)
    assert "S3cret" not in repr(error.__cause__) and error.__suppress_context__


def test_missing_driver_names_the_extra():
    """psycopg made unimportable in a child process: the message says what to install."""
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from visdup.storage.store import Store\n"
        "from visdup.errors import StoreError\n"
        "try:\n"
        "    Store.from_url('postgresql://admin:S3cret@127.0.0.1:5432/test')\n"
        "except StoreError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert "pip install 'visdup[postgres]'" in out.stdout, out.stderr[-2000:]
    assert "postgresql+psycopg" in out.stdout
    assert "S3cret" not in out.stdout + out.stderr


def test_unknown_driver():
    error = _open_error("postgresql+nosuchdriver://admin:S3cret@127.0.0.1/x")
    assert "pip install 'visdup[postgres]'" in str(error) and "S3cret" not in str(error)


def test_unusable_sqlite_paths(tmp_path):
    assert "no directory" in str(_open_error(_sqlite(tmp_path / "missing")))
    (tmp_path / "dir.db").mkdir()
    assert "is a directory" in str(_open_error(_sqlite(tmp_path, "dir.db")))
    (tmp_path / "junk.db").write_bytes(b"this is not a database at all" * 100)
    assert "not a database" in str(_open_error(_sqlite(tmp_path, "junk.db")))


def test_unwritable_directory(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes everywhere: the permission check cannot be observed")
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert "not writable" in str(_open_error(_sqlite(locked)))
    finally:
        locked.chmod(0o700)


# -- transactions -------------------------------------------------------------------------------


def _record(url: str, links: list[str]) -> PageRecord:
    return PageRecord(url=url, status=200, depth=0, simhash=5, links=links)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return _sqlite(tmp_path)
    return request.getfixturevalue("pg_url")


def test_a_page_and_its_links_commit_together(store_url, monkeypatch):
    """D1: the links fail after the page row went in: nothing of the page may stay."""
    store = Store.from_url(store_url)
    run = store.begin_run("test")

    def broken(*args, **kwargs):
        raise RuntimeError("disk full while writing links")

    monkeypatch.setattr(store, "_add_links", broken)
    with pytest.raises(RuntimeError), store.engine.begin() as conn:
        store.insert_page(conn, _record("http://x/a.html", ["http://x/b.html"]), run)
    assert store.rows() == []
    monkeypatch.undo()
    with store.engine.begin() as conn:  # the same page, written whole this time
        record = _record("http://x/a.html#top", ["http://x/b.html#s"])
        page_id = store.insert_page(conn, record, run)
    assert [r.url for r in store.rows("url")] == ["http://x/a.html"]
    assert store.unfetched_links() == [("http://x/b.html", 1)]
    with store.engine.begin() as conn:  # the URL in another spelling is the same page
        assert store.insert_page(conn, _record("http://x/a.html#other", []), run) is None
    assert page_id is not None
    store.close()


def _raw_rows(path: Path, table: str) -> list[tuple]:
    """Every row of ``table`` with each value's SQLite type, as the file holds it."""
    db = sqlite3.connect(path)
    try:
        columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        picks = ", ".join(f"typeof({c}), {c}" for c in columns)
        return sorted(db.execute(f"SELECT {picks} FROM {table}").fetchall(), key=repr)
    finally:
        db.close()


def test_sqlite_pages_are_written_as_sqlalchemy_writes_them(tmp_path, monkeypatch):
    """A page's statements run on SQLite's driver: the same values, types and text as
    SQLAlchemy's own execution writes (a datetime's text, a boolean, a blob, a signed
    fingerprint, the links' rows, the comparisons, the cluster's count)."""
    from datetime import UTC, datetime

    import visdup.storage.store as store_module

    monkeypatch.setattr(store_module, "now", lambda: datetime(2024, 5, 6, 7, 8, 9, 123, UTC))
    paths = {}
    for way in ("driver", "sqlalchemy"):
        paths[way] = tmp_path / f"{way}.sqlite3"
        store = Store.from_url(f"sqlite:///{paths[way]}")
        if way == "sqlalchemy":
            store._on_driver = False
        run = store.begin_run("test")
        with store.engine.begin() as conn:
            store.put_cluster(conn, 3, version=1, representative="http://x/a", state={"s": 1})
            store.put_cluster(conn, 3, version=2)
            assert store.put_layout(
                conn, 2**63 + 7, cluster_id=3, labels=["b"], sizes=[1], version=1
            )
            assert not store.put_layout(
                conn, 2**63 + 7, cluster_id=4, labels=["c"], sizes=[2], version=2
            )
        record = PageRecord(
            url="http://x/a.html#top",
            status=200,
            depth=2,
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
        with store.engine.begin() as conn:
            page_id = store.insert_page(conn, record, run, links_followed=False)
            assert page_id == 1
            assert store.page_by_body_hash(conn, "abc") == 1
            assert store.page_by_body_hash(conn, "nothing") is None
            store.add_comparisons(conn, page_id, [(1, "structure", 0.5), (1, "content", 1.0)])
        with store.engine.begin() as conn:  # stored already: nothing written, nothing counted
            assert store.insert_page(conn, record, run) is None
        if way == "driver":  # every statement above ran on the driver, none fell back
            compiled = store._driver_statements
            assert compiled and None not in compiled.values()
        store.close()
    for table in ("visdup_pages", "visdup_links", "visdup_comparisons", "visdup_clusters"):
        assert _raw_rows(paths["driver"], table) == _raw_rows(paths["sqlalchemy"], table), table
    assert _raw_rows(paths["driver"], "visdup_clusters")[0][5] == 1  # (typeof, size)


def test_a_driver_error_is_sqlalchemys_and_leaves_nothing(tmp_path):
    """An error of a statement run on the driver reaches the caller as SQLAlchemy raises it,
    and the page's transaction keeps none of its rows."""
    from sqlalchemy.exc import IntegrityError

    store = Store.from_url(_sqlite(tmp_path))
    store.begin_run("test")
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        store.insert_page(conn, _record("http://x/a.html", ["http://x/b.html"]), 999)  # no run
    assert store.rows() == []
    assert store.unfetched_links() == []
    store.close()


def test_a_url_another_writer_stores_meanwhile_leaves_the_transaction_usable(pg_url):
    """PostgreSQL: a writer that finds its page's URL gone by its look but stored by another
    process before its insert is told so (None), and its transaction goes on: the rest of
    its page's work still commits. An error other than that URL's is not taken for it."""
    import threading

    from sqlalchemy.exc import IntegrityError

    store = Store.from_url(pg_url)
    run = store.begin_run("test")
    other = store.engine.connect()
    other.begin()
    assert store.insert_page(other, _record("http://x/a.html", []), run)  # not committed yet
    answers: list[object] = []

    def second() -> None:
        with store.transaction() as conn:
            answers.append(store.insert_page(conn, _record("http://x/a.html", []), run))
            answers.append(store.insert_page(conn, _record("http://x/b.html", []), run))

    thread = threading.Thread(target=second)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive()  # its insert waits on the first writer's row
    other.commit()
    other.close()
    thread.join(10)
    assert answers[0] is None and isinstance(answers[1], int)
    assert sorted(r.url for r in store.rows("url")) == ["http://x/a.html", "http://x/b.html"]
    with pytest.raises(IntegrityError), store.transaction() as conn:
        store.insert_page(conn, _record("http://x/c.html", []), 999)  # no such run
    assert len(store.rows("url")) == 2
    store.close()


def test_a_pooled_connection_is_pinged_only_after_it_sat_unused(pg_url, monkeypatch):
    """PostgreSQL: a connection handed out again a moment after its last use is not pinged
    (a round trip each time the label process begins a page); one unused for longer is, and
    where its server side is gone the pool connects anew: the caller never sees it."""
    import psycopg

    from visdup.storage import engine as engine_module

    store = Store.from_url(pg_url)
    engine = store.engine
    pings: list[int] = []
    real = engine.dialect.do_ping

    def counted(dbapi_conn):
        pings.append(1)
        return real(dbapi_conn)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    for _ in range(20):
        with engine.begin() as conn:
            assert conn.exec_driver_sql("SELECT 1").scalar() == 1
    assert pings == []
    monkeypatch.setattr(engine_module, "IDLE_PING", 0.05)
    libpq = pg_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(libpq, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    time.sleep(0.1)
    with engine.begin() as conn:  # its pooled connection is gone: pinged, and replaced
        assert conn.exec_driver_sql("SELECT 2").scalar() == 2
    assert pings
    store.close()


def test_links_are_stored_alike_on_both_databases(store_url):
    """A page's links, each once in canonical form, with the page, depth, run and whether
    they are followed; a link already known keeps its first row; a page fetched again adds
    only its new ones (PostgreSQL inserts a page's links in one statement, SQLite row by
    row: the rows are the same)."""
    store = Store.from_url(store_url)
    run = store.begin_run("test")
    with store.transaction() as conn:
        a = store.insert_page(
            conn,
            _record("http://x/a.html", ["http://x/b.html", "http://x/c.html", "http://x/b.html#s"]),
            run,
            links_followed=False,
        )
        b = store.insert_page(
            conn, _record("http://x/d.html", ["http://x/c.html", "http://x/e"]), run
        )
    assert a is not None and b is not None
    store.add_links(b, ["http://x/e", "http://x/f.html", "HTTP://X/g.html"], 3, None, True)
    store.add_links(b, [], 3, None, True)
    with store.engine.connect() as conn:
        stored = [
            tuple(row)
            for row in conn.execute(
                text("SELECT url, found_on, depth, run_id, followed FROM visdup_links ORDER BY url")
            )
        ]
    assert stored == [
        ("http://x/b.html", a, 1, run, False),
        ("http://x/c.html", a, 1, run, False),
        ("http://x/e", b, 1, run, True),
        ("http://x/f.html", b, 3, None, True),
        ("http://x/g.html", b, 3, None, True),
    ]
    store.close()


def test_comparisons_are_stored_alike_on_both_databases(store_url):
    """A page's measured candidates go in with it, each with its channel and its similarity
    to the last bit (PostgreSQL inserts them in one statement, SQLite row by row)."""
    from visdup.storage import comparisons

    store = Store.from_url(store_url)
    run = store.begin_run("test")
    given = [(7, "structure", 0.123456789012345), (3, "content", 1.0), (7, "content", 2 / 3)]
    with store.transaction() as conn:
        page = store.insert_page(conn, _record("http://x/a.html", []), run)
        assert page is not None
        store.add_comparisons(conn, page, given)
        store.add_comparisons(conn, page, [])
    stored = sorted(tuple(row) for row in comparisons.rows(store))
    assert stored == sorted((page, *row) for row in given)
    assert all(isinstance(row[3], float) for row in stored)
    store.close()


def test_a_page_written_without_a_begin_is_still_one_transaction(store_url):
    """A connection with no transaction begun gets one, as SQLAlchemy begins it: the page and
    its links stay uncommitted until the caller commits, and go with its rollback."""
    store = Store.from_url(store_url)
    run = store.begin_run("test")
    with store.engine.connect() as conn:
        assert store.insert_page(conn, _record("http://x/a.html", ["http://x/b.html"]), run)
        conn.rollback()
    assert store.rows() == []
    assert store.unfetched_links() == []
    with store.engine.connect() as conn:
        assert store.insert_page(conn, _record("http://x/a.html", ["http://x/b.html"]), run)
        conn.commit()
    assert [r.url for r in store.rows("url")] == ["http://x/a.html"]
    assert store.unfetched_links() == [("http://x/b.html", 1)]
    store.close()


def test_what_the_driver_cannot_give_as_sqlalchemy_does_runs_through_sqlalchemy(tmp_path):
    """A datetime or boolean column (SQLAlchemy converts them as it reads) and an unnamed
    expression are read through SQLAlchemy: the same values and names as its own rows."""
    from sqlalchemy import bindparam, func, select

    store = Store.from_url(_sqlite(tmp_path))
    run = store.begin_run("test")
    with store.engine.begin() as conn:
        store.insert_page(conn, _record("http://x/a.html", []), run)
    pages = schema.pages
    by_url = {"u": "http://x/a.html"}
    typed = select(pages.c.url, pages.c.fetched_at, pages.c.truncated).where(
        pages.c.url == bindparam("u")
    )
    counted = select(func.count()).select_from(pages).where(pages.c.url == bindparam("u"))
    for statement in (typed, counted):
        with store.engine.connect() as conn:
            expected = conn.execute(statement, by_url).first()
        got = store.read_first(statement, by_url)
        assert tuple(got) == tuple(expected) and got._fields == expected._fields
    assert isinstance(store.read_first(typed, by_url).truncated, bool)
    store.close()


def test_a_value_no_parameter_takes_is_a_statement_error_on_either_path(tmp_path):
    from sqlalchemy.exc import StatementError

    for way in ("driver", "sqlalchemy"):
        store = Store.from_url(_sqlite(tmp_path, f"{way}.sqlite3"))
        store._on_driver = way == "driver"
        run = store.begin_run("test")
        record = _record("http://x/a.html", [])
        record.truncated = "yes"  # type: ignore[assignment]
        with (
            pytest.raises(StatementError, match="Not a boolean value"),
            store.engine.begin() as conn,
        ):
            store.insert_page(conn, record, run)
        assert store.rows() == []
        store.close()


def test_read_first_names_its_columns(store_url):
    from visdup.drift.snapshot import _STORED_LABELS

    store = Store.from_url(store_url)
    run = store.begin_run("test")
    record = _record("http://x/a.html", [])
    record.verdict, record.similarity = "novel", 0.75
    with store.engine.begin() as conn:
        page_id = store.insert_page(conn, record, run)
    row = store.read_first(_STORED_LABELS, {"page_url": "http://x/a.html"})
    assert (row.id, row.verdict, row.kind, row.duplicate_of, row.similarity) == (
        page_id,
        "novel",
        None,
        None,
        0.75,
    )
    assert store.read_first(_STORED_LABELS, {"page_url": "http://x/b.html"}) is None
    if store_url.startswith("sqlite"):  # read on the driver: no column SQLAlchemy converts
        assert store._driver_statement(_STORED_LABELS) is not None
    store.close()


def test_a_layout_signature_stored_first_elsewhere_is_kept(store_url):
    """Two writers meet the same new signature: the second keeps the first one's row, and
    its transaction goes on (no error, nothing rolled back)."""
    from sqlalchemy import select

    from visdup.storage.schema import layouts

    store = Store.from_url(store_url)
    key = 2**63 + 12345  # an unsigned key past the signed range, as real keys are
    with store.engine.begin() as conn:
        assert store.put_layout(conn, key, cluster_id=1, labels=["body"], sizes=[1], version=1)
    with store.engine.begin() as conn:
        again = store.put_layout(
            conn, key, cluster_id=2, labels=["body", "x"], sizes=[2, 1], version=2
        )
        assert again is False
        conn.execute(text("INSERT INTO visdup_meta (key, value) VALUES ('after', '1')"))
    with store.engine.connect() as conn:
        rows = conn.execute(select(layouts.c.cluster_id, layouts.c.labels)).all()
        assert [tuple(r) for r in rows] == [(1, '["body"]')]
        assert conn.execute(text("SELECT value FROM visdup_meta WHERE key = 'after'")).scalar()
    store.close()


def test_sqlite_transactions_begin_before_a_savepoint(tmp_path):
    """The pysqlite recipe: work before and after a SAVEPOINT belongs to one transaction."""
    store = Store.from_url(_sqlite(tmp_path))
    with pytest.raises(RuntimeError), store.engine.begin() as conn:
        conn.execute(text("INSERT INTO visdup_meta (key, value) VALUES ('a', '1')"))
        with conn.begin_nested():
            conn.execute(text("INSERT INTO visdup_meta (key, value) VALUES ('b', '2')"))
        raise RuntimeError("roll everything back")
    with store.engine.connect() as conn:
        keys = set(conn.execute(text("SELECT key FROM visdup_meta")).scalars())
    assert keys == {"schema_version"}
    store.close()


# -- one writer on SQLite --------------------------------------------------------------------------

_HOLDER = """
import sys, time
from visdup.storage.store import Store
store = Store.from_url(sys.argv[1], writer=True)
print("ready", flush=True)
time.sleep(120)
"""


def test_a_second_writer_is_refused_until_the_first_dies(tmp_path):
    url = _sqlite(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, url], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError) as info:
            Store.from_url(url, writer=True)
        message = str(info.value)
        assert "PostgreSQL" in message and f"pid {holder.pid}" in message
        reader = Store.from_url(url)  # reading (a report) stays possible
        assert reader.rows() == []
        with pytest.raises(StoreError):
            reader.begin_run("second crawl")  # and a reader cannot start a run either
        reader.close()
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    # a killed writer leaves no lock behind
    store = Store.from_url(url, writer=True)
    store.begin_run("after the kill")
    store.close()
    again = Store.from_url(url, writer=True)  # close() released it
    again.close()


def test_postgres_has_no_single_writer_lock(pg_url):
    first = Store.from_url(pg_url, writer=True)
    second = Store.from_url(pg_url, writer=True)
    assert first.begin_run("a") != second.begin_run("b")
    first.close()
    second.close()


# -- schema ---------------------------------------------------------------------------------------


def test_newer_or_unknown_schema_is_refused(tmp_path):
    url = _sqlite(tmp_path)
    Store.from_url(url).close()
    with sqlite3.connect(tmp_path / "store.sqlite3") as conn:
        conn.execute("UPDATE visdup_meta SET value = '99' WHERE key = 'schema_version'")
    assert "newer than this visdup reads" in str(_open_error(url))
    with sqlite3.connect(tmp_path / "store.sqlite3") as conn:
        conn.execute("UPDATE visdup_meta SET value = 'x1' WHERE key = 'schema_version'")
    assert "unknown visdup schema version 'x1'" in str(_open_error(url))
    with sqlite3.connect(tmp_path / "store.sqlite3") as conn:
        conn.execute("DROP TABLE visdup_meta")
    assert "no schema version" in str(_open_error(url))


def test_version_1_store_is_migrated(tmp_path):
    """Runs gain their crawl, cluster sizes are recounted, SQLite's unread band table goes."""
    url = _sqlite(tmp_path)
    store = Store.from_url(url)
    run = store.begin_run("old")
    with store.engine.begin() as conn:
        store.put_cluster(conn, 7, version=1, representative="http://x/a")
        for name in ("a", "b", "c"):
            record = _record(f"http://x/{name}", [])
            record.cluster_id = 7
            store.insert_page(conn, record, run)
        conn.execute(text("UPDATE visdup_pages SET url = 'http://x/c?b=2&a=1#f' WHERE id = 3"))
    store.close()
    with sqlite3.connect(tmp_path / "store.sqlite3") as conn:  # back to version 1's shape
        conn.execute("DROP INDEX ix_visdup_runs_crawl")
        conn.execute("ALTER TABLE visdup_runs DROP COLUMN crawl")
        conn.execute("UPDATE visdup_clusters SET size = 779")
        conn.execute("CREATE TABLE visdup_fingerprints (channel TEXT, key INTEGER, fp INTEGER)")
        conn.execute("UPDATE visdup_meta SET value = '1' WHERE key = 'schema_version'")
    store = Store.from_url(url)
    with store.engine.connect() as conn:
        assert schema.stored_version(conn) == schema.SCHEMA_VERSION
        names = set(inspect(conn).get_table_names())
        columns = {c["name"] for c in inspect(conn).get_columns("visdup_runs")}
    assert "visdup_fingerprints" not in names and "crawl" in columns
    assert [(c.id, c.size) for c in store.cluster_rows()] == [(7, 3)]
    # version 1 kept URLs as fetched: they are compared in canonical form
    assert store.stored_urls() == {"http://x/a", "http://x/b", "http://x/c?a=1&b=2"}
    run = store.begin_run("new")
    with store.engine.begin() as conn:
        store.insert_page(conn, _record("http://x/d?z=1&y=2", []), run)
    assert "http://x/d?y=2&z=1" in store.stored_urls()
    store.close()


def _to_version_2(path: Path) -> None:
    """A store as version 2 left it: one table of version 3 missing (3 added tables only)."""
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE visdup_comparisons")
        conn.execute("UPDATE visdup_meta SET value = '2' WHERE key = 'schema_version'")


def test_a_reading_open_creates_nothing_and_migrates_nothing(tmp_path):
    """create=False, migrate=False (report, drift, cluster, extract): a missing file, another
    application's database and an older store are refused, and none of them is changed."""
    missing = tmp_path / "mistyped.sqlite3"
    with pytest.raises(StoreError, match="no store at"):
        Store.from_url(f"sqlite:///{missing}", create=False, migrate=False)
    assert not missing.exists() and list(tmp_path.iterdir()) == []

    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.close()
    before = other.read_bytes()
    with pytest.raises(StoreError, match="holds no visdup store") as info:
        Store.from_url(f"sqlite:///{other}", create=False, migrate=False)
    assert isinstance(info.value, InputError) and "\n" not in str(info.value)
    assert other.read_bytes() == before, "not one byte written, the journal mode included"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite3"]

    url = _sqlite(tmp_path, "old.sqlite3")
    Store.from_url(url).close()
    _to_version_2(tmp_path / "old.sqlite3")
    with pytest.raises(StoreError, match="schema version 2, older") as info:
        Store.from_url(url, create=False, migrate=False)
    assert "visdup migrate" in str(info.value)
    with sqlite3.connect(tmp_path / "old.sqlite3") as conn:
        assert conn.execute("SELECT value FROM visdup_meta").fetchone() == ("2",)
        assert not conn.execute(
            "SELECT name FROM sqlite_master WHERE name = 'visdup_comparisons'"
        ).fetchall()
    conn.close()
    upgraded = Store.from_url(url, create=False, migrate=True)  # visdup migrate
    assert upgraded.schema_found == 2
    upgraded.close()
    current = Store.from_url(url, create=False, migrate=False)
    assert current.schema_found == schema.SCHEMA_VERSION
    current.close()


def test_a_version_3_store_is_read_as_it_is(tmp_path):
    """Version 4 only lets a body be a Zstandard frame: a store version 3 left (its bodies
    zlib's) is read without `visdup migrate` and stays at version 3; a writing open upgrades
    it before a body of the new format goes in; a store newer than this visdup is refused."""
    import zlib

    path = tmp_path / "v3.sqlite3"
    url = _sqlite(tmp_path, "v3.sqlite3")
    store = Store.from_url(url, writer=True)
    run = store.begin_run("site", crawl="x")
    record = _record("http://x/a", [])
    record.body = zlib.compress(b"<p>stored by version 3</p>", 1)
    with store.engine.begin() as conn:
        store.insert_page(conn, record, run)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE visdup_meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()

    reading = Store.from_url(url, create=False, migrate=False)
    assert reading.schema_found == 3
    assert [body for _id, _url, body, _enc in reading.page_bodies()] == [
        b"<p>stored by version 3</p>"
    ]
    reading.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM visdup_meta").fetchone() == ("3",)
    conn.close()

    Store.from_url(url).close()  # a crawl's open
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM visdup_meta").fetchone() == (
            str(schema.SCHEMA_VERSION),
        )
        conn.execute("UPDATE visdup_meta SET value = '5' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(StoreError, match="newer than this visdup reads"):
        Store.from_url(url, create=False, migrate=False)


def test_a_reading_open_leaves_an_empty_postgres_database_empty(pg_url):
    with pytest.raises(StoreError, match="holds no visdup store"):
        Store.from_url(pg_url, create=False, migrate=False)
    engine = create_engine(pg_url)
    with engine.connect() as conn:
        assert inspect(conn).get_table_names() == []
    engine.dispose()


def test_cluster_size_counts_the_pages_that_carry_it(store_url):
    """D11: every stored page counts once, whatever the clusterer's state says."""
    store = Store.from_url(store_url)
    run = store.begin_run("test")
    with store.engine.begin() as conn:
        store.put_cluster(conn, 1, version=1, representative="http://x/0", state={"any": 1})
    for i in range(5):
        record = _record(f"http://x/{i}", [])
        record.cluster_id = 1
        with store.engine.begin() as conn:
            store.insert_page(conn, record, run)
            store.put_cluster(conn, 1, version=2 + i)  # later assignments change no state
    with store.engine.begin() as conn:  # a URL stored already is not counted again
        record = _record("http://x/0", [])
        record.cluster_id = 1
        assert store.insert_page(conn, record, run) is None
    assert [(c.id, c.size) for c in store.cluster_rows()] == [(1, 5)]
    store.close()


@pytest.mark.postgres
def test_processes_creating_the_schema_at_once_do_not_collide(pg_url):
    """D10: four openers on an empty PostgreSQL database, released together."""
    barrier = threading.Barrier(4)
    failures: list[BaseException] = []

    def open_store(page_id: int) -> None:
        try:
            barrier.wait()
            store = Store.from_url(pg_url)
            index = band_index(store, "structure", 6)
            assert index is not None
            index.add(page_id, 42)  # one page each (thread idents modulo 1000 could collide)
            store.close()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=open_store, args=(i + 1,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    engine = create_engine(pg_url)
    with engine.connect() as conn:
        assert schema.stored_version(conn) == schema.SCHEMA_VERSION
        assert conn.execute(text("SELECT count(*) FROM visdup_fingerprints")).scalar() == 4
    engine.dispose()


def test_sqlite_stores_keep_no_band_rows(tmp_path):
    store = Store.from_url(_sqlite(tmp_path))
    assert band_index(store, "structure", 6) is None
    store.close()


# -- kill -9 --------------------------------------------------------------------------------

PAGES = 150


def _chain_site(root: Path) -> Path:
    """Pages reachable only through each other, each with a leaf that only it links to."""
    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(5)])}
    for i in range(PAGES):
        nxt = [f"/p{(i + step) % PAGES}.html" for step in (1, 7)]
        pages[f"p{i}.html"] = article(
            f"Page {i}", [f"text {i} " * (i % 7 + 1)], [*nxt, f"/leaf{i}.html#part"]
        )
        pages[f"leaf{i}.html"] = article(f"Leaf {i}", [f"leaf {i}"], [])
    return write_site(root, pages)


def _count_pages(db_path: Path) -> int:
    try:
        with sqlite3.connect(db_path, timeout=1) as conn:
            return conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
    except sqlite3.Error:
        return 0


def _crawl_command(url: str, db_path: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "visdup",
        "crawl",
        url,
        "--db",
        f"sqlite:///{db_path}",
        "-s",
        "LOG_LEVEL=WARNING",
        "-s",
        "CONCURRENT_REQUESTS=8",
    ]


def test_killed_sqlite_crawls_lose_nothing(tmp_path):
    """kill -9 at random points while pages are stored, six times or until the crawls have
    stored every page, then a completion run: every page once, every page with its links,
    none missing (the frontier survived every kill).

    A crawl stores pages faster than the test looks at its count, and may overshoot its
    kill point by dozens of pages: only the kills that left pages to fetch are counted."""
    rnd = random.Random()
    root = _chain_site(tmp_path / "site")
    db_path = tmp_path / "visdup.sqlite3"
    total = 1 + 2 * PAGES
    kills = attempts = 0
    log = tmp_path / "crawl.log"
    with serve(root) as server:
        command = _crawl_command(server.url_for("/index.html"), db_path)
        while kills < 6 and attempts < 12 and _count_pages(db_path) < total:
            attempts += 1
            target = _count_pages(db_path) + rnd.randint(5, 40)
            with open(log, "w") as err:
                proc = subprocess.Popen(
                    command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err
                )
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                if _count_pages(db_path) >= target:
                    break
                time.sleep(rnd.uniform(0.01, 0.2))
            killed = proc.poll() is None
            if killed:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += killed and _count_pages(db_path) < total  # killed with pages to fetch
            with sqlite3.connect(db_path) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert kills >= 3, "the crawls ended before they were killed: " + log.read_text()[-3000:]
        done = subprocess.run(command, cwd=tmp_path, timeout=300, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
    with sqlite3.connect(db_path) as conn:
        stored, distinct = conn.execute(
            "SELECT count(*), count(DISTINCT url) FROM visdup_pages"
        ).fetchone()
        rows = conn.execute("SELECT id, url FROM visdup_pages").fetchall()
        urls = {url.replace(server.url, ""): page_id for page_id, url in rows}
        found = dict(conn.execute("SELECT url, found_on FROM visdup_links"))
    assert stored == distinct == total, (stored, distinct, total)
    for i in range(PAGES):
        leaf = server.url_for(f"/leaf{i}.html")
        assert found.get(leaf) == urls[f"/p{i}.html"], f"page p{i} was stored without its links"
