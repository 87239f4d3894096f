"""Labelling a crawl's pages: placing each in its template cluster and labelling it.

:class:`Labelling` holds what placing and labelling a page needs (the store, the labeller's
indexes, the template clusters, the site's title affixes, the drift snapshot) and does both
steps for one page at a time: :meth:`Labelling.assign` (its template cluster) and
:meth:`Labelling.label` (candidates, confirmation, verdict, one transaction), or both in one
call (``label(place=True)``: what a crawl with both pipelines sends, so a page crosses once).
It runs in the crawl's process, or in the label process (:mod:`visdup.runtime.label_process`),
which gets each page's analysis and its facts (:class:`~visdup.dedup.jobs.PageJob`) and
answers with a small :class:`~visdup.dedup.jobs.Outcome`: the verdict, what the spider
middlewares and the stats need. When the crawl ends, :meth:`Labelling.close` builds what
templates are left and derives the final labels.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from visdup.config import options
from visdup.content.titles import SiteTitles, retitle
from visdup.dedup.analysis import PageAnalysis
from visdup.dedup.jobs import LabelFailed, Outcome, PageJob
from visdup.dedup.label import Labeller, build_labeller
from visdup.dedup.settle import settle, settle_failed
from visdup.drift.crawl import finish_crawl_snapshot, record_page, say_crawl_snapshot
from visdup.storage.outage import is_outage
from visdup.storage.store import Store
from visdup.templates.assign import Assignment, CrawlClusters
from visdup.templates.signature import TemplateInput
from visdup.verdicts import NOVEL

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from visdup.drift.alarms import Closed
    from visdup.drift.snapshot import Snapshot

logger = logging.getLogger(__name__)


class Labelling:
    """Assign and label pages against one store (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        settings: Any,
        *,
        run_id: int | None,
        snapshot: Snapshot | None,
        count: Callable[[str, int], None],
        processes: Callable[[], Executor | None] | None = None,
        durable_snapshot: bool = False,
    ):
        """``durable_snapshot``: write the snapshot's row of a page fetched again at once (a
        label process: one that dies leaves nothing a new one could not recover).
        ``settings``: :class:`~visdup.config.Options` (or what :func:`visdup.config.options`
        reads them from)."""
        self.store = store
        self.durable_snapshot = durable_snapshot
        self.options = options(settings)
        self.run_id = run_id
        self.snapshot = snapshot
        self.count = count
        self.processes = processes
        self.store_body = self.options.store_body
        self.cluster_cap = self.options.cluster_cap
        #: Title affixes the crawled sites' pages share (visdup.content.titles).
        self.titles = SiteTitles()
        self.labeller: Labeller = build_labeller(store, self.options, count=count)
        #: Pages the indexes hold from earlier runs.
        self.warmed = self.labeller.warm()
        self._clusters: CrawlClusters | None = None
        self._lock = threading.Lock()
        if snapshot is not None:  # its rows follow templates that merge, from the first page on
            snapshot.live = self.live
            snapshot.final_fit = self.final_fit

    def clusters(self) -> CrawlClusters:
        """The crawl's online template clusters (built on first use, thread-safe)."""
        with self._lock:
            if self._clusters is None:
                opts = self.options
                self._clusters = CrawlClusters(
                    self.store,
                    threshold=opts.cluster_threshold,
                    template_min_pages=opts.template_min_pages,
                    template_max_pages=opts.template_max_pages,
                    min_fit=opts.extract_min_fit,
                    extract=opts.extract_items,
                    processes=self.processes,
                )
            return self._clusters

    def live(self, cluster_id: int) -> int:
        """The id a template goes by now (see :meth:`CrawlClusters.live`)."""
        clusters = self._clusters
        return cluster_id if clusters is None else clusters.live(cluster_id)

    def final_fit(self, key: int, cluster_id: int) -> float | None:
        """See :meth:`CrawlClusters.final_fit` (None: the crawl placed no page)."""
        clusters = self._clusters
        return None if clusters is None else clusters.final_fit(key, cluster_id)

    def assign(self, url: str, page: TemplateInput) -> Assignment:
        return self.clusters().assign(url, page)

    def label(
        self, job: PageJob, analysis: PageAnalysis, place: bool = False, retry: bool = False
    ) -> Outcome:
        """Label the page and store it with its links, in one transaction.

        ``place``: first place it in its template cluster (a page crosses to the label process
        once for both); a page that cannot be placed is still labelled, without a cluster.
        ``retry``: sent again after a label process died under it, which may have stored it
        first: then the stored labels are its outcome, as if that process had answered.
        """
        assignment = self._place(job, analysis) if place else None
        try:
            outcome = self._label(job, analysis, retry)
        except Exception as exc:
            if assignment is None:
                raise
            # the placing is stored: the crawl still counts it and gets the records it made
            raise LabelFailed(f"{type(exc).__name__}: {exc}", assignment) from exc
        outcome.assignment = assignment
        return outcome

    def _place(self, job: PageJob, analysis: PageAnalysis) -> Assignment | None:
        if analysis.template_input is None:
            return None
        try:
            assignment = self.assign(job.url, analysis.template_input)
        except Exception as exc:
            if is_outage(exc):
                raise  # the store is away: the page waits for it, placing and all
            logger.exception("visdup: cannot cluster %s", job.url)
            self.count("visdup/errors", 1)
            return None
        job.cluster, job.fit = assignment.cluster, assignment.fit
        return assignment

    def _label(self, job: PageJob, analysis: PageAnalysis, retry: bool) -> Outcome:
        record = analysis.record(keep_body=self.store_body, body=job.body or b"", **job.fetch())
        # the template it was placed in, by the id it goes by now: one that merged into another
        # since (or was renamed by a smaller signature key) has no row left to count the page
        record.cluster_id = self.live(job.cluster) if job.cluster is not None else None
        title = record.title
        record.title = self.titles.own(job.url, title)  # without the site's affixes
        snapshot = self.snapshot
        if retry:
            done = self._stored_outcome(job, analysis)
            if done is not None:
                return done
        stored = snapshot.stored_labels(job.url) if snapshot is not None else None
        if snapshot is not None and stored is not None:
            # fetched again for a new snapshot: recorded there, its labels stay as they are
            record_page(snapshot, job, record, analysis, stored.id, self.run_id, refetched=True)
            if self.durable_snapshot:  # no page row of this run says it was fetched: write now
                snapshot.flush()
            self.count("visdup/drift/refetched", 1)
            return Outcome(
                None,
                problem=record.problem,
                truncated=record.truncated,
                verdict=stored.verdict,
                kind=stored.kind,
                similarity=stored.similarity,
                duplicate_of=stored.duplicate_of,
            )
        if record.problem:
            self.store.add_error(self.run_id, job.url, "parse", record.problem)
        labeller = self.labeller
        prepared = {"structure": labeller.prepare("structure", analysis.simhash, analysis.term)}
        if analysis.content is not None and labeller.channels.get("content") is not None:
            prepared["content"] = labeller.prepare(
                "content", record.content_simhash, analysis.content
            )
        page_id = labeller.commit(record, prepared, self.run_id)
        if page_id is not None:  # its title is set again at the end, by the whole crawl
            self.titles.remember(page_id, job.url, title, record.title)
        # Labelled in threads (no label process), another page's placing may have merged or
        # renamed the template after this page read its id and before it was inserted: that
        # merge moved the template's stored pages without this one. A merge after the insert
        # moves it, so one look now settles it; the move reads the id to go to under the
        # clusters' lock (one more merge may land before it takes the lock).
        if (
            page_id is not None
            and job.cluster is not None
            and record.cluster_id is not None
            and self.live(job.cluster) != record.cluster_id
        ):
            record.cluster_id = self.store.move_page_cluster(page_id, record.cluster_id, self.live)
        if snapshot is not None:  # None: another process stored the URL a moment ago
            held = page_id if page_id is not None else snapshot.page_id(job.url)
            record_page(snapshot, job, record, analysis, held, self.run_id, refetched=False)
        outcome = Outcome(page_id, problem=record.problem, truncated=record.truncated)
        if page_id is None:
            return outcome
        outcome.verdict = record.verdict or NOVEL
        outcome.kind = record.kind  # only a duplicate has a kind and an original
        outcome.similarity = record.similarity
        outcome.duplicate_of = record.duplicate_of
        if self.cluster_cap:
            # pages in the group when this one joined it, whichever of them is its original
            outcome.group_size = labeller.group_size_at(page_id)
        return outcome

    def _stored_outcome(self, job: PageJob, analysis: PageAnalysis) -> Outcome | None:
        """The outcome of a page sent again that a label process which died stored first
        (None: it did not)."""
        mine = self.store.stored_page(job.url)
        if mine is None or mine.run_id != self.run_id:
            return None
        if self.snapshot is not None:  # its row came back with the new process (recover)
            found = analysis.template_input
            self.snapshot.refit(
                mine.id,
                job.url,
                cluster=job.cluster,
                fit=job.fit,
                tree=found.tree if found else None,
                layout_key=found.layout.key if found else None,
            )
        size = None
        if self.cluster_cap:
            size = self.labeller.group_size_then(mine.id, mine.duplicate_of)
        return Outcome(
            mine.id,
            problem=mine.problem,
            truncated=bool(mine.truncated),
            verdict=mine.verdict or NOVEL,
            kind=mine.kind,
            similarity=mine.similarity,
            duplicate_of=mine.duplicate_of,
            group_size=size,
        )

    def close(self, reason: str | None) -> dict[str, Any]:
        """Queued template builds stored, the final labels derived, the snapshot closed: its
        totals for the stats.

        The template builds and the final labels read and write different things (samples
        and templates; pages' titles and labels), so they run side by side: the builds in
        the crawl's analysis workers where it has them (the ``processes`` given: from the
        label process, :mod:`visdup.runtime.relay`), else matching in C without the GIL, on
        the cores the crawl has just left idle, while the final pass runs here. The snapshot
        reads the templates and where each page was placed, never a page's labels: it closes
        beside the final pass too, once the builds are done, and says what it found after
        it, so that its lines come in one order. Neither side depends on the other's timing.
        """
        side: Future[Closed | None] | None = None
        pool = None
        if self._clusters is not None or self.snapshot is not None:
            pool = ThreadPoolExecutor(1, "visdup-final-templates")
            side = pool.submit(self._close_templates, reason)
        failed: Exception | None = None
        try:
            retitle(self.store, self.titles, self.count)
            try:
                settle(self.store, self.labeller, self.count)
            except Exception as exc:
                failed = exc
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        closed = side.result() if side is not None else None  # a build's error first
        if failed is not None:  # the run's own labels stay
            settle_failed(failed, self.count)
        if self.snapshot is None:
            return {}
        return say_crawl_snapshot(self.snapshot, closed)

    def _close_templates(self, reason: str | None) -> Closed | None:
        """Templates still queued built and stored, then the snapshot closed, unsaid."""
        if self._clusters is not None:
            self._clusters.finish()
        if self.snapshot is None:
            return None
        return finish_crawl_snapshot(self.snapshot, reason)
