"""Resume without waste: a stopped crawl continues where it stopped and fetches nothing twice;
crawls of different sites in one store keep apart; a project's own spider skips stored pages."""

from __future__ import annotations

import sqlite3
from urllib.parse import urlsplit

import pytest
import scrapy
from scrapy.http import HtmlResponse
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.crawling import article, crawl, crawl_settings, listing, write_site
from visdup.demo.server import serve
from visdup.errors import StoreError
from visdup.items import Page
from visdup.storage.store import Store
from visdup.storage.urls import canonical_url

ARTICLES = 24
PROSE = [
    "A resumed crawl must continue exactly where the stopped one left off, and no further.",
    "Every page it stores was fetched once, and a page stored earlier is never fetched again.",
    "Links are written in one canonical form, so a fragment or a reordered query is one page.",
]


def _site(root, label: str = "Home"):
    """A home page, a chain of articles; links carry fragments and reordered queries."""
    pages = {"index.html": listing(label, [(f"/a{i}.html#top", f"a{i}") for i in range(4)])}
    for i in range(ARTICLES):
        nxt = [
            f"/a{(i + 1) % ARTICLES}.html#comments",
            f"/a{(i + 5) % ARTICLES}.html?b=2&a=1",
            f"/a{(i + 5) % ARTICLES}.html?a=1&b=2#x",
        ]
        pages[f"a{i}.html"] = article(f"{label} article {i}", [*PROSE, f"Article {i}."], nxt)
    return write_site(root, pages)


def _fetched(server) -> list[str]:
    """Canonical URLs of the pages the server was asked for (robots.txt aside)."""
    return [
        canonical_url(server.url + target)
        for target in server.requests
        if not target.startswith("/robots.txt")
    ]


def _urls(db: str) -> list[str]:
    store = Store.from_url(db)
    try:
        return [r.url for r in store.rows("url")]
    finally:
        store.close()


@deferred_f_from_coro_f
async def test_stopped_crawl_resumes_without_fetching_a_stored_page(tmp_path):
    root = _site(tmp_path / "site")
    db = f"sqlite:///{tmp_path / 'visdup.sqlite3'}"
    with serve(root) as server:
        await crawl(db, server.url_for("/index.html"), max_pages=8)
        first = _urls(db)
        first_fetched = _fetched(server)
        assert 8 <= len(first) < 1 + ARTICLES, "the first run stopped early"
        del server._server.log[:]
        crawler = await crawl(db, server.url_for("/index.html"))
        again = _fetched(server)
    stored = _urls(db)
    assert sorted(set(stored)) == sorted(stored), "no page stored twice"
    assert len(stored) == 1 + 2 * ARTICLES  # every article, and its ?a=1&b=2 twin
    assert not set(again) & set(first), "the second run fetched a page the first one stored"
    assert len(again) == len(set(again)), "nothing fetched twice in one run"
    assert set(stored) == set(first) | set(again)
    assert all("#" not in url for url in stored)
    assert len(first_fetched) >= len(first)
    assert crawler.stats.get_value("visdup/resumed_links", 0) >= 1


@deferred_f_from_coro_f
async def test_a_start_url_left_in_the_frontier_is_asked_for_once(tmp_path):
    """Two start URLs that link to each other, the first run stopped after one page: the
    second run asks for the other page once, though it is both a start URL and a link the
    stored page left unfetched (Scrapy's duplicate filter has nothing to drop)."""
    pages = {
        "one.html": article("One", PROSE, ["/two.html"]),
        "two.html": article("Two", PROSE, ["/one.html"]),
    }
    root = write_site(tmp_path / "site", pages)
    db = f"sqlite:///{tmp_path / 'visdup.sqlite3'}"
    with serve(root) as server:
        urls = f"{server.url_for('/one.html')} {server.url_for('/two.html')}"
        await crawl(db, "", urls=urls, max_pages=1)
        first = _urls(db)
        assert len(first) == 1
        del server._server.log[:]
        crawler = await crawl(db, "", urls=urls)
        again = _fetched(server)
    assert len(again) == 1 and again[0] not in first
    assert sorted(_urls(db)) == sorted([*first, *again])
    assert crawler.stats.get_value("visdup/resumed_links", 0) == 1
    assert crawler.stats.get_value("dupefilter/filtered", 0) == 0


@deferred_f_from_coro_f
async def test_a_finished_crawl_run_again_fetches_nothing(tmp_path):
    root = _site(tmp_path / "site")
    db = f"sqlite:///{tmp_path / 'visdup.sqlite3'}"
    with serve(root) as server:
        await crawl(db, server.url_for("/index.html"))
        before = _urls(db)
        del server._server.log[:]
        await crawl(db, server.url_for("/index.html"))
        assert _fetched(server) == []
    assert _urls(db) == before


@pytest.mark.parametrize("any_domain", [False, True])
@deferred_f_from_coro_f
async def test_two_sites_in_one_store_stay_apart(tmp_path, any_domain):
    """Two sites on two ports of one host: resuming one never fetches the other's links, even
    when the crawl may leave its site (the frontier belongs to the crawl, not to the store)."""
    db = f"sqlite:///{tmp_path / 'visdup.sqlite3'}"
    with serve(_site(tmp_path / "one", "One")) as one, serve(_site(tmp_path / "two", "Two")) as two:
        await crawl(db, one.url_for("/index.html"), max_pages=6)
        await crawl(db, two.url_for("/index.html"), max_pages=6)
        assert _fetched(one) and _fetched(two)
        del one._server.log[:]
        del two._server.log[:]
        await crawl(db, one.url_for("/index.html"), any_domain=any_domain)
        assert _fetched(two) == [], "resuming site one fetched site two"
        del one._server.log[:]
        await crawl(db, two.url_for("/index.html"), any_domain=any_domain)
        assert _fetched(one) == [], "resuming site two fetched site one"
    store = Store.from_url(db)
    crawls = {run.id: run.crawl for run in store.run_rows()}
    for row in store.rows("url", "run_id"):
        origin = urlsplit(row.url).port
        assert crawls[row.run_id] == f"http://127.0.0.1:{origin}", (row.url, crawls[row.run_id])
    urls = [r.url for r in store.rows("url")]
    assert len(urls) == 2 * (1 + 2 * ARTICLES) == len(set(urls))
    store.close()


class ProjectSpider(scrapy.Spider):
    """A project's own spider: its start URLs, its own link following, visdup's page item."""

    name = "project"

    def parse(self, response, **kwargs):
        if not isinstance(response, HtmlResponse):
            return
        links = [response.urljoin(href) for href in response.css("a::attr(href)").getall()]
        yield Page.from_response(response, links=links)
        for link in links:
            yield response.follow(link, callback=self.parse)


@deferred_f_from_coro_f
async def test_project_spider_skips_stored_pages_before_download(tmp_path):
    root = _site(tmp_path / "site")
    db = f"sqlite:///{tmp_path / 'visdup.sqlite3'}"
    with serve(root) as server:
        start = server.url_for("/index.html")
        crawler = get_crawler(ProjectSpider, crawl_settings(db))
        await crawler.crawl_async(start_urls=[start])
        before = set(_urls(db))
        assert len(before) == 1 + 2 * ARTICLES
        # one new page, linked from the start page only
        (root / "new.html").write_text(article("New", PROSE, []), encoding="utf-8")
        index = (root / "index.html").read_text(encoding="utf-8")
        (root / "index.html").write_text(
            index.replace("</table>", "<tr><td><a href='/new.html'>new</a></td></tr></table>"),
            encoding="utf-8",
        )
        del server._server.log[:]
        crawler = get_crawler(ProjectSpider, crawl_settings(db))
        await crawler.crawl_async(start_urls=[start])
        fetched = _fetched(server)
    # the start page is read again (dont_filter: the spider said so), then only the new page
    assert sorted(fetched) == sorted([canonical_url(start), server.url_for("/new.html")])
    assert set(_urls(db)) == before | {server.url_for("/new.html")}
    assert crawler.stats.get_value("visdup/skipped/stored") >= 4


@deferred_f_from_coro_f
async def test_resume_off_fetches_again(tmp_path):
    root = _site(tmp_path / "site")
    db = f"sqlite:///{tmp_path / 'visdup.sqlite3'}"
    with serve(root) as server:
        await crawl(db, server.url_for("/index.html"))
        del server._server.log[:]
        crawler = await crawl(db, server.url_for("/index.html"), settings={"VISDUP_RESUME": False})
        assert len(_fetched(server)) >= 1 + ARTICLES
    assert crawler.stats.get_value("visdup/skipped/stored") is None


@deferred_f_from_coro_f
async def test_a_second_live_crawl_on_one_sqlite_file_is_refused(tmp_path):
    root = _site(tmp_path / "site")
    db = f"sqlite:///{tmp_path / 'visdup.sqlite3'}"
    holder = Store.from_url(db, writer=True)  # a crawl writing to the file right now
    try:
        with serve(root) as server:
            with pytest.raises(StoreError, match="PostgreSQL"):
                await crawl(db, server.url_for("/index.html"))
            assert server.requests == [], "a refused crawl fetched pages"
    finally:
        holder.close()


@deferred_f_from_coro_f
async def test_cluster_sizes_equal_the_pages_carrying_them(tmp_path):
    """D11, through real crawls: after a stopped run and its resumption, every cluster's size
    is the number of stored pages that carry it; and SQLite wrote no band rows."""
    root = _site(tmp_path / "site")
    path = tmp_path / "visdup.sqlite3"
    db = f"sqlite:///{path}"
    with serve(root) as server:
        await crawl(db, server.url_for("/index.html"), max_pages=10)
        await crawl(db, server.url_for("/index.html"))
    with sqlite3.connect(path) as conn:
        sizes = dict(conn.execute("SELECT id, size FROM visdup_clusters"))
        counts = dict(
            conn.execute(
                "SELECT cluster_id, count(*) FROM visdup_pages "
                "WHERE cluster_id IS NOT NULL GROUP BY cluster_id"
            )
        )
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert counts, "the crawl clustered its pages"
    assert {cid: size for cid, size in sizes.items() if size} == counts
    assert "visdup_fingerprints" not in tables


def _labels(db: str) -> dict[str, tuple]:
    store = Store.from_url(db)
    try:
        rows = store.rows(
            "id", "url", "verdict", "kind", "duplicate_of", "similarity", "content_similarity"
        )
    finally:
        store.close()
    url_of = {r.id: r.url for r in rows}
    return {
        r.url: (
            r.verdict,
            r.kind,
            url_of.get(r.duplicate_of),
            r.similarity,
            r.content_similarity,
        )
        for r in rows
    }


@deferred_f_from_coro_f
async def test_a_resumed_crawl_ends_with_the_labels_of_one_uninterrupted_crawl(tmp_path):
    """Stopped twice and resumed, the crawl stores its pages in another order than a crawl
    that runs through; the final labels are the same."""
    root = _site(tmp_path / "site")
    whole = f"sqlite:///{tmp_path / 'whole.sqlite3'}"
    parts = f"sqlite:///{tmp_path / 'parts.sqlite3'}"
    with serve(root) as server:
        await crawl(whole, server.url_for("/index.html"))
        await crawl(parts, server.url_for("/index.html"), max_pages=6)
        await crawl(parts, server.url_for("/index.html"), max_pages=9)
        await crawl(parts, server.url_for("/index.html"))
    expected = _labels(whole)
    assert len(expected) == 1 + 2 * ARTICLES
    # the articles share their long sentences: one group, its original the first in URL
    # order of the shortest URLs, every other article and twin measured against it
    assert [u for u, v in expected.items() if v[0] == "original"] == [server.url_for("/a0.html")]
    assert _labels(parts) == expected
