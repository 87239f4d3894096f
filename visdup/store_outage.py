"""A crawl whose store went away waits for it rather than dropping pages.

While the store is away (:func:`visdup.storage.outage.is_outage`), the crawl takes no new page
(Scrapy's engine is paused) and each page waiting in the pipelines tries its transaction again,
backing off; the first that succeeds resumes the crawl. One WARNING says the store went away,
one INFO that it came back. After ``VISDUP_STORE_OUTAGE_TIMEOUT`` seconds without it, one ERROR
and the crawl closes (reason ``store_outage``): the pages it could not store are left for the
next run of the same crawl, which fetches every URL not stored.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from visdup.storage.urls import mask_password

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: The close reason of a crawl that gave up on its store.
OUTAGE_REASON = "store_outage"


class StoreOutage:
    """The crawl's wait for its store (one per crawl, shared by the pages that wait)."""

    #: Seconds between a page's tries, doubling from the first to the last.
    FIRST_DELAY = 0.5
    MAX_DELAY = 8.0

    def __init__(
        self, crawler: Crawler, timeout: float, database_url: str, count: Callable[[str, int], None]
    ):
        self.crawler = crawler
        self.timeout = timeout
        self.database_url = database_url
        self.count = count
        #: When the store went away (monotonic), None while it answers.
        self.since: float | None = None
        self.gave_up = False
        self._closing: asyncio.Future[None] | None = None

    @property
    def away(self) -> bool:
        return self.since is not None

    async def wait(self, error: BaseException, tries: int) -> bool:
        """After a page's ``tries``-th failed try with the store away: True once it is time to
        try again, False when the crawl gives up on the store (it is closing)."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
            self.count("visdup/store_outages", 1)
            logger.warning(
                "visdup: the store %s went away (%s); the crawl takes no new page and tries the "
                "waiting ones again, for up to %g s (VISDUP_STORE_OUTAGE_TIMEOUT)",
                mask_password(self.database_url),
                _first_line(error),
                self.timeout,
            )
            self._pause(True)
        if self.gave_up or now - self.since >= self.timeout:
            self._give_up()
            return False
        delay = min(self.MAX_DELAY, self.FIRST_DELAY * 2 ** min(tries, 8))
        await asyncio.sleep(min(delay, max(0.0, self.since + self.timeout - now) + 0.01))
        return True

    def answered(self) -> None:
        """A transaction went through: the store is back."""
        if self.since is None:
            return
        logger.info(
            "visdup: the store is back after %.0f s; the crawl goes on",
            time.monotonic() - self.since,
        )
        self.since = None
        if not self.gave_up:
            self._pause(False)

    def _give_up(self) -> None:
        if self.gave_up:
            return
        self.gave_up = True
        logger.error(
            "visdup: the store %s stayed away for %g s: the crawl stops; run it again once the "
            "store is back to fetch and store the pages it could not (stored pages are not "
            "fetched again)",
            mask_password(self.database_url),
            self.timeout,
        )
        engine = self.crawler.engine
        if engine is not None:
            engine.unpause()
            self._closing = asyncio.ensure_future(engine.close_spider_async(reason=OUTAGE_REASON))

    def _pause(self, pause: bool) -> None:
        engine = self.crawler.engine
        if engine is not None:
            engine.pause() if pause else engine.unpause()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:200]
