"""Spider middleware: do not follow the links found on duplicate pages.

Scrapy schedules the requests a callback yields before any item pipeline has seen the page
item yielded beside them, so a pipeline alone cannot stop them. This middleware lets the page
item through, holds the requests that follow it until the pipelines give the page's verdict,
and drops them when the page is a duplicate.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer, reactor

from visdup.context import CrawlContext, check_enabled, setting
from visdup.items import Page

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

NOFOLLOW_VERDICTS = frozenset({"duplicate", "moved"})


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
        pending: defer.Deferred[str | None] | None = None
        verdict: str | None = None
        page_url: str | None = None
        async for output in result:
            if isinstance(output, Page):
                pending = self.ctx.expect_verdict(output.url)
                page_url = output.url
                verdict = None
                yield output
                continue
            if isinstance(output, Request) and pending is not None:
                if not pending.called or verdict is None:
                    verdict = await self._verdict(pending, page_url)
                if verdict in NOFOLLOW_VERDICTS:
                    self.ctx.inc("visdup/nofollow_links")
                    continue
            yield output

    async def _verdict(self, pending: defer.Deferred[str | None], url: str | None) -> str | None:
        if pending.called:
            return pending.result if not isinstance(pending.result, BaseException) else None
        waiter: defer.Deferred[str | None] = defer.Deferred()

        def settle(value: str | None) -> str | None:
            if not waiter.called:
                waiter.callback(value)
            return value

        pending.addBoth(settle)
        timeout = reactor.callLater(self.wait, settle, None)
        result = await maybe_deferred_to_future(waiter)
        if timeout.active():
            timeout.cancel()
        if result is None:
            logger.debug("visdup: no verdict for %s in time; following its links", url)
        return result
