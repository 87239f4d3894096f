"""A page budget that fetches exactly N pages: requests wait for a slot before they download.

Scrapy's ``CLOSESPIDER_ITEMCOUNT`` counts items after the pipelines (visdup's records too) and
lets every request already scheduled finish, so a limit of 60 stored 66 pages. Here a request
of the spider is admitted to the downloader only while the pages taken plus the requests in
flight are below the limit; a request whose response is no page (an error, a non-HTML body,
a redirect dropped as already seen) gives its slot back, so the crawl still reaches N pages
when the site has them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.asyncio import is_asyncio_available
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Request meta keys: the spider marks the requests the budget governs; admission is recorded
#: on the request (and survives redirects and retries, which copy meta).
GOVERNED = "visdup_budget"
ADMITTED = "visdup_admitted"


class _Waiter:
    """One waiting request: an asyncio future where asyncio runs, else a Twisted Deferred."""

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None
        self._deferred: Deferred[None] | None = None
        if is_asyncio_available():
            self._future = asyncio.get_running_loop().create_future()
        else:
            self._deferred = Deferred()

    async def wait(self) -> None:
        if self._future is not None:
            await self._future
        elif self._deferred is not None:
            await maybe_deferred_to_future(self._deferred)

    def wake(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)
        elif self._deferred is not None and not self._deferred.called:
            self._deferred.callback(None)


class PageBudget:
    """At most ``limit`` pages taken; at most ``limit - taken`` requests downloading for pages."""

    def __init__(self, limit: int):
        self.limit = limit
        self.taken = 0
        self.in_flight = 0
        self._waiting: list[_Waiter] = []

    @property
    def spent(self) -> bool:
        return self.taken >= self.limit

    async def admit(self, request: Request) -> None:
        """Return once ``request`` may download; IgnoreRequest once the budget is spent."""
        if request.meta.get(ADMITTED):
            return
        while True:
            if self.spent:
                raise IgnoreRequest("visdup: the page budget is spent")
            if self.taken + self.in_flight < self.limit:
                self.in_flight += 1
                request.meta[ADMITTED] = True
                return
            waiter = _Waiter()
            self._waiting.append(waiter)
            await waiter.wait()

    def settle(self, request: Request, *, page: bool) -> bool:
        """The admitted ``request`` is done; True if its page may be taken (within the limit)."""
        if not request.meta.pop(ADMITTED, False):
            return page and not self.spent
        self.in_flight -= 1
        if page:
            self.taken += 1
        self._wake()
        return page

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            waiter.wake()

    def release_all(self) -> None:
        """Wake every waiting request (the crawl is closing): each is then refused."""
        self.limit = min(self.limit, self.taken)
        self._wake()


class PageBudgetMiddleware:
    """Downloader middleware (installed by the ``site`` spider): applies the spider's budget."""

    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        crawler.signals.connect(self._dropped, signal=signals.request_dropped)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageBudgetMiddleware:
        return cls(crawler)

    def _budget(self) -> PageBudget | None:
        return getattr(self.crawler.spider, "page_budget", None)

    async def process_request(self, request: Request) -> None:
        budget = self._budget()
        if budget is not None and request.meta.get(GOVERNED):
            await budget.admit(request)

    def _dropped(self, request: Request, **kwargs: Any) -> None:
        """A redirect or retry the scheduler refused (already seen): its slot comes back."""
        budget = self._budget()
        if budget is not None and request.meta.get(GOVERNED):
            budget.settle(request, page=False)

    def _closed(self, spider: Any, reason: str) -> None:
        budget = self._budget()
        if budget is not None:
            budget.release_all()
