"""Pages labelled in a process of their own (visdup.dedup.service): the same labels, and a
label process that dies costs no page."""

from __future__ import annotations

import asyncio
import os
import signal

from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.conftest import FIXTURES
from tests.crawling import crawl, crawl_settings
from visdup.context import CrawlContext
from visdup.demo.server import serve
from visdup.spiders.site import SiteSpider
from visdup.storage.store import Store

SITE = FIXTURES / "sites" / "templates"


def _stored(db: str, base: str) -> dict[str, tuple[object, ...]]:
    store = Store.from_url(db)
    try:
        # verdicts name whichever page of a group was stored first: crawl order, not compared
        rows = store.rows("url", "simhash", "content_simhash", "term", "body", "problem")
        return {r.url.replace(base, ""): tuple(r)[1:] for r in rows}
    finally:
        store.close()


@deferred_f_from_coro_f
async def test_labels_from_the_label_process_match_labels_made_here(tmp_path):
    got = []
    for label_process in (False, True):
        db = f"sqlite:///{tmp_path / f'l{label_process}.sqlite3'}"
        with serve(SITE) as server:
            crawler = await crawl(
                db,
                server.url_for("/"),
                settings={"VISDUP_ANALYSIS_PROCESSES": 1, "VISDUP_LABEL_PROCESS": label_process},
            )
            base = server.url
        stats = crawler.stats
        assert stats.get_value("visdup/errors") == 0
        assert stats.get_value("visdup/label_process", 0) == int(label_process)
        # counts made in the label process reach the crawl's stats
        assert stats.get_value("visdup/pages") == stats.get_value("item_scraped_count") >= 14
        assert stats.get_value("visdup/candidates", 0) > 0
        assert stats.get_value("visdup/drift/pages", 0) == stats.get_value("visdup/pages")
        got.append(_stored(db, base))
        # bodies are kept (VISDUP_STORE_BODY), packed by the worker that analysed the page
        assert sum(body is not None for _s, _c, _t, body, _p in got[-1].values()) >= 14
        store = Store.from_url(db)
        try:
            runs = store.run_rows()
            assert [r.reason for r in runs] == ["finished"]
            templated = [c for c in store.cluster_rows() if c.template]
            assert templated, "no template was built and stored"
        finally:
            store.close()
    assert got[0] == got[1]


class KillLabelProcess:
    """An item pipeline ahead of visdup's: at the third page it kills the label process
    (the OOM killer's way), counted in ``test/killed``."""

    def __init__(self, crawler):
        self.crawler = crawler
        self.seen = 0

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    async def process_item(self, item):
        self.seen += 1
        if self.seen == 3:
            service = CrawlContext.of(self.crawler).service
            assert service is not None, "no label process"
            os.kill(service.process.pid, signal.SIGKILL)
            self.crawler.stats.inc_value("test/killed")
            await asyncio.sleep(0.2)  # dead before this page is labelled
        return item


@deferred_f_from_coro_f
async def test_a_killed_label_process_costs_no_page(tmp_path):
    db = f"sqlite:///{tmp_path / 'killed.sqlite3'}"
    with serve(SITE) as server:
        settings = crawl_settings(
            db,
            VISDUP_ANALYSIS_PROCESSES=1,
            ITEM_PIPELINES={"tests.test_label_process.KillLabelProcess": 10},
        )
        crawler = get_crawler(SiteSpider, settings)
        await crawler.crawl_async(url=server.url_for("/"))
        base = server.url
    stats = crawler.stats
    assert stats.get_value("test/killed") == 1
    assert stats.get_value("visdup/label_process/restarts") == 1
    assert stats.get_value("visdup/errors", 0) == 0
    pages = _stored(db, base)
    assert len(pages) >= 14 and len(pages) == stats.get_value("item_scraped_count")
    assert all(problem is None for *_rest, problem in pages.values())
    context = CrawlContext.of(crawler)
    assert context.service is not None and not context.service.process.is_alive()
