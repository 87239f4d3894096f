"""Scrapy item pipelines: thin adapters from page items to one analysis per page.

Each page is analysed once (:func:`visdup.dedup.analysis.analyse`, in a worker process, or a
worker thread with ``VISDUP_ANALYSIS_PROCESSES = 0``) into
an immutable value set on the item's declared ``analysis`` field; the pipelines then only
read it. ``TermPipeline`` and ``ContentPipeline`` make sure the analysis exists,
``ClusterPipeline`` places the page in its template cluster, ``LabelPipeline`` labels and
stores it. Every pipeline works alone and in any order: each first runs the steps it needs
that have not run yet, so swapping priorities changes nothing. Switching ``ContentPipeline``
or ``ClusterPipeline`` off (``None``) switches its step off for the whole crawl.

Items other than :class:`visdup.items.Page` pass through untouched.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.asyncio import run_in_thread

from visdup.context import CrawlContext, check_enabled
from visdup.dedup.analysis import PageAnalysis
from visdup.drift.crawl import record_page
from visdup.items import Page, Record
from visdup.storage.store import PageRecord
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
        """The page's analysis, computed (off the reactor) by the first pipeline to ask."""
        if item.analysis is None:
            analysis = await run_in_thread(self.ctx.analyse, item)
            item.analysis = analysis
            item.tree = None  # the analysis holds what it needs; the response's tree can go
            for kind, note in analysis.notes:
                self.ctx.note(item.url, kind, note)
        return item.analysis

    async def clustered(self, item: Page, analysis: PageAnalysis) -> None:
        """Place the page in its template cluster, once, when the crawl clusters pages."""
        if item.cluster is not None or analysis.template_input is None:
            return
        assignment = await run_in_thread(self._assign, item.url, analysis)
        if assignment is None:
            return
        item.cluster = assignment.cluster
        item.fit = assignment.fit
        ctx = self.ctx
        if assignment.new_cluster:
            ctx.inc("visdup/clusters")
        if assignment.records:
            ctx.inc("visdup/records", len(assignment.records))
            records = [Record(row) for row in assignment.records]
            if not ctx.give_records(item.url, records):
                ctx.note(
                    item.url,
                    "records_lost",
                    "records were extracted but visdup.middlewares.RecordsMiddleware is not "
                    "enabled to send them through the item pipelines",
                )

    def _assign(self, url: str, analysis: PageAnalysis) -> Assignment | None:
        assert analysis.template_input is not None
        try:
            return self.ctx.clusters().assign(url, analysis.template_input)
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
    """Page → its template cluster (online, CURE-style); records once the template exists."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        if not self.ctx.config["VISDUP_CLUSTER_ENABLED"]:
            raise NotConfigured("VISDUP_CLUSTER_ENABLED is False")

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, Page):
            await self.clustered(item, await self.analysed(item))
        return item


class LabelPipeline(_PagePipeline):
    """Candidates → TED confirmation → label → one transaction in the store."""

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        analysis = await self.analysed(item)
        await self.clustered(item, analysis)  # the stored row names its cluster
        ctx = self.ctx
        try:
            page_id, record = await run_in_thread(self._label, item, analysis)
        except Exception as exc:
            ctx.inc("visdup/errors")
            logger.exception("visdup: cannot store %s", item.url)
            ctx.give_verdict(item.url, None)
            raise DropItem(f"visdup could not store {item.url}: {exc}", log_level="ERROR") from exc
        return self._finish(item, page_id, record)

    def _label(self, item: Page, analysis: PageAnalysis) -> tuple[int | None, PageRecord]:
        ctx = self.ctx
        ctx.open()  # a no-op once spider_opened has run
        assert ctx.labeller is not None and ctx.store is not None
        record = analysis.record(
            keep_body=ctx.store_body,
            body=item.body,
            final_url=item.final_url,
            status=item.status,
            depth=item.depth,
            referer=item.referer,
            content_type=item.content_type,
            encoding=item.encoding,
            links=list(item.links),
        )
        record.cluster_id = item.cluster
        record.title = ctx.titles.own(item.url, record.title)  # without the site's affixes
        snapshot = ctx.snapshot
        stored = snapshot.stored_labels(item.url) if snapshot is not None else None
        if snapshot is not None and stored is not None:
            # fetched again for a new snapshot: recorded there, its labels stay as they are
            record_page(snapshot, item, record, analysis, stored.id, ctx.run_id, refetched=True)
            ctx.inc("visdup/drift/refetched")
            item.verdict, item.kind = stored.verdict, stored.kind
            item.duplicate_of, item.similarity = stored.duplicate_of, stored.similarity
            return None, record
        if record.problem:
            ctx.store.add_error(ctx.run_id, item.url, "parse", record.problem)
        labeller = ctx.labeller
        prepared = {"structure": labeller.prepare("structure", analysis.simhash, analysis.term)}
        if analysis.content is not None and labeller.channels.get("content") is not None:
            prepared["content"] = labeller.prepare(
                "content", record.content_simhash, analysis.content
            )
        page_id = labeller.commit(record, prepared, ctx.run_id)
        if snapshot is not None:  # None: another process stored the URL a moment ago
            held = page_id if page_id is not None else snapshot.page_id(item.url)
            record_page(snapshot, item, record, analysis, held, ctx.run_id, refetched=False)
        return page_id, record

    def _finish(self, item: Page, page_id: int | None, record: PageRecord) -> Page:
        ctx = self.ctx
        item.page_id = page_id
        item.problem = record.problem
        if record.problem:
            ctx.inc("visdup/errors")
            ctx.inc("visdup/problems/" + record.problem.split(" ")[0].split(":")[0])
            logger.warning("visdup: %s: %s", item.url, record.problem)
        if page_id is None:  # stored before: a page fetched again carries its stored labels
            ctx.inc("visdup/already_stored")
            ctx.give_verdict(item.url, item.verdict)
            if item.verdict in ACTED_ON and ctx.policy in {"drop", "drop_nofollow"}:
                raise DropItem(f"{item.verdict} of page {item.duplicate_of}", log_level="DEBUG")
            return item
        ctx.inc("visdup/pages")
        if record.truncated:
            ctx.inc("visdup/truncated")
        item.verdict = verdict = record.verdict or NOVEL
        # only a duplicate has a kind and an original (visdup.verdicts)
        item.kind = record.kind
        item.similarity = record.similarity
        item.duplicate_of = original = record.duplicate_of
        ctx.inc(f"visdup/verdict/{verdict}")
        if verdict in ACTED_ON:
            ctx.inc("visdup/duplicates")
            ctx.inc(f"visdup/duplicates/{record.kind}")
        ctx.give_verdict(item.url, verdict)
        if verdict in ACTED_ON and ctx.policy in {"drop", "drop_nofollow"}:
            raise DropItem(f"{verdict} of page {original}", log_level="DEBUG")
        if ctx.cluster_cap and ctx.labeller is not None:
            # pages in the group when this one joined it, whichever of them is its original
            size = ctx.labeller.group_size_at(page_id)
            if size > ctx.cluster_cap:
                ctx.inc("visdup/capped")
                raise DropItem(
                    f"group of page {record.duplicate_of} is over VISDUP_CLUSTER_CAP",
                    log_level="DEBUG",
                )
        return item
