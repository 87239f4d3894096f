"""URLs that give no HTML page are stored and reported: redirects with their target, 4xx and
5xx answers after the retries, other content, URLs robots.txt forbids and requests that get no
answer, each with the page that linked to it. Real crawls against local servers."""

from __future__ import annotations

import socket
import sqlite3

from scrapy.utils.defer import deferred_f_from_coro_f

from tests.crawling import crawl, write_site
from visdup.cli.app import main
from visdup.demo import SITE_ROOT
from visdup.demo.server import serve
from visdup.report.responses import NOT_RECORDED, load_responses
from visdup.storage.store import Store


def _rows(path) -> dict[str, tuple]:
    with sqlite3.connect(path) as conn:
        found = conn.execute(
            "SELECT url, kind, status, target, content_type, referer FROM visdup_responses"
        ).fetchall()
    conn.close()
    return {r[0]: r[1:] for r in found}


@deferred_f_from_coro_f
async def test_the_demo_crawl_stores_each_answer_that_is_no_page(tmp_path, capsys):
    db = tmp_path / "demo.sqlite3"
    url = f"sqlite:///{db}"
    with serve(SITE_ROOT) as server:
        crawler = await crawl(url, server.url_for("/"))
        at = server.url_for
        about = at("/about.html")
        assert _rows(db) == {
            at("/about/route-map-2019.html"): ("client_error", 404, None, "text/html", about),
            at("/guides/commuter-fit.html"): (
                "redirect",
                301,
                at("/articles/choosing-a-commuter-bike.html"),
                None,
                about,
            ),
            at("/blog/feed.xml"): ("not_html", 200, None, "application/xml", about),
            at("/private/staff-rota.html"): ("robots", None, None, None, about),
        }
    stats = crawler.stats.get_stats()
    assert stats["visdup/responses/client_error"] == 1
    assert stats["visdup/responses/robots"] == 1
    assert main(["report", "--db", url]) == 0
    out = capsys.readouterr().out
    assert (
        "responses: broken (4xx) 1, redirect (3xx) 1, not an HTML page 1, "
        "blocked by robots.txt 1" in out
    )
    html = tmp_path / "report.html"
    assert main(["report", "--db", url, "--html", str(html)]) == 0
    text = html.read_text()
    assert 'data-section="responses"' in text
    assert text.count('<tr data-kind="') == 4
    assert "/about/route-map-2019.html" in text and "URL the site links to answers 4xx" in text


@deferred_f_from_coro_f
async def test_server_errors_count_after_the_retries_and_failures_name_their_reason(tmp_path):
    site = write_site(
        tmp_path / "site",
        {
            "index.html": "<html><head><title>Start</title></head><body><h1>Start</h1>"
            '<p><a href="/hostile/500">a failing page</a> <a href="/hostile/pdf">a PDF</a> '
            '<a href="/moved.html">a moved page</a></p></body></html>',
            "new.html": "<html><head><title>New</title></head><body><p>Here now.</p></body></html>",
            "_redirects": "/moved.html 302 /new.html\n",
        },
    )
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/"
    db = tmp_path / "v.sqlite3"
    with serve(site, hostile=True) as server:
        settings = {"RETRY_ENABLED": True, "RETRY_TIMES": 1, "RETRY_HTTP_CODES": [500]}
        await crawl(
            f"sqlite:///{db}", server.url_for("/"), settings, urls=[server.url_for("/"), dead]
        )
        served = list(server.requests)
        at = server.url_for
        rows = _rows(db)
    assert served.count("/hostile/500") == 2, served  # the first try and one retry
    start = at("/")
    assert rows[at("/hostile/500")] == ("server_error", 500, None, "text/html", start)
    assert rows[at("/hostile/pdf")] == ("not_html", 200, None, "application/pdf", start)
    assert rows[at("/moved.html")] == ("redirect", 302, at("/new.html"), None, start)
    assert rows[dead][:2] == ("failed", None)
    assert rows[dead][4] is None  # a start URL: no page linked to it
    with sqlite3.connect(db) as conn:
        (reason,) = conn.execute(
            "SELECT reason FROM visdup_responses WHERE url = ?", (dead,)
        ).fetchone()
        stored = dict(conn.execute("SELECT url, final_url FROM visdup_pages"))
    conn.close()
    assert "refused" in reason.lower(), reason
    # the page is stored under its final URL (whichever way the crawl came to it first); the
    # URL linked to is a redirect
    assert stored[at("/new.html")] == at("/new.html") and at("/moved.html") not in stored
    assert len(rows) == 4, rows


def test_a_store_without_responses_says_so_and_a_crawl_adds_the_table(tmp_path, capsys):
    db = tmp_path / "old.sqlite3"
    Store.from_url(f"sqlite:///{db}").close()
    with sqlite3.connect(db) as conn:  # as a visdup before responses left it
        conn.execute("DROP TABLE visdup_responses")
    conn.close()
    assert main(["report", "--db", f"sqlite:///{db}"]) == 0
    assert f"responses: {NOT_RECORDED}" in capsys.readouterr().out
    html = tmp_path / "r.html"
    assert main(["report", "--db", f"sqlite:///{db}", "--html", str(html)]) == 0
    assert NOT_RECORDED in html.read_text()
    with sqlite3.connect(db) as conn:  # reading added nothing
        assert not conn.execute(
            "SELECT name FROM sqlite_master WHERE name = 'visdup_responses'"
        ).fetchall()
    conn.close()
    store = Store.from_url(f"sqlite:///{db}", writer=True)
    store.responses_ready()
    assert store.put_responses([{"url": "http://x.test/a", "kind": "client_error"}]) == 1
    assert load_responses(store, set()).recorded
    store.close()


def _upsert_and_read(url: str) -> None:
    store = Store.from_url(url)
    try:
        run = store.begin_run("t")
        first = {"url": "http://x.test/p", "kind": "server_error", "status": 503, "run_id": run}
        store.put_responses([first, {"url": "http://x.test/q", "kind": "client_error"}])
        # a later answer replaces the earlier one; one batch may name a URL twice
        later = {"url": "http://x.test/p", "kind": "client_error", "status": 410, "run_id": run}
        store.put_responses([later, later])
        rows = {r.url: (r.kind, r.status) for r in store.response_rows()}
        assert rows == {
            "http://x.test/p": ("client_error", 410),
            "http://x.test/q": ("client_error", None),
        }
        # a URL stored since as a page is no longer listed
        shown = load_responses(store, {"http://x.test/q"})
        assert [r.url for r in shown.rows] == ["http://x.test/p"]
        assert shown.counts() == {"client_error": 1}
    finally:
        store.close()


def test_one_row_per_url_the_latest_answer_sqlite(tmp_path):
    _upsert_and_read(f"sqlite:///{tmp_path / 'v.sqlite3'}")


def test_one_row_per_url_the_latest_answer_postgres(pg_url):
    _upsert_and_read(pg_url)
