"""A crawl's template clusters: layout signatures through an index, templates off the path.

A page joins a cluster by its layout signature (:mod:`visdup.templates.signature`): a page
whose signature was met before is placed by one dictionary lookup; a new signature is linked
to the known ones it is similar enough to (:class:`visdup.templates.layouts.LayoutClusterer`),
so the partition and the cluster ids (the smallest signature key in a cluster) do not depend
on the order pages arrive in, and clusters that converge merge: their stored pages follow in
the same transaction. Signatures live in the store (``visdup_layouts``), so a later crawl, or
another process on PostgreSQL, rebuilds the same clusters: every change bumps a version number,
and a process reads the signatures written since the version it last saw, under the clusters'
advisory lock.

Templates stay off the page's path. Each cluster keeps a sample of its pages' trees: the
``template_max_pages`` pages of smallest rank, copies of one page (tracking parameters,
session ids) as one, so the sample is the same in any order and on any host or port
(:mod:`visdup.templates.sample`; the batch commands build from the same sample). A template
is built once the cluster holds ``template_min_pages`` pages, from one worker thread (the
build itself in the crawl's analysis worker processes where there are some: from the label
process through the crawl's process, :mod:`visdup.runtime.relay`; else in that thread), so
that a report of a crawl still running lists it. It is rebuilt once, as the crawl ends, from
the sample the whole crawl leaves (the same in any order), when that sample or its starting
page changed since: every template a crawl ends with is built from it. Rebuilding on the
way, at each doubling, would cost twice the final build's STM work for templates nothing
reads before the end.
When records are asked for (``VISDUP_EXTRACT_ITEMS``) the first template of a cluster is built
at once instead, so that the records of the pages before it flow with the page that completed
it; from then on each new page of the cluster yields its record, and the template is rebuilt
each time the cluster has doubled until its sample is full (then once more at the end).
:meth:`CrawlClusters.finish` waits for queued builds and makes the rebuilds left for the end;
then each cluster's representative becomes the cleanest of its stored pages (a cluster's row
names the page that made it until then).

A page's ``fit`` is the similarity of its signature to the signature its cluster's template
was built on (its *core*), kept with the cluster, so a later crawl measures against the same:
as the page is placed, the core of then; as the crawl ends (:meth:`CrawlClusters.final_fit`,
what a snapshot stores), the cluster's most common signature, the same in any order.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future, ThreadPoolExecutor
from functools import partial
from typing import Any

from visdup.engine import usable_cores
from visdup.storage.locks import CLUSTERS_LOCK
from visdup.storage.outage import is_outage
from visdup.storage.store import Store
from visdup.storage.urls import canonical_url
from visdup.templates import kept_mappings
from visdup.templates.extract import extract_record
from visdup.templates.layouts import DEFAULT_LAYOUT_THRESHOLD, LayoutClusterer
from visdup.templates.placing import Assignment, Kept, Owed, writes_nothing
from visdup.templates.sample import (
    SampleOrder,
    admits,
    choose_sample,
    cleanliness,
    keep_in_sample,
    sample_order,
    starting_page,
)
from visdup.templates.signature import Layout, TemplateInput, make_layout, similarity
from visdup.templates.stm import FlatTree, PackedTree, packed, unpacked
from visdup.templates.template import Template, build_template

logger = logging.getLogger(__name__)


#: Templates rebuilt at once as a crawl ends (:meth:`CrawlClusters.finish`): as many as the
#: cores the process may use, up to four.
FINAL_BUILDS = max(1, min(4, usable_cores()))

#: A page in its cluster's template sample: (its place, url, DOM tree, main text, signature
#: key, title); trees are kept packed (:class:`visdup.templates.stm.PackedTree`).
Sample = tuple[SampleOrder, str, PackedTree, str | None, int, str | None]
#: What a template is built from, a page each: (url, DOM tree, main text, title).
Built = tuple[str, PackedTree, str | None, str | None]


class CrawlClusters:
    def __init__(
        self,
        store: Store,
        *,
        threshold: float = DEFAULT_LAYOUT_THRESHOLD,
        template_min_pages: int = 5,
        template_max_pages: int = 40,
        min_fit: float = 0.95,
        extract: bool = True,
        background: bool = True,
        processes: Callable[[], Executor | None] | None = None,
    ):
        """``processes`` gives where the STM work of a template build runs (the crawl's
        analysis worker processes, when it has them), so that it leaves the crawl's process."""
        self.store = store
        self.processes = processes
        self.template_min_pages = max(2, template_min_pages)
        self.template_max_pages = max(self.template_min_pages, template_max_pages)
        self.min_fit = min_fit
        self.extract = extract
        self.clusterer = LayoutClusterer(threshold=threshold)
        self.templates: dict[int, Template] = {}
        #: Cluster id → the signature its template was built on (a page's fit is measured
        #: against it).
        self.cores: dict[int, Layout] = {}
        #: Cluster id → sample of (place, url, tree, main text, signature key, title), smallest
        #: ranks first.
        self.samples: dict[int, list[Sample]] = {}
        #: Cluster id → its pages so far, while it has no template and records are asked for:
        #: each gets its record when the template comes (a copy of a sampled page is not in
        #: the sample).
        self._early: dict[int, list[Built]] = {}
        #: Cluster id → pages it held when its template was last built (or queued).
        self.built_at: dict[int, int] = {}
        #: Cluster id → pages this process placed in it.
        self.sizes: dict[int, int] = {}
        self.version = 0
        self._fits: dict[tuple[int, int], float] = {}
        #: Ids of clusters merged into another → that one's id.
        self._renamed: dict[int, int] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(1, "visdup-templates") if background else None
        self._pending: list[Future[None]] = []
        #: Clusters whose template is rebuilt as the crawl ends (:meth:`finish`).
        self._final: set[int] = set()
        #: Cluster id → (sample URLs, starting page) its template was last built from.
        self._built_from: dict[int, tuple[tuple[str, ...], int | None]] = {}
        #: Placings of new signatures this process made in memory whose transaction rolled
        #: back (the store went away): written by its next transaction that commits.
        self._owed: list[Owed] = []
        with store.reading() as conn:
            self._reload(conn)

    def _reload(self, conn: Any) -> None:
        """Read what was stored since ``self.version``: signatures first, then cluster rows."""
        since = self.version
        foreign = 0
        for key, labels, sizes in self.store.changed_layouts(conn, since):
            if key in self.clusterer.atoms:
                continue
            layout = make_layout(labels, sizes)
            if layout.key != key:  # written by another signature version: not comparable
                foreign += 1
                continue
            cid = self.clusterer.add(layout, count=0)
            self._absorb_here(cid, self.clusterer.absorbed)
        if foreign:
            logger.warning(
                "visdup: %d template signatures in the store were made by another visdup "
                "version and are not used: the pages stored with them keep their template ids "
                "until `visdup cluster --db` reclusters the stored pages",
                foreign,
            )
        for row in self.store.changed_clusters(conn, since):
            self.version = max(self.version, row.version)
            cid = self.live(row.id)
            if row.template and cid not in self.templates:
                template = Template.from_dict(json.loads(row.template))
                template.cluster = cid
                self.templates[cid] = template
            core = _core_key(row.state)
            if core is not None and core in self.clusterer.atoms and cid not in self.cores:
                self.cores[cid] = self.clusterer.atoms[core]

    def live(self, cluster_id: int) -> int:
        """The id a cluster goes by now (a merged cluster's id leads to the one it joined)."""
        while cluster_id in self._renamed:
            cluster_id = self._renamed[cluster_id]
        return cluster_id

    def assign(self, url: str, page: TemplateInput) -> Assignment:
        """Place one page (thread-safe); persists what changed before returning."""
        layout = page.layout
        with self._lock:
            if not self._owed and self._known_and_current(layout):
                cid = self.clusterer.add(layout)  # known: it joins, and merges nothing
                return self._placed(writes_nothing, cid, url, page, Assignment(cid, False))
        # one cluster writer at a time; the transaction begins when first used: placing a page
        # whose signature is known and that merges nothing writes nothing, and then takes no
        # write lock (SQLite) and makes no commit
        with self._lock:
            stored = self.version
            added: Owed | None = None
            known = True
            before: Kept | None = None
            try:
                with self.store.transaction_on_use(locks=[CLUSTERS_LOCK]) as conn:
                    if (
                        self.store.several_writers
                        and self.store.clusters_version(conn()) > self.version
                    ):
                        self._reload(conn())
                    stored = self.version
                    paid = self._pay_owed(conn, layout.key)
                    known = layout.key in self.clusterer.atoms
                    cid = self.clusterer.add(layout)
                    absorbed = list(self.clusterer.absorbed)
                    added = Owed(layout, cid, absorbed, not self.clusterer.joined, url)
                    if absorbed:
                        self._absorb_here(cid, absorbed)
                    if not known:
                        self._write_placing(conn, added)
                    before = Kept.of(self._placing_maps(), self._final, cid)
                    result = self._placed(conn, cid, url, page, Assignment(cid, added.new))
                    result.merged = absorbed
                    if paid is not None:  # sent again: what its first placing made
                        result.new_cluster, result.merged = paid.new, paid.absorbed
            except BaseException:
                # Rolled back: the store holds none of it, this process keeps what it placed
                # in memory (a cluster's merges cannot be undone there) and writes it with
                # its next transaction. The page itself is taken back: it is sent again, or
                # labelled without a cluster.
                self.version = stored
                if added is not None:
                    if not known:
                        self._owed.append(added)
                    self.clusterer.withdraw(layout.key)
                    if before is not None:
                        before.restore(self._final)
                raise
            self._owed.clear()  # paid in the transaction that committed
            return result

    def _placing_maps(self) -> list[dict[int, Any]]:
        """The per-cluster maps placing a page writes (:class:`Kept` restores them)."""
        return [
            self.sizes,
            self.samples,
            self._early,
            self.built_at,
            self.templates,
            self.cores,
            self._built_from,
        ]

    def _pay_owed(self, conn: Callable[[], Any], key: int) -> Owed | None:
        """Write the placings whose transaction rolled back (in this transaction); the one of
        signature ``key``, if any."""
        paid = None
        for owed in self._owed:
            self._write_placing(conn, owed)
            if owed.layout.key == key:
                paid = owed
        return paid

    def _write_placing(self, conn: Callable[[], Any], placing: Owed) -> None:
        """Store what placing a page of a new signature changed, under the ids its clusters
        go by now."""
        cid = self.live(placing.cluster)
        self.version += 1
        placing.store(self.store, conn(), cid, self.version, self.templates.get(cid), self._state)

    def _known_and_current(self, layout: Layout) -> bool:
        """With several writers (PostgreSQL), whether the page can be placed without the
        clusters' lock and transaction: its signature is known, no other process has written
        a cluster since this one last read them (read in one statement, outside any
        transaction: another writer's change not yet committed is not waited for, which
        places the page as if just before that commit), and the placing cannot write (no
        records asked for, template builds in the background). The lock, the version read
        under it and the commit took five round trips a page."""
        return (
            self.store.several_writers
            and not self.extract
            and self._pool is not None
            and layout.key in self.clusterer.atoms
            and self.store.clusters_version_now() <= self.version
        )

    def _placed(
        self, conn: Callable[[], Any], cid: int, url: str, page: TemplateInput, result: Assignment
    ) -> Assignment:
        """The rest of placing a page in cluster ``cid``: its sample and template, its fit."""
        if page.tree is not None:
            result.records = self._records(conn, cid, url, page, page.layout.key)
        else:
            self.sizes[cid] = self.sizes.get(cid, 0) + 1
        result.fit = self._fit(self.cores.get(cid), page.layout)
        return result

    def _state(self, cid: int) -> dict[str, Any] | None:
        core = self.cores.get(cid)
        return {"core": str(core.key)} if core is not None else None

    def _absorb_here(self, cid: int, absorbed: list[int]) -> None:
        """Fold this process's view of clusters ``absorbed`` into cluster ``cid``."""
        self._renamed.pop(cid, None)  # a live id leads nowhere else (ids are 31-bit digests)
        for old in absorbed:
            if old == cid:
                continue
            self._renamed[old] = cid
            self.sizes[cid] = self.sizes.get(cid, 0) + self.sizes.pop(old, 0)
            sample = self.samples.pop(old, [])
            if sample:
                merged = [*self.samples.get(cid, []), *sample]
                self.samples[cid] = choose_sample(merged, self.template_max_pages)
            early = self._early.pop(old, [])
            if early and cid not in self.templates and old not in self.templates:
                self._early.setdefault(cid, []).extend(early)
            template = self.templates.pop(old, None)
            if template is not None and cid not in self.templates:
                template.cluster = cid
                self.templates[cid] = template
                if old in self.cores:
                    self.cores[cid] = self.cores[old]
            self.cores.pop(old, None)
            if cid in self.templates:  # its records flow from its template from now on
                self._early.pop(cid, None)
            built = self.built_at.pop(old, 0)
            self.built_at[cid] = max(self.built_at.get(cid, 0), built)

    def final_fit(self, key: int, cid: int) -> float | None:
        """The fit of a page of signature ``key`` in cluster ``cid`` (its id now) once every
        page is placed: the same in any order (None: the cluster has no template)."""
        with self._lock:
            layout = self.clusterer.atoms.get(key)
            if layout is None or cid not in self.templates:
                return None
            return self._fit(self.clusterer.core(cid), layout)

    def _fit(self, core: Layout | None, layout: Layout) -> float | None:
        if core is None:
            return None
        if core.key == layout.key:
            return 1.0
        pair = (layout.key, core.key)
        fit = self._fits.get(pair)
        if fit is None:
            fit = self._fits[pair] = round(similarity(layout, core), 4)
        return fit

    def _records(
        self, conn: Callable[[], Any], cid: int, url: str, page: TemplateInput, key: int
    ) -> list[dict[str, Any]]:
        """Keep the page in the sample if it ranks; build or queue the template when due.

        Templates are always built (the report lists their fields); records only when asked.
        """
        tree, text = page.tree, page.text
        assert tree is not None
        size = self.sizes[cid] = self.sizes.get(cid, 0) + 1
        sample = self.samples.setdefault(cid, [])
        order = sample_order(url)
        kept: PackedTree | None = None
        if admits(sample, order, self.template_max_pages):
            kept = packed(tree)
            entry = (order, url, kept, text, key, page.title)
            keep_in_sample(sample, entry, self.template_max_pages)
        template = self.templates.get(cid)
        if template is None and self.extract:
            kept = kept or packed(tree)
            self._early.setdefault(cid, []).append((url, kept, text, page.title))
        built = self.built_at.get(cid, 0)
        # rebuilt on the way only for records (see the module docstring); else in finish()
        again = size >= 2 * built and (self.extract or self._pool is None)
        if size >= self.template_min_pages and (built == 0 or again):
            self.built_at[cid] = size
            trees = [(u, t, x, h) for _r, u, t, x, _k, h in sample]
            medoid = self._medoid(cid, sample)
            self._built_from[cid] = _built_from(sample, medoid)
            if template is None and (self.extract or self._pool is None):
                template = self._build(cid, trees, medoid)
                if template is None:
                    return []
                self._store_template(conn(), cid, template)
                early = self._early.pop(cid, [])
                if not self.extract:
                    return []
                return [self._record(template, u, t, x) for u, t, x, _h in early]
            if (
                self._pool is not None
                and built >= self.template_max_pages
                and len(sample) >= self.template_max_pages
            ):
                # The sample was already full at the last build (queued or done): a rebuild now
                # would only swap some of its pages. Rebuild once, as the crawl ends, from the
                # sample the whole crawl leaves (the same pages in any order).
                self._final.add(cid)
            elif self._pool is not None:
                self._pending.append(self._pool.submit(self._build_later, cid, trees, medoid))
            else:
                template = self._build(cid, trees, medoid) or template
                if template is not None:
                    self._store_template(conn(), cid, template)
        if template is not None and self.extract:
            return [self._record(template, url, tree, text)]
        return []

    def _changed_since_built(self, cid: int) -> bool:
        """Whether cluster ``cid``'s sample, or the page its template starts from, is not
        what its template was last built from (pages came since, or a merge brought its own)."""
        sample = self.samples.get(cid)
        if not sample or len(sample) < self.template_min_pages:
            return False
        return self._built_from.get(cid) != _built_from(sample, self._medoid(cid, sample))

    def _medoid(self, cid: int, sample: list[Sample]) -> int | None:
        """The sample page to generalise from (:func:`visdup.templates.sample.starting_page`:
        of those with its cluster's most common signature, the median by size), found
        without any STM."""
        core = self.clusterer.core(cid)
        if core is None:
            return None
        return starting_page([(entry[4], entry[2].nodes) for entry in sample], core.key)

    def _build(self, cid: int, trees: list[Built], medoid: int | None = None) -> Template | None:
        build = partial(
            build_template,
            [t for _u, t, _x, _h in trees],
            main_texts=[x for _u, _t, x, _h in trees],
            titles=[h for _u, _t, _x, h in trees],
            medoid=medoid,
            cluster=cid,
            keys=[canonical_url(u) for u, _t, _x, _h in trees],
            max_pages=self.template_max_pages,
        )
        try:
            workers = self.processes() if self.processes is not None else None
            job = None
            if workers is not None:
                try:
                    # with the mappings it kept: the snapshot's and the records' reads of the
                    # sample, here, repeat them
                    job = workers.submit(kept_mappings.run_keeping, build)
                except Exception:  # the workers are shutting down, or broke: build here
                    job = None
            try:
                if job is not None:
                    template, kept = job.result()
                    kept_mappings.keep_all(kept)
                else:
                    template = build()
            except BrokenExecutor:  # a worker died under the build (not the build failing)
                template = build()
        except Exception:
            logger.exception("visdup: cannot build the template of cluster %d", cid)
            return None
        logger.debug("visdup: template of cluster %d built from %d pages", cid, len(trees))
        return template

    def _build_all(self, jobs: list[tuple[int, list[Built], int | None]]) -> list[Template | None]:
        """The templates of ``jobs`` (cluster, pages, starting page), in their order, built
        side by side: STM matches without the GIL, and as the crawl ends the cores are free.
        They are stored afterwards, in that order, so that a crawl's clusters come out the
        same however the builds' threads ran."""
        if len(jobs) < 2:
            return [self._build(*job) for job in jobs]
        threads = min(len(jobs), FINAL_BUILDS)
        with ThreadPoolExecutor(threads, "visdup-final-builds") as pool:
            return list(pool.map(lambda job: self._build(*job), jobs))

    def _build_later(self, cid: int, trees: list[Built], medoid: int | None) -> None:
        """A build queued on the way, stored when done. One that cannot be stored (the store
        went away meanwhile) is built again as the crawl ends, and stored then: its failure
        is not the close's (a close that raised left every merge of the run undone)."""
        template = self._build(cid, trees, medoid)
        if template is None:
            return
        try:
            self._store_built(cid, template)
        except Exception as exc:
            with self._lock:
                self._final.add(cid)
            if is_outage(exc):
                logger.info("visdup: the template of cluster %d is stored as the crawl ends", cid)
            else:
                logger.exception("visdup: cannot store the template of cluster %d", cid)

    def _store_built(self, cid: int, template: Template) -> None:
        """Store the template built for cluster ``cid``, under the id it goes by now."""
        with self._lock:
            stored = self.version
            try:
                with self.store.transaction(locks=[CLUSTERS_LOCK]) as conn:
                    # the version this writes must follow every other process's: read theirs
                    # first (a merge there may also have moved this cluster into another)
                    if (
                        self.store.several_writers
                        and self.store.clusters_version(conn) > self.version
                    ):
                        self._reload(conn)
                    stored = self.version
                    self._pay_owed(lambda: conn, 0)
                    live = self.live(cid)
                    if live == cid or live not in self.templates:
                        # (not merged meanwhile into a cluster that has its own template)
                        template.cluster = live
                        self._store_template(conn, live, template)
                self._owed.clear()
            except BaseException:
                # rolled back: this process goes by the version the store holds again, or it
                # would not read another process's next change, written under that number
                self.version = stored
                raise

    def _store_template(self, conn: Any, cid: int, template: Template) -> None:
        self.templates[cid] = template
        core = self.clusterer.core(cid)
        if core is not None:
            self.cores[cid] = core
        self.version += 1
        self.store.put_cluster(
            conn, cid, version=self.version, template=template.to_dict(), state=self._state(cid)
        )

    def finish(self) -> None:
        """Wait for the queued template builds, rebuild the templates whose full sample
        changed since and settle which page stands for each cluster (call before the store
        closes)."""
        with self._lock:
            pending, self._pending = self._pending, []
            final, self._final = set(self._final), set()
        for job in pending:
            job.result()
        # without the build thread too: its last build, at a doubling, saw only the pages
        # come by then
        with self._lock:
            final = {self.live(cid) for cid in final}  # merged since: the one they joined
            final |= {cid for cid in self.templates if self._changed_since_built(cid)}
        jobs: list[tuple[int, list[Built], int | None]] = []
        for cid in sorted(final):
            with self._lock:
                cid = self.live(cid)
                sample = list(self.samples.get(cid, ()))
                medoid = self._medoid(cid, sample) if sample else None
            if not sample:
                continue
            self._built_from[cid] = _built_from(sample, medoid)
            jobs.append((cid, [(u, t, x, h) for _r, u, t, x, _k, h in sample], medoid))
        for cid, template in zip((job[0] for job in jobs), self._build_all(jobs), strict=True):
            if template is None:
                continue
            try:
                self._store_built(cid, template)
            except Exception as exc:
                if is_outage(exc):
                    raise  # the store is away: nothing of the end can be stored (the next run)
                # one template left as it was; the others and the merges go on
                logger.exception("visdup: cannot store the template of cluster %d", cid)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        with self._lock:
            with self.store.transaction(locks=[CLUSTERS_LOCK]) as conn:
                # with one writer (SQLite) every merge saw every page stored before it
                if self.store.several_writers and self.store.clusters_version(conn) > self.version:
                    self._reload(conn)  # merges other processes made since this one last looked
                self._pay_owed(lambda: conn, 0)
                if self.store.several_writers:
                    # A page this process stored under a template as another process merged it
                    # was not committed yet when that merge moved the template's pages: it
                    # follows now.
                    merged: dict[int, list[int]] = {}
                    for old in self._renamed:
                        merged.setdefault(self.live(old), []).append(old)
                    for into, gone in sorted(merged.items()):
                        self.store.merge_clusters(conn, into, sorted(gone))
                self._settle_representatives(conn)
            self._owed.clear()

    def _settle_representatives(self, conn: Any) -> None:
        """Each cluster's representative: the cleanest of all its stored pages
        (:func:`visdup.templates.sample.cleanest`), whichever came first. A cluster's row
        names the page that made it while the crawl runs; pages arrive in another order in
        each crawl, and on another host or port when the site is served elsewhere."""
        best: dict[int, tuple[int, int, str]] = {}
        for cid, url in self.store.cluster_pages(conn):
            order = cleanliness(url)
            held = best.get(cid)
            if held is None or order < held:
                best[cid] = order
        self.store.set_representatives(conn, {cid: order[2] for cid, order in best.items()})

    def _record(
        self, template: Template, url: str, tree: FlatTree | PackedTree, text: str | None
    ) -> dict[str, Any]:
        page = unpacked(tree)
        assert page is not None
        return extract_record(template, url, page, min_fit=self.min_fit, text=text)


def _built_from(sample: list[Sample], medoid: int | None) -> tuple[tuple[str, ...], int | None]:
    """What a template is built from: its sample's URLs and the page it starts from."""
    return tuple(entry[1] for entry in sample), medoid


def _core_key(state: str | None) -> int | None:
    """The core signature's key kept in a cluster row's state (None: none, or older state)."""
    if not state:
        return None
    try:
        value = json.loads(state)
    except ValueError:
        return None
    core = value.get("core") if isinstance(value, dict) else None
    return int(core) if isinstance(core, str) and core.isdigit() else None
