"""Scrapy item pipelines: thin adapters from page items to visdup's steps.

``TermPipeline`` (parse → term → fingerprint), ``ClusterPipeline`` (template cluster),
``ContentPipeline`` (main content → text fingerprint), then ``LabelPipeline`` (candidates →
confirm → label → store). CPU and database work run in the reactor's thread pool, never on
the reactor thread. Items other than :class:`visdup.items.Page` pass through untouched.
"""

from __future__ import annotations

import logging
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from visdup.config import flag
from visdup.context import CrawlContext, check_enabled, setting
from visdup.dedup.analysis import analyse_content, analyse_structure, clean, new_record
from visdup.items import Page, Record
from visdup.page.parse import Document, decode, from_tree, parse_html, screen
from visdup.storage.store import PageRecord
from visdup.templates.assign import Assignment, CrawlClusters
from visdup.templates.stm import dom_tree

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_STATE = "_visdup"
#: Verdicts the duplicate policy acts on (drop, do not follow): structure alone never counts.
ACTED_ON = frozenset({"duplicate", "moved"})


def _state(item: Page) -> dict[str, Any]:
    state = item.__dict__.get(_STATE)
    if state is None:
        state = {}
        object.__setattr__(item, _STATE, state)
    return state


def _document(item: Page) -> Document:
    """Reuse the response's tree unless its charset was a lie (then decode the bytes again)."""
    problem = screen(item.body, item.content_type)
    if problem:
        return Document(None, problem=problem)
    if item.tree is not None:
        enc = (item.encoding or "").lower().replace("_", "-")
        if (
            enc in {"utf-8", "utf8", "ascii", "us-ascii"}
            or decode(item.body[:65536], item.content_type)[0] == enc
        ):
            return from_tree(item.tree, encoding=item.encoding)
    doc = parse_html(item.body, content_type=item.content_type, url=item.final_url)
    declared = (item.encoding or "").lower().replace("_", "-")
    if item.tree is not None and doc.encoding and declared and doc.encoding != declared:
        doc.notes.append(f"charset declared as {declared}, the body is {doc.encoding}")
    return doc


class _PagePipeline:
    """What every visdup pipeline shares: the switch, the crawl's context, the parsed page."""

    def __init__(self, crawler: Crawler):
        check_enabled(crawler)
        self.crawler = crawler
        self.ctx = CrawlContext.of(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @staticmethod
    def _parsed(item: Any) -> tuple[Document, PageRecord, dict[str, Any]] | None:
        """The page's parsed document and record, if the term step could read it."""
        if not isinstance(item, Page):
            return None
        state = _state(item)
        doc: Document | None = state.get("document")
        record: PageRecord | None = state.get("record")
        if doc is None or doc.root is None or record is None:
            return None
        return doc, record, state


class TermPipeline(_PagePipeline):
    """Page → irreducible term, its text form and its 64-bit structural SimHash."""

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        record = await maybe_deferred_to_future(deferToThread(self._compute, item))
        _state(item)["record"] = record
        item.tree = None
        return item

    def _compute(self, item: Page) -> PageRecord:
        record = new_record(
            item.url,
            item.body,
            keep_body=self.ctx.store_body,
            final_url=item.final_url,
            status=item.status,
            depth=item.depth,
            referer=item.referer,
            content_type=item.content_type,
            encoding=None,
            links=list(item.links),
        )
        doc = _document(item)
        record.encoding = doc.encoding or item.encoding
        term = analyse_structure(
            doc, record, classes=self.ctx.visual_classes, denoise=self.ctx.denoise_term
        )
        for note in doc.notes:  # read, but not as declared or not whole
            kind = "charset" if note.startswith("charset") else "truncated"
            self.ctx.inc(f"visdup/notes/{kind}")
            logger.warning("visdup: %s: %s", item.url, note)
        if term is not None:
            _state(item)["term"] = term
            _state(item)["document"] = doc
        return record


class ContentPipeline(_PagePipeline):
    """Page → main content (seed 001) → layered content fingerprint (seed 002)."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        if not self.ctx.content_enabled:
            raise NotConfigured("VISDUP_CONTENT_ENABLED is False")

    async def process_item(self, item: Any) -> Any:
        parsed = self._parsed(item)
        if parsed is None:
            return item
        doc, record, state = parsed
        await maybe_deferred_to_future(deferToThread(self._compute, doc, record, state))
        return item

    def _compute(self, doc: Document, record: PageRecord, state: dict[str, Any]) -> None:
        state["content"] = analyse_content(doc, record)


class ClusterPipeline(_PagePipeline):
    """Page → its template cluster (online, CURE-style); records once the template exists."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        if not flag(setting(crawler, "VISDUP_CLUSTER_ENABLED")):
            raise NotConfigured("VISDUP_CLUSTER_ENABLED is False")
        self.emit = flag(setting(crawler, "VISDUP_EXTRACT_ITEMS"))
        self.clusters: CrawlClusters | None = None
        self._open_lock = threading.Lock()

    def _clusters(self) -> CrawlClusters:
        with self._open_lock:
            if self.clusters is None:
                self.ctx.open()
                assert self.ctx.store is not None
                get = partial(setting, self.crawler)
                self.clusters = CrawlClusters(
                    self.ctx.store,
                    threshold=1.0 - float(get("VISDUP_CLUSTER_THRESHOLD")),
                    representatives=int(get("VISDUP_CLUSTER_REPRESENTATIVES")),
                    template_min_pages=int(get("VISDUP_TEMPLATE_MIN_PAGES")),
                    template_max_pages=int(get("VISDUP_TEMPLATE_MAX_PAGES")),
                    min_fit=float(get("VISDUP_EXTRACT_MIN_FIT")),
                    extract=self.emit,
                )
            return self.clusters

    async def process_item(self, item: Any) -> Any:
        parsed = self._parsed(item)
        if parsed is None:
            return item
        doc, record, _ = parsed
        assignment = await maybe_deferred_to_future(deferToThread(self._assign, doc, record))
        if assignment is None:
            return item
        record.cluster_id = item.cluster = assignment.cluster
        if assignment.new_cluster:
            self.ctx.inc("visdup/clusters")
        scraper = self.crawler.engine.scraper if self.crawler.engine else None
        for row in assignment.records:
            self.ctx.inc("visdup/records")
            if scraper is not None:
                await scraper.start_itemproc_async(Record(row), response=None)
        return item

    def _assign(self, doc: Document, record: PageRecord) -> Assignment | None:
        try:
            clean(doc)
            tree = dom_tree(doc.root, denoise=False)
            if not tree.nodes:
                return None
            return self._clusters().assign(record.url, tree)
        except Exception:
            logger.exception("visdup: cannot cluster %s", record.url)
            self.ctx.inc("visdup/errors")
            return None


class LabelPipeline(_PagePipeline):
    """Candidates → TED confirmation → label → one transaction in the store."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self.term_pipeline: TermPipeline | None = None

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        state = _state(item)
        if "record" not in state:  # used without TermPipeline
            self.term_pipeline = self.term_pipeline or TermPipeline(self.ctx.crawler)
            item = await self.term_pipeline.process_item(item)
        ctx = self.ctx
        try:
            page_id, record = await maybe_deferred_to_future(deferToThread(self._label, item))
        except Exception as exc:
            ctx.inc("visdup/errors")
            logger.exception("visdup: cannot store %s", item.url)
            ctx.give_verdict(item.url, None)
            raise DropItem(f"visdup could not store {item.url}: {exc}", log_level="ERROR") from exc
        return self._finish(item, page_id, record)

    def _label(self, item: Page) -> tuple[int | None, PageRecord]:
        ctx = self.ctx
        ctx.open()  # a no-op once spider_opened has run
        assert ctx.labeller is not None and ctx.store is not None
        state = _state(item)
        record: PageRecord = state["record"]
        term = state.get("term")
        if record.problem:
            ctx.store.add_error(ctx.run_id, item.url, "parse", record.problem)
        labeller = ctx.labeller
        prepared = {"structure": labeller.prepare("structure", record.simhash, term)}
        content = state.get("content")
        if content is not None and labeller.channels.get("content") is not None:
            prepared["content"] = labeller.prepare("content", record.content_simhash, content)
        page_id = labeller.commit(record, prepared, ctx.run_id)
        return page_id, record

    def _finish(self, item: Page, page_id: int | None, record: PageRecord) -> Page:
        ctx = self.ctx
        item.page_id = page_id
        item.problem = record.problem
        if record.problem:
            ctx.inc("visdup/errors")
            ctx.inc("visdup/problems/" + record.problem.split(" ")[0].split(":")[0])
            logger.warning("visdup: %s: %s", item.url, record.problem)
        if page_id is None:
            ctx.inc("visdup/already_stored")
            ctx.give_verdict(item.url, None)
            return item
        ctx.inc("visdup/pages")
        if record.truncated:
            ctx.inc("visdup/truncated")
        item.verdict = verdict = record.verdict or "novel"
        item.kind = record.kind or (record.content_kind and "content")
        item.similarity = record.similarity
        original = record.duplicate_of
        if record.kind != "exact" and record.content_duplicate_of is not None:
            original = record.content_duplicate_of  # the content's original names the copy
        item.duplicate_of = original
        ctx.inc(f"visdup/verdict/{verdict}")
        if verdict in ACTED_ON:
            ctx.inc("visdup/duplicates")
            ctx.inc(f"visdup/duplicates/{record.kind or 'content'}")
        ctx.give_verdict(item.url, verdict)
        if verdict in ACTED_ON and ctx.policy in {"drop", "drop_nofollow"}:
            raise DropItem(f"{verdict} of page {original}", log_level="DEBUG")
        if ctx.cluster_cap and record.duplicate_of is not None:
            size = ctx.group_sizes.get(record.duplicate_of, 1) + 1
            ctx.group_sizes[record.duplicate_of] = size
            if size > ctx.cluster_cap:
                ctx.inc("visdup/capped")
                raise DropItem(
                    f"group of page {record.duplicate_of} is over VISDUP_CLUSTER_CAP",
                    log_level="DEBUG",
                )
        return item
