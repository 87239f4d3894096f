"""Scrapy item pipelines: thin adapters from page items to one analysis per page.

Each page is analysed once (:func:`visdup.dedup.analysis.analyse`, in a worker process, or a
worker thread with ``VISDUP_ANALYSIS_PROCESSES = 0``) into an immutable value set on the
item's declared ``analysis`` field; the pipelines then only read it. ``TermPipeline`` and
``ContentPipeline`` make sure the analysis exists, ``ClusterPipeline`` places the page in its
template cluster, ``LabelPipeline`` labels and stores it (both through
:class:`visdup.dedup.labelling.Labelling`: in the label process when analysis runs in worker
processes, else in a worker thread). With both on, ``LabelPipeline`` places and labels a page
in one call, so the page crosses to the labelling once: its ``cluster`` and ``fit`` are set
when it leaves ``LabelPipeline``. Every pipeline works alone and in any order: each first runs
the steps it needs that have not run yet, so swapping priorities changes nothing. Switching
``ContentPipeline`` or ``ClusterPipeline`` off (``None``) switches its step off for the whole
crawl.

Items other than :class:`visdup.items.Page` pass through untouched.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NoReturn, Self

from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.asyncio import run_in_thread

from visdup.context import CrawlContext, check_enabled
from visdup.dedup.analysis import PageAnalysis
from visdup.dedup.jobs import LabelFailed, Outcome
from visdup.items import Page, Record
from visdup.storage.outage import is_outage
from visdup.templates.assign import Assignment
from visdup.verdicts import DUPLICATE_VERDICTS, NOVEL

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Verdicts the duplicate policy acts on (drop, do not follow): structure alone never counts.
ACTED_ON = DUPLICATE_VERDICTS


class _PagePipeline:
    """What every visdup pipeline shares: the switch, the crawl's context, the analysis."""

    def __init__(self, crawler: Crawler):
        check_enabled(crawler)
        self.crawler = crawler
        self.ctx = CrawlContext.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def analysed(self, item: Page) -> PageAnalysis:
        """The page's analysis, computed (off the event loop) by the first pipeline to ask."""
        if item.analysis is None:
            await self.ctx.analyse_item(item)
        assert item.analysis is not None
        return item.analysis

    async def clustered(self, item: Page, analysis: PageAnalysis) -> None:
        """Place the page in its template cluster, once, when the crawl clusters pages."""
        if item.cluster is not None or not analysis.has_template_input:
            return
        assignment = await run_in_thread(self._assign, item.url, analysis)
        if assignment is not None:
            self.placed(item, assignment)

    def placed(self, item: Page, assignment: Assignment) -> None:
        """What a page's template assignment tells the item, the stats and the records."""
        item.cluster = assignment.cluster
        item.fit = assignment.fit
        ctx = self.ctx
        if assignment.new_cluster:
            ctx.inc("visdup/clusters")
        if assignment.records:
            ctx.inc("visdup/records", len(assignment.records))
            records = [Record(row) for row in assignment.records]
            if not ctx.handoff.give_records(item, records):
                ctx.note(
                    item.url,
                    "records_lost",
                    "records were extracted but visdup.middlewares.RecordsMiddleware is not "
                    "enabled to send them through the item pipelines",
                )

    def _assign(self, url: str, analysis: PageAnalysis) -> Assignment | None:
        assert analysis.template_input is not None
        try:
            return self.ctx.assign(url, analysis.template_input)
        except Exception:
            logger.exception("visdup: cannot cluster %s", url)
            self.ctx.inc("visdup/errors")
            return None


class TermPipeline(_PagePipeline):
    """Page → its analysis: term, structural SimHash, and every other switched-on step."""

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            await self.analysed(item)
        return item


class ContentPipeline(_PagePipeline):
    """Switches the content channel on: main content (seed 001) → text print (seed 002)."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        if not self.ctx.content_enabled:
            raise NotConfigured("VISDUP_CONTENT_ENABLED is False")

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            await self.analysed(item)
        return item


class ClusterPipeline(_PagePipeline):
    """Page → its template cluster (online, CURE-style); records once the template exists.

    With ``LabelPipeline`` on, that pipeline places the page in the same call that labels it
    (one hand-off to the labelling instead of two), so this one only switches the step on.
    """

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        if not self.ctx.config.cluster_enabled:
            raise NotConfigured("VISDUP_CLUSTER_ENABLED is False")

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            analysis = await self.analysed(item)
            if not self.ctx.labels_pages:
                await self.clustered(item, analysis)
        return item


class LabelPipeline(_PagePipeline):
    """Candidates → TED confirmation → label → one transaction in the store."""

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        analysis = await self.analysed(item)
        ctx = self.ctx
        # placed in its template cluster in the same call (the stored row names its cluster)
        place = item.cluster is None and analysis.has_template_input
        tries = 0
        while True:
            try:
                outcome = await ctx.labelled(item, analysis, place, retry=tries > 0)
                ctx.outage.answered()
                break
            except Exception as exc:
                if isinstance(exc, LabelFailed):  # placed, then not stored
                    self.placed(item, exc.assignment)
                    place = False
                if is_outage(exc) and not ctx.outage.gave_up:
                    tries += 1
                    if await ctx.outage.wait(exc, tries):
                        continue  # the same transaction, once more
                self._not_stored(item, exc)
        if outcome.assignment is not None:
            self.placed(item, outcome.assignment)
        return self._finish(item, outcome)

    def _not_stored(self, item: Page, exc: Exception) -> NoReturn:
        """Drop a page the store refused: a bad page with its error, a page of a store that
        stayed away with none (the crawl said so once)."""
        ctx = self.ctx
        ctx.handoff.give_verdict(item, None)
        if is_outage(exc):
            ctx.inc("visdup/store_outage/not_stored")
            raise DropItem(
                f"the store is away: {item.url} is left for the next run", log_level="DEBUG"
            ) from exc
        ctx.inc("visdup/errors")
        logger.exception("visdup: cannot store %s", item.url)
        raise DropItem(f"visdup could not store {item.url}: {exc}", log_level="ERROR") from exc

    def _finish(self, item: Page, outcome: Outcome) -> Page:
        ctx = self.ctx
        item.page_id = page_id = outcome.page_id
        item.problem = problem = outcome.problem
        if problem:
            ctx.inc("visdup/errors")
            ctx.inc("visdup/problems/" + problem.split(" ")[0].split(":")[0])
            logger.warning("visdup: %s: %s", item.url, problem)
        if page_id is None:  # stored before: a page fetched again carries its stored labels
            if outcome.verdict is not None:
                item.verdict, item.kind = outcome.verdict, outcome.kind
                item.duplicate_of, item.similarity = outcome.duplicate_of, outcome.similarity
            ctx.inc("visdup/already_stored")
            ctx.handoff.give_verdict(item, item.verdict)
            if item.verdict in ACTED_ON and ctx.policy in {"drop", "drop_nofollow"}:
                raise DropItem(f"{item.verdict} of page {item.duplicate_of}", log_level="DEBUG")
            return item
        ctx.inc("visdup/pages")
        if outcome.truncated:
            ctx.inc("visdup/truncated")
        item.verdict = verdict = outcome.verdict or NOVEL
        # only a duplicate has a kind and an original (visdup.verdicts)
        item.kind = outcome.kind
        item.similarity = outcome.similarity
        item.duplicate_of = original = outcome.duplicate_of
        ctx.inc(f"visdup/verdict/{verdict}")
        if verdict in ACTED_ON:
            ctx.inc("visdup/duplicates")
            ctx.inc(f"visdup/duplicates/{outcome.kind}")
        ctx.handoff.give_verdict(item, verdict)
        if verdict in ACTED_ON and ctx.policy in {"drop", "drop_nofollow"}:
            raise DropItem(f"{verdict} of page {original}", log_level="DEBUG")
        # pages in the group when this one joined it, whichever of them is its original
        size = outcome.group_size
        if ctx.cluster_cap and size is not None and size > ctx.cluster_cap:
            ctx.inc("visdup/capped")
            raise DropItem(
                f"group of page {original} is over VISDUP_CLUSTER_CAP", log_level="DEBUG"
            )
        return item
