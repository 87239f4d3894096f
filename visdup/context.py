"""What one crawl's visdup components share: settings, store, run, the labelling
(:class:`visdup.runtime.labeller.Labeller`), the analysis
(:class:`visdup.runtime.analysis.Analysis`) and the hand-off from pipelines to spider
middlewares.

Pipelines and spider middlewares are built separately by Scrapy; they meet here, one context
per crawler. The add-on lists the context as an extension, so Scrapy builds it first and the
components find it with ``crawler.get_extension``; a component wired without the add-on makes
it itself, so each also works alone.

The context is built before any page is fetched. That is where a crawl fails fast: a bad
setting, database URL, missing driver or unreachable database logs one ERROR line and raises
from ``from_crawler``, which Scrapy turns into a failed crawl (``scrapy crawl`` exits
non-zero) before the spider opens.
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import run_in_thread

from visdup import config
from visdup.config import Options, options
from visdup.dedup.analysis import (
    AnalysisOptions,
    PageAnalysis,
)
from visdup.dedup.jobs import Outcome, PageJob
from visdup.drift.crawl import open_crawl_snapshot
from visdup.errors import StoreError, VisdupError
from visdup.handoff import HandOff
from visdup.items import Record
from visdup.response_log import ResponseLog
from visdup.runtime.analysis import Analysis
from visdup.runtime.early import discard_early, start_early, take_label, take_pool
from visdup.runtime.labeller import Labeller, LabellerHooks
from visdup.storage.outage import is_outage
from visdup.storage.store import Store
from visdup.storage.urls import crawl_key
from visdup.storage.urls import mask_password as _safe_url
from visdup.store_outage import StoreOutage
from visdup.templates.assign import Assignment

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from visdup.drift.snapshot import Snapshot
    from visdup.items import Page
    from visdup.templates.signature import TemplateInput

logger = logging.getLogger(__name__)

T = TypeVar("T")

_contexts: weakref.WeakKeyDictionary[Crawler, CrawlContext] = weakref.WeakKeyDictionary()

STATS = ("pages", "duplicates", "candidates", "ted_calls", "ted_skipped", "errors")

#: The pipelines whose presence switches an analysis step on (a project's None switches it off).
CONTENT_STEP = "visdup.pipelines.ContentPipeline"
TEMPLATE_STEP = "visdup.pipelines.ClusterPipeline"
#: What every pipeline that analyses pages derives from.
ANALYSIS_STEP = "visdup.pipelines._PagePipeline"
#: The pipeline that labels and stores pages (and then places them in their clusters too).
LABEL_STEP = "visdup.pipelines.LabelPipeline"


def setting(crawler: Crawler, name: str) -> Any:
    """A VISDUP_ setting, typed and checked, or visdup's documented default when unset."""
    return config.read(crawler.settings, name)


def check_enabled(crawler: Crawler) -> None:
    """NotConfigured when visdup is switched off; a bad value refuses the crawl."""
    try:
        enabled = setting(crawler, "VISDUP_ENABLED")
    except VisdupError as exc:
        raise _refused(exc) from None
    if not enabled:
        raise NotConfigured("VISDUP_ENABLED is False")


def _wired(crawler: Crawler, setting_name: str, path: str) -> bool:
    """Whether a component (or a subclass of it) is enabled in a component priority dict."""
    from scrapy.utils.conf import build_component_list
    from scrapy.utils.misc import load_object

    for component in build_component_list(crawler.settings.getwithbase(setting_name)):
        cls = load_object(component) if isinstance(component, str) else component
        if any(f"{k.__module__}.{k.__qualname__}" == path for k in getattr(cls, "__mro__", ())):
            return True
    return False


class CrawlContext:
    """One crawl's wiring: the add-on lists it as an extension (components find it with
    ``crawler.get_extension``); a component wired without it makes it (:meth:`of`)."""

    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.stats = crawler.stats
        try:
            config.check_known(crawler.settings)  # a misspelt name is no silent default
            #: Every VISDUP_ setting, typed and checked.
            self.config: Options = options(crawler.settings)
        except VisdupError as exc:
            raise _refused(exc) from None
        # the worker processes and the label process import while the rest is built (a crawl
        # wired by the add-on started them already, as the add-on was made)
        start_early(crawler, self.config)
        self.database_url = self.config.database_url
        self.policy = self.config.duplicate_policy
        self.cluster_cap = self.config.cluster_cap
        self.store_body = self.config.store_body
        self.content_enabled = self.config.content_enabled
        #: What each page's analysis computes: a step runs when its setting and pipeline are on.
        self.options = AnalysisOptions.from_settings(
            self.config,
            content=_wired(crawler, "ITEM_PIPELINES", CONTENT_STEP),
            template=_wired(crawler, "ITEM_PIPELINES", TEMPLATE_STEP),
        )
        #: The options with the links read too, by cap (:meth:`analyse_item`).
        self._link_options: dict[int, AnalysisOptions] = {}
        #: Whether the item pipelines analyse pages (any of visdup's page pipelines is on).
        self.analyses_pages = _wired(crawler, "ITEM_PIPELINES", ANALYSIS_STEP)
        #: Whether pages are labelled: the labelling call then places them in their clusters.
        self.labels_pages = _wired(crawler, "ITEM_PIPELINES", LABEL_STEP)
        self._open_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._noted: set[str] = set()
        self.run_id: int | None = None
        #: Where pages are analysed: worker processes, else threads.
        self.analysis = Analysis(
            self.config.analysis_processes,
            self.config.analysis_nice,
            memory_mb=self.config.analysis_memory_mb,
            count=self.inc,
            set_stat=self.stats.set_value,
            take_pool=partial(take_pool, crawler),
            lock=self._open_lock,
        )
        #: The snapshot this run adds to (visdup.drift; None when drift is off).
        self.snapshot: Snapshot | None = None
        #: What each page item's spider middlewares wait for from the pipelines.
        self.handoff = HandOff()
        #: The wait for a store that went away (the pipelines' pages wait in it).
        self.outage = StoreOutage(
            crawler, self.config.store_outage_timeout, self.database_url, self.inc
        )
        # The store now: a crawl that cannot store anything must not fetch anything.
        self.store: Store | None = self._open_store()
        self.store.index_layout = self.config.index_layout
        #: Redirects, errors and other answers that are no page (visdup.responses).
        self.responses = ResponseLog(self.store, self.inc)
        #: The labelling, here or in the label process (started as the spider opens).
        self.labeller = Labeller(
            self.store,
            self.config,
            self.analysis,
            LabellerHooks(
                count=self.inc,
                add_counts=self._add_counts,
                get_stat=self.stats.get_value,
                set_stat=self.stats.set_value,
                take_started=partial(take_label, crawler),
            ),
            self._open_lock,
        )
        for name in STATS:
            self.stats.set_value(f"visdup/{name}", 0)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        # a page dropped, failed or done before a step gave its result: release its waiters
        crawler.signals.connect(self.item_gone, signal=signals.item_scraped)
        crawler.signals.connect(self.item_gone, signal=signals.item_dropped)
        crawler.signals.connect(self.item_gone, signal=signals.item_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlContext:
        """As an extension (the add-on lists it): NotConfigured when visdup is off."""
        check_enabled(crawler)
        return cls.of(crawler)

    @classmethod
    def existing(cls, crawler: Crawler) -> CrawlContext | None:
        """The crawl's context if one was made; never makes one."""
        try:
            listed = crawler.get_extension(cls)
        except RuntimeError:  # asked while Scrapy builds the extensions, or never crawled
            listed = None
        return listed if listed is not None else _contexts.get(crawler)

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlContext:
        """The crawl's context: the extension, or the one its first component made."""
        ctx = cls.existing(crawler)
        if ctx is None:
            ctx = _contexts[crawler] = cls(crawler)
        else:
            # a context made before its crawler crawled (settings applied ahead) started no
            # process: the crawl's first component starts them, still before the spider opens
            start_early(crawler, ctx.config)
        return ctx

    def _open_store(self) -> Store:
        try:
            return Store.from_url(self.database_url, writer=True)  # one writer per SQLite file
        except VisdupError as exc:
            raise _refused(exc) from None
        except Exception as exc:  # a driver's own error: name it, never the password
            raise _refused(
                StoreError(f"cannot open the store {_safe_url(self.database_url)}: {exc}")
            ) from exc

    def open(self) -> None:
        """Begin the run and start the labelling; idempotent and thread-safe (components
        race)."""
        with self._open_lock:
            if not self.opened:
                self._open()
        self.analysis.warm()  # beside the label process's start (the pool takes the lock)

    @property
    def opened(self) -> bool:
        return self.labeller.opened

    def _open(self) -> None:
        assert self.store is not None
        spider = self.crawler.spider.name if self.crawler.spider else "crawl"
        starts = getattr(self.crawler.spider, "start_urls", None) or ()
        crawl = crawl_key(starts, spider)
        self.run_id = self.responses.run_id = self.store.begin_run(spider, crawl=crawl)
        self.snapshot = open_crawl_snapshot(
            self.store,
            self.config,
            run_id=self.run_id,
            crawl=crawl,
            start_urls=starts,
            spider=spider,
        )
        self.labeller.open(self.run_id, self.snapshot)

    # ---------------------------------------------------------------- labelling
    def assign(self, url: str, page: TemplateInput) -> Assignment:
        """The page's template cluster (blocking: call it in a worker thread)."""
        self.open()
        return self.labeller.assign(url, page)

    def label(self, item: Page, analysis: PageAnalysis, place: bool = False) -> Outcome:
        """Label the page and store it (blocking: call it in a worker thread); ``place``:
        first place it in its template cluster, in the same call (``Outcome.assignment``)."""
        self.open()
        return self.labeller.label(self._job(item, analysis), analysis, place)

    async def labelled(
        self, item: Page, analysis: PageAnalysis, place: bool = False, retry: bool = False
    ) -> Outcome:
        """:meth:`label`, awaited on the event loop (:meth:`Labeller.labelled`); ``retry``: an
        earlier try may have stored the page."""
        if not self.opened:
            await run_in_thread(self.open)
        job = self._job(item, analysis)
        return await self.labeller.labelled(job, analysis, place, retry)

    def _job(self, item: Page, analysis: PageAnalysis) -> PageJob:
        # a worker process packed the body already when it could (PageAnalysis.packed_body)
        keep = self.store_body and analysis.packed_body is None
        return PageJob.of(item, item.body if keep else None)

    def _add_counts(self, counts: dict[str, int]) -> None:
        """Stat increments the label process made (from its reader thread)."""
        if counts:
            with self._stats_lock:
                for key, n in counts.items():
                    self.stats.inc_value(key, n)

    # ---------------------------------------------------------------- analysis
    @property
    def analyses_apart(self) -> bool:
        """Whether pages are analysed in worker processes, from their bytes: then no tree
        needs to stay with a page in the crawl's process (the site spider keeps none)."""
        return self.analysis.workers > 0 and self.analyses_pages

    async def analyse_item(self, item: Page, links: int | None = None) -> PageAnalysis:
        """Analyse the page item once: its analysis set on it (the pipelines read it), its
        notes counted. ``links``: read its links too (the hrefs of at most that many link
        elements, 0: all), for the spider: they are on the analysis returned, not the item's.
        """
        options = self.options
        if links is not None:
            if links not in self._link_options:
                self._link_options[links] = replace(options, links=links)
            options = self._link_options[links]
        analysis = await self.analysis.analysed(item, options)
        item.analysis = analysis.without_links()
        item.tree = None  # the analysis holds what it needs; the response's tree can go
        for kind, note in analysis.notes:
            self.note(item.url, kind, note)
        return analysis

    def note(self, url: str, kind: str, text: str) -> None:
        """A page read other than declared or not whole: logged once per kind, then counted."""
        self.inc(f"visdup/notes/{kind}")
        with self._stats_lock:
            first = kind not in self._noted
            self._noted.add(kind)
        if first:
            logger.warning(
                "visdup: %s: %s (further pages like it are counted in visdup/notes/%s)",
                url,
                text,
                kind,
            )

    # ---------------------------------------------------------------- stats
    def inc(self, key: str, n: int = 1) -> None:
        """Count a stat from any thread: the lock keeps read-add-write whole."""
        with self._stats_lock:
            self.stats.inc_value(key, n)

    # ---------------------------------------------------------------- signals
    async def spider_opened(self, spider: Any) -> None:
        # Warming the indexes reads the database: not on the event loop's thread.
        await run_in_thread(self.open)

    async def spider_closed(self, spider: Any, reason: str) -> None:
        self.handoff.close()
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
        await run_in_thread(self._close, reason, stats)

    def _close(self, reason: str, stats: dict[str, Any]) -> None:
        assert self.store is not None
        # templates still queued are built and stored (before the worker processes they may
        # be built in stop); the snapshot's aggregates, comparison and alarms
        totals = self.labeller.close(reason)
        self.responses.flush()
        # the label process's last counts came with its close
        stats.update({k: v for k, v in self.stats.get_stats().items() if k.startswith("visdup/")})
        self.analysis.stop()
        discard_early(self.crawler)  # what the crawl did not take
        for key, value in totals.items():
            self.stats.set_value(key, value)
        stats.update(totals)
        if self.run_id is not None:
            try:
                self.store.finish_run(self.run_id, reason, stats)
            except Exception as exc:
                if not is_outage(exc):
                    raise
                # the run stays unfinished: the next run of the crawl takes it up
        self.store.close()

    def item_gone(self, item: Any, **kwargs: Any) -> None:
        """A page left the pipelines: whatever it did not give, it never will."""
        if not isinstance(item, Record):  # a dataset row names a page but is none
            self.handoff.gone(item)


def _refused(exc: VisdupError) -> VisdupError:
    """One clear ERROR line for a crawl that cannot start; the error goes on to Scrapy (which
    fails the crawl: ``scrapy crawl`` exits 1)."""
    logger.error("visdup: the crawl cannot start: %s", exc)
    _SAID.add(id(exc))
    asyncio_logger = logging.getLogger("asyncio")
    if _said_already not in asyncio_logger.filters:
        asyncio_logger.addFilter(_said_already)
    return exc


#: Errors already said in their one line (by id; an error is said once).
_SAID: set[int] = set()


def _said_already(record: logging.LogRecord) -> bool:
    """Keep asyncio's report of a task's error that was never retrieved out of the log when
    that error is one visdup said already: Scrapy's crawl command leaves the failed crawl's
    task unretrieved, and the report repeats the one line as a 50-line traceback."""
    error = record.exc_info[1] if record.exc_info else None
    return error is None or id(error) not in _SAID
