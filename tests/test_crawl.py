"""End-to-end crawls in process against a local HTTP server, into real databases."""

from __future__ import annotations

import json
import sqlite3

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import article, crawl, listing, write_site
from visdup.demo.server import serve
from visdup.report.summary import build_report
from visdup.storage.store import Store

PROSE = [
    "Cycling to work in winter takes some preparation, but it is far from impossible.",
    "Good lights matter more than anything else when the days are short and the roads wet.",
    "Mudguards keep you and the riders behind you dry, and they cost very little to fit.",
    "Check your tyre pressure weekly, since cold air lowers it faster than you would expect.",
]


def _site(root):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    pages = {}
    arts = [f"/a/{w}.html" for w in words]
    for i, w in enumerate(words):
        paras = [f"{w} paragraph {j} " + " ".join(words[(i + j) % 10 :]) for j in range(3 + i % 3)]
        pages[f"a/{w}.html"] = article(
            w.title(), paras, arts[:4], nav=["/index.html", "/list.html"]
        )
    # byte-identical copy under another path, and tracking parameters in a link
    pages["copy/alpha.html"] = pages["a/alpha.html"]
    pages["index.html"] = listing(
        "Home",
        [(u, u) for u in arts]
        + [
            ("/copy/alpha.html", "copy"),
            ("/a/beta.html?utm_source=x", "tracked"),
            ("/list.html", "list"),
        ],
    )
    pages["list.html"] = listing("List", [(u, u) for u in arts[:6]])
    pages["robots.txt"] = "User-agent: *\nDisallow: /private/\n"
    pages["private/secret.html"] = article("Secret", ["hidden"], [])
    return write_site(root, pages)


@pytest.fixture
def site(tmp_path):
    root = _site(tmp_path / "site")
    with serve(root, hostile=True) as server:
        yield server


def _db(tmp_path):
    return f"sqlite:///{tmp_path / 'visdup.sqlite3'}"


@deferred_f_from_coro_f
async def test_crawl_labels_every_page_into_sqlite(site, tmp_path):
    db = _db(tmp_path)
    crawler = await crawl(db, site.url_for("/index.html"))
    stats = crawler.stats.get_stats()
    store = Store.from_url(db)
    rows = {r.url: r for r in store.rows()}
    urls = {u.replace(site.url, "") for u in rows}
    assert "/a/alpha.html" in urls and "/copy/alpha.html" in urls
    assert not any("/private/" in u for u in urls), "robots.txt is obeyed"
    assert stats["visdup/pages"] == len(rows) >= 13
    copy = rows[site.url_for("/copy/alpha.html")]
    alpha = rows[site.url_for("/a/alpha.html")]
    first, second = sorted([copy, alpha], key=lambda r: r.id)
    # an exact copy names its first stored twin
    assert second.kind == "exact" and second.duplicate_of == first.id
    tracked = rows[site.url_for("/a/beta.html?utm_source=x")]
    beta = rows[site.url_for("/a/beta.html")]
    first, second = sorted([tracked, beta], key=lambda r: r.id)
    assert second.kind == "exact" and second.duplicate_of == first.id
    # articles share one template: structural near-duplicates of the first stored article
    structural = [r for r in rows.values() if r.kind == "structural"]
    assert structural, "same-template articles are structurally similar"
    assert all(r.similarity >= 0.95 for r in structural)
    # a near-duplicate names its group's original, which is nobody's duplicate
    by_id = {r.id: r for r in rows.values()}
    assert all(by_id[r.duplicate_of].duplicate_of is None for r in structural)
    assert stats["visdup/ted_calls"] >= 1 and stats["visdup/candidates"] >= 1
    report = build_report(store)
    assert report["pages"] == len(rows)
    assert any(g["members"] for g in report["groups"])
    json.dumps(report)
    assert store.run_rows()[0].finished_at is not None


@deferred_f_from_coro_f
async def test_second_crawl_finds_first_crawls_pages(site, tmp_path):
    db = _db(tmp_path)
    # depth 1 from alpha does not reach /copy/alpha.html (only the home page links to it)
    await crawl(db, site.url_for("/a/alpha.html"), settings={"DEPTH_LIMIT": 1})
    first = {r.url for r in Store.from_url(db).rows("url")}
    assert site.url_for("/copy/alpha.html") not in first
    # the second crawl starts on the byte-identical copy: it must link to the first crawl's page
    crawler = await crawl(
        db, site.url_for("/copy/alpha.html"), settings={"DEPTH_LIMIT": 1, "VISDUP_RESUME": False}
    )
    store = Store.from_url(db)
    rows = {r.url: r for r in store.rows()}
    copy = rows[site.url_for("/copy/alpha.html")]
    assert copy.duplicate_of == rows[site.url_for("/a/alpha.html")].id
    assert copy.kind == "exact"
    assert [r.id for r in store.run_rows()] == [1, 2] and copy.run_id == 2
    assert crawler.stats.get_value("visdup/duplicates") >= 1


@deferred_f_from_coro_f
async def test_hostile_responses_give_stats_and_the_crawl_goes_on(tmp_path):
    root = write_site(tmp_path / "site", {"ok.html": article("Fine", ["fine page text"], [])})
    with serve(root, hostile=True) as server:
        db = _db(tmp_path)
        crawler = await crawl(
            db,
            server.url_for("/hostile/index.html"),
            settings={"DOWNLOAD_MAXSIZE": 12 * 1024 * 1024},
        )
    stats = crawler.stats.get_stats()
    store = Store.from_url(db)
    rows = {r.url.replace(server.url, ""): r for r in store.rows()}
    assert rows["/hostile/empty"].problem == "empty body"
    assert rows["/hostile/binary"].problem == "binary content"
    assert rows["/hostile/deep"].truncated
    assert rows["/hostile/big"].term is not None
    wrong = rows["/hostile/wrong-charset"]
    assert wrong.encoding == "utf-8"
    assert stats.get("visdup/non_html", 0) >= 2  # the PDF and the PNG
    assert stats["visdup/errors"] >= 2
    assert store.error_rows(), "problems are recorded in the store"
    assert rows["/hostile/notext"].term is not None


@deferred_f_from_coro_f
async def test_drop_policy_drops_duplicates(site, tmp_path):
    db = _db(tmp_path)
    crawler = await crawl(
        db, site.url_for("/index.html"), settings={"VISDUP_DUPLICATE_POLICY": "drop"}
    )
    stats = crawler.stats.get_stats()
    assert stats.get("item_dropped_count", 0) == stats["visdup/duplicates"] >= 2


@deferred_f_from_coro_f
async def test_nofollow_policy_skips_links_of_duplicates(tmp_path):
    # chain: index -> a -> b; b is a near copy of a and alone links to /only-from-copy.html
    a = article("Same", PROSE, ["/b.html"])
    pages = {
        "index.html": listing("Home", [("/a.html", "a")]),
        "a.html": a,
        "b.html": a.replace("</footer>", "</footer><a href='/only-from-copy.html'>more</a>"),
        "only-from-copy.html": article("Leaf", ["leaf"], []),
    }
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        db = _db(tmp_path)
        crawler = await crawl(
            db,
            server.url_for("/index.html"),
            settings={
                "VISDUP_DUPLICATE_POLICY": "nofollow",
                "VISDUP_SIMILARITY_THRESHOLD": 0.9,
                "CONCURRENT_REQUESTS": 1,
            },
        )
    stats = crawler.stats.get_stats()
    urls = {r.url.replace(server.url, "") for r in Store.from_url(db).rows("url")}
    assert "/a.html" in urls and "/b.html" in urls
    assert "/only-from-copy.html" not in urls
    assert stats["visdup/nofollow_links"] >= 1


@deferred_f_from_coro_f
async def test_concurrent_near_duplicates_are_linked(tmp_path):
    """Twenty pages of one layout arriving at once: every later one links to the first."""
    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(20)])}
    for i in range(20):
        pages[f"p{i}.html"] = article("Same title", ["identical body text"] * 3, []).replace(
            "Footer text", f"Footer {i}"
        )
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        db = _db(tmp_path)
        await crawl(db, server.url_for("/index.html"), settings={"CONCURRENT_REQUESTS": 32})
    rows = [r for r in Store.from_url(db).rows() if "/p" in r.url]
    originals = [r for r in rows if r.duplicate_of is None]
    assert len(rows) == 20
    assert len(originals) == 1, [(r.url, r.duplicate_of) for r in rows]


@pytest.mark.postgres
@deferred_f_from_coro_f
async def test_crawl_into_postgresql(site, tmp_path, pg_url):
    crawler = await crawl(pg_url, site.url_for("/index.html"))
    store = Store.from_url(pg_url)
    rows = store.rows()
    assert len(rows) == crawler.stats.get_value("visdup/pages") >= 13
    assert any(r.kind == "exact" for r in rows)
    store.close()


def test_sqlite_file_is_intact_after_a_kill(tmp_path):
    """kill -9 in the middle of a crawl: every committed page is still there, the file is sound."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(300)])}
    for i in range(300):
        pages[f"p{i}.html"] = article(
            f"Page {i}", [f"text {i} " * (i % 7 + 1)], [f"/p{(i + 1) % 300}.html"]
        )
    root = write_site(tmp_path / "site", pages)
    db_path = tmp_path / "visdup.sqlite3"
    with serve(root) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "visdup",
                "crawl",
                server.url_for("/index.html"),
                "--db",
                f"sqlite:///{db_path}",
                "-s",
                "LOG_LEVEL=WARNING",
                "-s",
                "CONCURRENT_REQUESTS=4",
            ],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        count = 0
        while time.monotonic() < deadline:
            time.sleep(0.2)
            if db_path.exists():
                try:
                    with sqlite3.connect(db_path, timeout=1) as conn:
                        count = conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
                except sqlite3.Error:
                    count = 0
                if count >= 30:
                    break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with sqlite3.connect(db_path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            after = conn.execute("SELECT count(*) FROM visdup_pages").fetchone()[0]
        assert after >= count >= 30
        # a resumed crawl finishes the site without storing any page twice
        subprocess.run(
            [
                sys.executable,
                "-m",
                "visdup",
                "crawl",
                server.url_for("/index.html"),
                "--db",
                f"sqlite:///{db_path}",
                "-s",
                "LOG_LEVEL=WARNING",
            ],
            cwd=tmp_path,
            check=True,
            timeout=240,
            capture_output=True,
        )
    with sqlite3.connect(db_path) as conn:
        total, distinct = conn.execute(
            "SELECT count(*), count(DISTINCT url) FROM visdup_pages"
        ).fetchone()
    assert total == distinct == 301


@pytest.mark.postgres
def test_two_processes_share_one_postgresql_store(tmp_path, pg_url):
    """Two crawls at once into one database: every URL once, every copy linked to one original."""
    import subprocess
    import sys

    from visdup.storage.store import Store

    Store.from_url(pg_url).close()  # schema first, so the two processes do not race on it
    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(40)])}
    for i in range(40):
        pages[f"p{i}.html"] = article("Same story", PROSE, []).replace("Footer text", f"F{i}")
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "visdup",
                    "crawl",
                    server.url_for("/index.html"),
                    "--db",
                    pg_url,
                    "-s",
                    "LOG_LEVEL=WARNING",
                    "-s",
                    "CONCURRENT_REQUESTS=8",
                ],
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        for proc in procs:
            _out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err.decode()[-2000:]
    store = Store.from_url(pg_url)
    rows = [r for r in store.rows() if "/p" in r.url]
    assert len(rows) == 40 == len({r.url for r in rows})
    originals = [r for r in rows if r.content_duplicate_of is None]
    assert len(originals) == 1, [(r.url, r.content_duplicate_of, r.verdict) for r in rows]
    assert {r.content_duplicate_of for r in rows} - {None} == {originals[0].id}
    store.close()


@deferred_f_from_coro_f
async def test_cluster_cap_drops_pages_beyond_the_cap(tmp_path):
    pages = {"index.html": listing("Home", [(f"/p{i}.html", str(i)) for i in range(12)])}
    for i in range(12):
        pages[f"p{i}.html"] = article("Same", PROSE, []).replace("Footer text", f"F{i}")
    root = write_site(tmp_path / "site", pages)
    with serve(root) as server:
        crawler = await crawl(
            _db(tmp_path), server.url_for("/index.html"), settings={"VISDUP_CLUSTER_CAP": 5}
        )
    stats = crawler.stats.get_stats()
    # the first page is the original, four more join its group, the other seven are dropped
    assert stats["visdup/capped"] == 7
    assert stats["visdup/pages"] == 13, "capped pages are still labelled and stored"
