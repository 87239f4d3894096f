"""Resume without waste: a crawl never downloads a page its store already holds.

:class:`SkipStoredMiddleware` is a downloader middleware, installed by the add-on, that drops
requests for URLs the store holds (compared in canonical form, ``visdup.storage.urls``) before
they are downloaded, counting them in ``visdup/skipped/stored``. It serves any spider: a
project's own spider crawling again into the same store re-fetched and re-analysed every page
to store one new page. Requests marked ``dont_filter`` (Scrapy's ``start_urls`` requests) pass:
the spider said to fetch them whatever any filter knows, and a project spider re-reads its
start pages to find what is new.

The ``site`` spider also seeds each run with the links earlier runs of the same crawl stored
and never fetched (``Store.unfetched_links(crawl_key(...))``), so a stopped or killed crawl
continues where it stopped.

With snapshots on (``VISDUP_DRIFT_ENABLED``), "stored" means stored in the crawl's snapshot:
a new snapshot fetches every page again, a continued one skips those it holds
(:mod:`visdup.drift.snapshot`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.asyncio import run_in_thread

from visdup import config
from visdup.storage.urls import canonical_url

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from visdup.storage.store import Store

logger = logging.getLogger(__name__)

STAT = "visdup/skipped/stored"


class SkipStoredMiddleware:
    """Downloader middleware: requests for stored URLs are ignored before download."""

    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        if not config.read(settings, "VISDUP_ENABLED"):
            raise NotConfigured("VISDUP_ENABLED is False")
        if not config.read(settings, "VISDUP_RESUME"):
            raise NotConfigured("VISDUP_RESUME is False: stored pages are fetched again")
        self.crawler = crawler
        self.stored: frozenset[str] | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def _store(self) -> Store | None:
        from visdup.context import CrawlContext

        return CrawlContext.of(self.crawler).store

    def _load(self) -> frozenset[str]:
        from visdup.context import CrawlContext

        ctx = CrawlContext.of(self.crawler)
        if ctx.store is None:
            return frozenset()
        ctx.open()  # the crawl's snapshot: a new one fetches stored pages again (visdup.drift)
        if ctx.snapshot is not None:
            return frozenset(ctx.snapshot.urls())
        return frozenset(ctx.store.stored_urls())

    async def spider_opened(self, spider: Any) -> None:
        await self._ensure_loaded()
        if self.stored:
            logger.info(
                "visdup: %d pages already stored will not be downloaded again", len(self.stored)
            )

    async def _ensure_loaded(self) -> frozenset[str]:
        if self.stored is None:
            # reading every stored URL is blocking database work: not on the event loop
            self.stored = await run_in_thread(self._load)
        return self.stored

    async def process_request(self, request: Request) -> None:
        if request.dont_filter:
            return
        stored = await self._ensure_loaded()
        if stored and canonical_url(request.url) in stored:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value(STAT)
            raise IgnoreRequest(f"visdup: {request.url} is already stored")
