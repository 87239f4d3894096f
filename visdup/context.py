"""State one crawl shares between visdup's components: settings, store, the labelling
(:class:`visdup.dedup.labelling.Labelling` here, or the label process), analysis workers.

Pipelines and spider middlewares are built separately by Scrapy; they meet here, one context
per crawler, so each component also works alone and the add-on merely wires them.

The context is built by the first visdup component Scrapy creates, before any page is
fetched. That is where a crawl fails fast: a bad setting, database URL, missing driver or
unreachable database logs one ERROR line and raises from ``from_crawler``, which Scrapy turns
into a failed crawl (``scrapy crawl`` exits non-zero) before the spider opens.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from concurrent.futures import Future
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import run_in_thread

from visdup import config
from visdup.config import resolve
from visdup.dedup.analysis import (
    AnalysisOptions,
    PageAnalysis,
)
from visdup.dedup.jobs import Outcome, PageJob
from visdup.dedup.labelling import Labelling
from visdup.drift.crawl import open_crawl_snapshot
from visdup.errors import StoreError, VisdupError
from visdup.handoff import HandOff
from visdup.items import Record
from visdup.runtime.analysis import Analysis
from visdup.runtime.early import discard_early, start_early, take_label, take_pool
from visdup.runtime.futures import awaited
from visdup.runtime.label_process import LabelService, ServiceGone, ServiceSetup
from visdup.storage.store import Store
from visdup.storage.urls import crawl_key
from visdup.storage.urls import mask_password as _safe_url
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
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.stats = crawler.stats
        try:
            #: Every VISDUP_ setting, typed and checked.
            self.config: dict[str, Any] = resolve(crawler.settings)
        except VisdupError as exc:
            raise _refused(exc) from None
        self.database_url: str = self.config["VISDUP_DATABASE_URL"]
        self.policy: str = self.config["VISDUP_DUPLICATE_POLICY"]
        self.cluster_cap: int = self.config["VISDUP_CLUSTER_CAP"]
        self.store_body: bool = self.config["VISDUP_STORE_BODY"]
        self.content_enabled: bool = self.config["VISDUP_CONTENT_ENABLED"]
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
        #: Labelling in this process (None until the spider opens, or with a label process).
        self.labelling: Labelling | None = None
        #: The label process (visdup.runtime.label_process), when pages are labelled in one.
        self.service: LabelService | None = None
        #: Done once the labelling is up (the label process starts in a thread, see _open):
        #: threads wait for it (_labelling_call), the event loop awaits it (labelled).
        self._labelling_up: Future[None] = Future()
        self._labelling_up.set_result(None)
        #: Pages awaiting _labelling_up on the event loop (touched there only).
        self._awaiting_labelling = 0
        self._service_setup: ServiceSetup | None = None
        self._warmed = 0
        #: Pages the crawl's snapshot held when the run began (a restart counts from it).
        self._held_at_start = 0
        self.run_id: int | None = None
        #: Where pages are analysed: worker processes, else threads.
        self.analysis = Analysis(
            self.config["VISDUP_ANALYSIS_PROCESSES"],
            int(self.config["VISDUP_ANALYSIS_NICE"]),
            count=self.inc,
            set_stat=self.stats.set_value,
            take_pool=partial(take_pool, crawler),
            lock=self._open_lock,
        )
        #: The snapshot this run adds to (visdup.drift; None when drift is off).
        self.snapshot: Snapshot | None = None
        #: What each page item's spider middlewares wait for from the pipelines.
        self.handoff = HandOff()
        # The store now: a crawl that cannot store anything must not fetch anything.
        self.store: Store | None = self._open_store()
        self.store.index_layout = self.config["VISDUP_INDEX_LAYOUT"]
        for name in STATS:
            self.stats.set_value(f"visdup/{name}", 0)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        # a page dropped, failed or done before a step gave its result: release its waiters
        crawler.signals.connect(self.item_gone, signal=signals.item_scraped)
        crawler.signals.connect(self.item_gone, signal=signals.item_dropped)
        crawler.signals.connect(self.item_gone, signal=signals.item_error)
        # a crawl wired without the add-on starts its processes here, before the spider opens
        start_early(crawler, self.config.__getitem__)

    @classmethod
    def existing(cls, crawler: Crawler) -> CrawlContext | None:
        """The crawl's context if a visdup component made one; never makes one."""
        return _contexts.get(crawler)

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlContext:
        ctx = _contexts.get(crawler)
        if ctx is None:
            ctx = _contexts[crawler] = cls(crawler)
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

    def setting(self, name: str) -> Any:
        return self.config[name]

    def open(self) -> None:
        """Build the labeller and warm its indexes; idempotent and thread-safe (components race)."""
        with self._open_lock:
            if self.opened:
                return
            self._open()
        self.analysis.warm()  # beside the label process's start (the pool takes the lock)

    @property
    def opened(self) -> bool:
        # a label process being started (its setup is made just before) counts as opened
        return (
            self.labelling is not None
            or self.service is not None
            or self._service_setup is not None
        )

    def _open(self) -> None:
        if self.opened:
            return
        assert self.store is not None
        spider = self.crawler.spider.name if self.crawler.spider else "crawl"
        starts = getattr(self.crawler.spider, "start_urls", None) or ()
        crawl = crawl_key(starts, spider)
        self.run_id = self.store.begin_run(spider, crawl=crawl)
        self.snapshot = open_crawl_snapshot(
            self.store,
            self.config,
            run_id=self.run_id,
            crawl=crawl,
            start_urls=starts,
            spider=spider,
        )
        snapshot = self.snapshot
        self._held_at_start = snapshot.held() if snapshot is not None else 0
        if self.config["VISDUP_LABEL_PROCESS"] and self.analysis.workers:
            self._service_setup = ServiceSetup(
                config=self.config,
                database_url=self.database_url,
                run_id=self.run_id,
                snapshot=(
                    (snapshot.info, snapshot.resumed, snapshot.start_templates, self._held_at_start)
                    if snapshot is not None
                    else None
                ),
                parent=os.getpid(),
                log_level=logging.getLogger("visdup").getEffectiveLevel(),
            )
            # the label process warms up while the first pages are fetched and analysed: the
            # first call to it waits (see _labelling_call), the crawl's start does not
            self._labelling_up = Future()
            self._labelling_up.set_running_or_notify_cancel()  # one page's cancel: not all
            threading.Thread(
                target=self._first_service, name="visdup-label-start", daemon=True
            ).start()
            return
        self._open_here()

    def _first_service(self) -> None:
        try:
            service = self._start_service()
            if service is not None:
                self.service = service
                self.stats.set_value("visdup/label_process", 1)
                self._opened_log(self._warmed)
            else:
                self._open_here()
        except Exception:
            logger.exception("visdup: cannot start the labelling")
        finally:
            self._labelling_up.set_result(None)

    def _open_here(self) -> None:
        labelling = self._labelling_here()
        self.labelling = labelling
        self._opened_log(labelling.warmed)

    def _opened_log(self, warmed: int) -> None:
        logger.info(
            "visdup: store %s (%d pages already known), run %d",
            _safe_url(self.database_url),
            warmed,
            self.run_id,
        )

    def _start_service(self) -> LabelService | None:
        """A label process, up and warm; None (logged) when it cannot start."""
        assert self._service_setup is not None
        service = None
        try:
            started = take_label(self.crawler)
            service = LabelService(self._service_setup, self._add_counts, started=started)
            if started is not None and service.process is started.process:
                self.inc("visdup/early_processes")
            self._warmed = service.warmed()
        except Exception as exc:  # it could not start: label here, as without it
            logger.warning("visdup: no label process (%s); labelling in this process", exc)
            if service is not None:
                service.stop(wait=1.0)
            return None
        return service

    def _labelling_here(self) -> Labelling:
        assert self.store is not None
        return Labelling(
            self.store,
            self.config,
            run_id=self.run_id,
            snapshot=self.snapshot,
            count=self.inc,
            processes=self.analysis.start,
        )

    # ---------------------------------------------------------------- labelling
    def assign(self, url: str, page: TemplateInput) -> Assignment:
        """The page's template cluster (blocking: call it in a worker thread)."""
        self.open()
        return self._labelling_call("assign", url, page)

    def label(self, item: Page, analysis: PageAnalysis, place: bool = False) -> Outcome:
        """Label the page and store it (blocking: call it in a worker thread); ``place``:
        first place it in its template cluster, in the same call (``Outcome.assignment``)."""
        self.open()
        return self._labelling_call("label", self._job(item, analysis), analysis, place)

    async def labelled(self, item: Page, analysis: PageAnalysis, place: bool = False) -> Outcome:
        """:meth:`label`, awaited on the event loop: with a label process up, no thread of
        the crawl's process waits for the answer (a thread per page costs the crawl's pace).
        Pages that come while the label process starts wait for it here, on the event loop,
        and are sent in the order their waits began, ahead of the pages that come after it is
        up (one that comes in the instant it finishes starting may pass some of them). A label
        process that dies under the call takes the blocking path in a thread."""
        if self._awaiting_labelling or not self._labelling_up.done():
            self._awaiting_labelling += 1
            try:  # each resumes in turn, the order their waits began
                await awaited(self._labelling_up)
            finally:
                self._awaiting_labelling -= 1
        service = self.service
        if service is None:
            return await run_in_thread(self.label, item, analysis, place)
        job = self._job(item, analysis)
        try:
            return await awaited(service.submit("label", job, analysis, place, False))
        except ServiceGone as exc:
            return await run_in_thread(self._label_again, service, exc, job, analysis, place)

    def _job(self, item: Page, analysis: PageAnalysis) -> PageJob:
        # a worker process packed the body already when it could (PageAnalysis.packed_body)
        keep = self.store_body and analysis.packed_body is None
        return PageJob.of(item, item.body if keep else None)

    def _label_again(
        self,
        dead: LabelService,
        gone: ServiceGone,
        job: PageJob,
        analysis: PageAnalysis,
        place: bool,
    ) -> Outcome:
        """A label call :meth:`labelled` saw the label process die under: as in
        :meth:`_labelling_call` once that has seen it die."""
        self._restart_service(dead)
        return self._labelling_call(
            "label", job, analysis, place, retry=True, suspected=int(gone.suspect)
        )

    #: Times the label process is started again in one crawl before the crawl gives up on it.
    MAX_SERVICE_RESTARTS = 5

    def _labelling_call(self, op: str, *args: Any, retry: bool = False, suspected: int = 0) -> Any:
        """``op`` of :class:`Labelling`, here or in the label process.

        When that process dies, a new one starts and the call is sent again. A page it had
        stored before dying is then found stored with its labels (``retry``): none is lost or
        stored twice. Only the call it was working on counts against the page (twice and the
        page goes unlabelled, with an error; a page it was placing and labelling is first sent
        once more to be labelled without its template, since the placing may be what kills
        it); the calls queued behind it are sent again freely.
        """
        self._labelling_up.result()
        if self.service is None and self.labelling is None:
            raise StoreError("visdup could not start its labelling (see the log)")
        for _attempt in range(2 * self.MAX_SERVICE_RESTARTS + 2):
            service = self.service
            extra = (retry,) if op == "label" else ()
            if service is None:
                assert self.labelling is not None
                return getattr(self.labelling, op)(*args, *extra)
            try:
                # the end builds what is queued: long, but not endless
                return service.call(op, *args, *extra, timeout=3600.0 if op == "close" else None)
            except ServiceGone as exc:
                self._restart_service(service)
                retry = True
                suspected += exc.suspect
                if suspected >= 2 and op == "label" and args[2]:
                    # it may be the placing that kills it: the page is labelled without it
                    logger.error(
                        "visdup: the label process died twice under %s; labelling it without"
                        " its template",
                        args[0].url,
                    )
                    self.inc("visdup/errors")
                    args = (*args[:2], False)
                elif suspected >= 2:
                    raise ServiceGone(
                        f"the label process died twice under this call ({op})"
                    ) from exc
        raise ServiceGone("the label process keeps dying")

    def _restart_service(self, dead: LabelService) -> None:
        with self._open_lock:
            if self.service is not dead:
                return  # another thread saw it die first and started the new one
            dead.stop(wait=1.0)
            restarts = self.stats.get_value("visdup/label_process/restarts", 0)
            service = None
            if restarts < self.MAX_SERVICE_RESTARTS:
                self.inc("visdup/label_process/restarts")
                logger.warning("visdup: the label process died; starting a new one")
                service = self._start_service()
            if service is not None:
                self.service = service
                return
            logger.error(
                "visdup: no new label process (it died %d times, or cannot start); labelling in"
                " this process",
                restarts + 1,
            )
            labelling = self._labelling_here()
            if self.snapshot is not None:  # take over what the label process left unwritten
                self.snapshot.recover(self.run_id, self._held_at_start)
            self.labelling = labelling
            self.service = None

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
        totals: dict[str, Any] = {}
        if self.opened:
            try:  # through a new label process, or here, if the last one died meanwhile
                totals = self._labelling_call("close", reason)
            except Exception:
                logger.exception("visdup: cannot finish the templates and the snapshot")
            if self.service is not None:
                self.service.stop()
            # the label process's last counts came with its close
            stats.update(
                {k: v for k, v in self.stats.get_stats().items() if k.startswith("visdup/")}
            )
        self.analysis.stop()
        discard_early(self.crawler)  # what the crawl did not take
        for key, value in totals.items():
            self.stats.set_value(key, value)
        stats.update(totals)
        if self.run_id is not None:
            self.store.finish_run(self.run_id, reason, stats)
        self.store.close()

    def item_gone(self, item: Any, **kwargs: Any) -> None:
        """A page left the pipelines: whatever it did not give, it never will."""
        if not isinstance(item, Record):  # a dataset row names a page but is none
            self.handoff.gone(item)


def _refused(exc: VisdupError) -> VisdupError:
    """One clear ERROR line for a crawl that cannot start; the error goes on to Scrapy."""
    logger.error("visdup: the crawl cannot start: %s", exc)
    return exc
