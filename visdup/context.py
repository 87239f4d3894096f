"""State one crawl shares between visdup's components: the store, the run, the labeller.

Pipelines and the spider middleware are built separately by Scrapy; they meet here, one
context per crawler, so each component also works alone and the add-on merely wires them.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from visdup.config import defaults, flag
from visdup.dedup.label import Labeller, build_labeller
from visdup.storage.store import Store

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_contexts: weakref.WeakKeyDictionary[Crawler, CrawlContext] = weakref.WeakKeyDictionary()

STATS = ("pages", "duplicates", "candidates", "ted_calls", "errors")


def setting(crawler: Crawler, name: str) -> Any:
    """A VISDUP_ setting, falling back to visdup's documented default when the project lacks it."""
    value = crawler.settings.get(name)
    return defaults()[name] if value is None else value


def check_enabled(crawler: Crawler) -> None:
    if not crawler.settings.getbool("VISDUP_ENABLED", True):
        raise NotConfigured("VISDUP_ENABLED is False")


class CrawlContext:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.stats = crawler.stats
        self.database_url = str(setting(crawler, "VISDUP_DATABASE_URL"))
        self.policy = str(setting(crawler, "VISDUP_DUPLICATE_POLICY"))
        if self.policy not in {"label", "drop", "nofollow", "drop_nofollow"}:
            raise ValueError(
                "VISDUP_DUPLICATE_POLICY must be label, drop, nofollow or drop_nofollow, "
                f"not {self.policy!r}"
            )
        self.cluster_cap = int(setting(crawler, "VISDUP_CLUSTER_CAP"))
        self.store_body = flag(setting(crawler, "VISDUP_STORE_BODY"))
        self.visual_classes = crawler.settings.getdict("VISDUP_VISUAL_CLASSES") or None
        self.denoise_term = flag(setting(crawler, "VISDUP_DENOISE_TERM"))
        self.content_enabled = flag(setting(crawler, "VISDUP_CONTENT_ENABLED"))
        self._open_lock = threading.Lock()
        self.store: Store | None = None
        self.labeller: Labeller | None = None
        self.run_id: int | None = None
        self.group_sizes: dict[int, int] = {}
        # Page items waiting for their verdict, for the spider middleware (nofollow policy).
        self.verdicts: dict[str, Deferred[str | None]] = {}
        for name in STATS:
            self.stats.set_value(f"visdup/{name}", 0)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        # a page dropped or failed before the label pipeline gives no verdict: release its links
        crawler.signals.connect(self.item_gone, signal=signals.item_dropped)
        crawler.signals.connect(self.item_gone, signal=signals.item_error)

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlContext:
        ctx = _contexts.get(crawler)
        if ctx is None:
            ctx = _contexts[crawler] = cls(crawler)
        return ctx

    def open(self) -> None:
        """Open the store and warm the indexes; idempotent and thread-safe (components race)."""
        with self._open_lock:
            if self.labeller is None:
                self._open()

    def _open(self) -> None:
        self.store = Store.from_url(self.database_url)
        self.labeller = build_labeller(
            self.store, lambda name: setting(self.crawler, name), count=self.inc
        )
        warmed = self.labeller.warm()
        spider = self.crawler.spider.name if self.crawler.spider else "crawl"
        self.run_id = self.store.begin_run(spider)
        logger.info(
            "visdup: store %s (%d pages already known), run %d",
            _safe_url(self.database_url),
            warmed,
            self.run_id,
        )

    def inc(self, key: str, n: int = 1) -> None:
        """Count a stat from any thread: Scrapy's stats collector belongs to the reactor."""
        if threading.current_thread() is threading.main_thread():
            self.stats.inc_value(key, n)
        else:
            from twisted.internet import reactor

            reactor.callFromThread(self.stats.inc_value, key, n)

    async def spider_opened(self, spider: Any) -> None:
        # Opening the store and warming the indexes reads the database: not on the reactor.
        await maybe_deferred_to_future(deferToThread(self.open))

    async def spider_closed(self, spider: Any, reason: str) -> None:
        for d in self.verdicts.values():
            if not d.called:
                d.callback(None)
        self.verdicts.clear()
        if self.store is None:
            return
        stats = {k: v for k, v in self.stats.get_stats().items() if k.startswith("visdup/")}
        logger.info(
            "visdup: %d pages, %d duplicates (%d exact), %d candidates, %d TED calls, %d errors",
            stats.get("visdup/pages", 0),
            stats.get("visdup/duplicates", 0),
            stats.get("visdup/duplicates/exact", 0),
            stats.get("visdup/candidates", 0),
            stats.get("visdup/ted_calls", 0),
            stats.get("visdup/errors", 0),
        )
        await maybe_deferred_to_future(deferToThread(self._close, reason, stats))

    def _close(self, reason: str, stats: dict[str, Any]) -> None:
        assert self.store is not None
        if self.run_id is not None:
            self.store.finish_run(self.run_id, reason, stats)
        self.store.close()

    def item_gone(self, item: Any, **kwargs: Any) -> None:
        url = getattr(item, "url", None)
        if isinstance(url, str) and url in self.verdicts:
            self.give_verdict(url, getattr(item, "verdict", None))

    # ---------------------------------------------------------------- verdicts
    def expect_verdict(self, url: str) -> Deferred[str | None]:
        d = self.verdicts.get(url)
        if d is None:
            d = self.verdicts[url] = Deferred()
        return d

    def give_verdict(self, url: str, verdict: str | None) -> None:
        d = self.verdicts.pop(url, None)
        if d is not None and not d.called:
            d.callback(verdict)


def _safe_url(url: str) -> str:
    """The database URL without its password, for logs."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':')[0]}:***@{host}" if ":" in creds else url
    return url
