"""``site``: crawl one or more sites whole and hand every HTML page to visdup.

scrapy crawl site -a url=https://example.com/ [-a url2,...] [-a any_domain=1]
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from visdup.items import Page

logger = logging.getLogger(__name__)


def _split_urls(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return [u.strip() for u in value if u and u.strip()]


def _flag(value: Any) -> bool:
    return str(value).lower() in {"1", "true", "yes", "on"}


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(
        self,
        url: str | None = None,
        urls: str | None = None,
        any_domain: str | bool = False,
        max_pages: str | int | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.start_urls = _split_urls(url) + _split_urls(urls)
        if not self.start_urls:
            raise ValueError("the site spider needs at least one start URL: -a url=https://...")
        for start in self.start_urls:
            if urlsplit(start).scheme not in {"http", "https", "file"}:
                raise ValueError(f"not an http(s) URL: {start!r}")
        self.any_domain = _flag(any_domain)
        hosts = {urlsplit(u).hostname for u in self.start_urls}
        self.allowed_domains = [] if self.any_domain else sorted(h for h in hosts if h)
        self.max_pages = int(max_pages) if max_pages else 0
        #: URLs stored by earlier runs (VISDUP_RESUME): not fetched again.
        self.stored: set[str] = set()
        self.link_extractor = LinkExtractor(unique=True)

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.max_pages:
            crawler.settings.set("CLOSESPIDER_ITEMCOUNT", spider.max_pages, priority="spider")
        return spider

    async def start(self) -> AsyncIterator[Any]:
        frontier = await maybe_deferred_to_future(deferToThread(self._resume_frontier))
        for url in self.start_urls:
            if url not in self.stored:
                yield scrapy.Request(url, callback=self.parse)
        for url, depth in frontier:
            yield scrapy.Request(url, callback=self.parse, meta={"depth": depth})

    def _resume_frontier(self) -> list[tuple[str, int]]:
        """Resume what earlier runs left: skip the pages they stored, fetch the links they found.

        Writing each page with its links in one transaction makes the stored links a frontier
        that survives ``kill -9`` (Scrapy's JOBDIR does not: its request queue is buffered).
        """
        settings = self.crawler.settings
        if not settings.getbool("VISDUP_ENABLED", True) or not settings.getbool(
            "VISDUP_RESUME", True
        ):
            return []
        from visdup.context import CrawlContext

        ctx = CrawlContext.of(self.crawler)
        ctx.open()
        if ctx.store is None:
            return []
        self.stored = ctx.store.stored_urls()
        frontier = [(u, d) for u, d in ctx.store.unfetched_links() if self._in_scope(u)]
        if self.stored:
            logger.info(
                "visdup: resuming: %d pages stored by earlier runs, %d links left to fetch",
                len(self.stored),
                len(frontier),
            )
            self.crawler.stats.set_value("visdup/resumed_links", len(frontier))
        return frontier

    def _in_scope(self, url: str) -> bool:
        """Same host as a start URL or a subdomain of one (ports ignored), unless any_domain."""
        if self.any_domain:
            return True
        host = urlsplit(url).hostname or ""
        return any(host == d or host.endswith("." + d) for d in self.allowed_domains)

    def parse(self, response: Response, **kwargs: Any) -> Iterable[Any]:
        if not isinstance(response, HtmlResponse):
            kind = "text" if isinstance(response, TextResponse) else "binary"
            self.crawler.stats.inc_value("visdup/non_html")
            self.crawler.stats.inc_value(f"visdup/non_html/{kind}")
            logger.debug(
                "Skipping non-HTML response %s (%s)",
                response.url,
                response.headers.get("Content-Type"),
            )
            return
        try:
            links = [
                link.url
                for link in self.link_extractor.extract_links(response)
                if self._in_scope(link.url) and link.url not in self.stored
            ]
        except Exception as exc:
            logger.warning("Cannot extract links from %s: %s", response.url, exc)
            links = []
        yield Page.from_response(response, links=links)
        for link in links:
            yield response.follow(link, callback=self.parse)
