"""Spider middlewares: what the item pipelines learn about a page, applied to what follows it.

Scrapy schedules the requests a callback yields before any item pipeline has seen the page
item yielded beside them, and item pipelines cannot add items. Both middlewares let the page
item through, then wait (without blocking anything else: Scrapy sends the page item to the
pipelines while the callback's output waits here) until the pipelines have given what they
learned about the page:

* :class:`NoFollowDuplicatesMiddleware` holds the requests that follow a page item until
  its verdict, and drops them when the page is a duplicate;
* :class:`RecordsMiddleware` yields, after the callback's own output, the dataset records
  the page's template assignment produced (``VISDUP_EXTRACT_ITEMS``), so they go through
  the item pipelines and feed exports as ordinary items: the public way for an item to
  come from a crawl, with no call into Scrapy's engine.

Timers go through :func:`scrapy.utils.asyncio.call_later`, so both work with or without a
Twisted reactor.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from visdup.context import CrawlContext, check_enabled, setting
from visdup.items import Page
from visdup.verdicts import DUPLICATE_VERDICTS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

T = TypeVar("T")

NOFOLLOW_VERDICTS = DUPLICATE_VERDICTS

#: Seconds to wait for a page's records before giving up on them. Only a safety net: every
#: page item that enters the pipelines leaves them scraped, dropped or failed, and each of
#: those settles the wait at once.
RECORDS_WAIT = 600.0


async def _settled(pending: Deferred[T], wait: float, default: T) -> tuple[T, bool]:
    """``pending``'s result, or ``default`` after ``wait`` seconds; and whether it came in time."""
    if pending.called:
        result = pending.result
        return (default, True) if isinstance(result, BaseException) else (cast(T, result), True)
    waiter: Deferred[tuple[T, bool]] = Deferred()

    def settle(value: Any, in_time: bool) -> Any:
        if not waiter.called:
            waiter.callback((value, in_time))
        return value

    pending.addBoth(settle, True)
    timer = call_later(wait, settle, default, False)
    try:
        value, in_time = await maybe_deferred_to_future(waiter)
    finally:
        timer.cancel()
    if isinstance(value, BaseException):
        return default, in_time
    return cast(T, value), in_time


class NoFollowDuplicatesMiddleware:
    def __init__(self, crawler: Crawler):
        check_enabled(crawler)
        self.ctx = CrawlContext.of(crawler)
        if self.ctx.policy not in {"nofollow", "drop_nofollow"}:
            raise NotConfigured  # the policy follows links of duplicates: nothing to do
        self.wait = float(setting(crawler, "VISDUP_NOFOLLOW_WAIT"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NoFollowDuplicatesMiddleware:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        pending: Deferred[str | None] | None = None
        verdict: str | None = None
        known = False
        page_url: str | None = None
        async for output in result:
            if isinstance(output, Page):
                pending = self.ctx.handoff.expect_verdict(output)
                page_url = output.url
                verdict, known = None, False
                yield output
                continue
            if isinstance(output, Request) and pending is not None:
                if not known:
                    verdict, in_time = await _settled(pending, self.wait, None)
                    known = True
                    if not in_time:
                        logger.debug(
                            "visdup: no verdict for %s in time; following its links", page_url
                        )
                if verdict in NOFOLLOW_VERDICTS:
                    self.ctx.inc("visdup/nofollow_links")
                    continue
            yield output


class RecordsMiddleware:
    """Yields the records a page's template assignment produced, after the callback's output."""

    def __init__(self, crawler: Crawler):
        check_enabled(crawler)
        self.ctx = CrawlContext.of(crawler)
        config = self.ctx.config
        if not (config.extract_items and config.cluster_enabled):
            # off by default: no reason given, so Scrapy logs no "Disabled" WARNING per crawl
            raise NotConfigured

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RecordsMiddleware:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        waiting: list[tuple[str, Deferred[list[Any]]]] = []
        async for output in result:
            if isinstance(output, Page):
                waiting.append((output.url, self.ctx.handoff.expect_records(output)))
            yield output
        for url, pending in waiting:
            records, in_time = await _settled(pending, RECORDS_WAIT, [])
            if not in_time:
                logger.warning("visdup: records of %s did not come in time", url)
            for record in records:
                yield record
