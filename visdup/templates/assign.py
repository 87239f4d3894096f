"""A crawl's template clusters: online assignment, persistence, templates as clusters grow.

Each page joins the nearest cluster through its few well-scattered representatives (seed
003, CURE-style), or opens a new cluster. Clusters live in the store, one row each, so a later
crawl, or another process on PostgreSQL, continues with them: every change bumps a version
number, and a process reloads the clusters written since the version it last saw.

Templates stay off the page's path. Each cluster keeps a sample of its pages' trees: the
``template_max_pages`` pages whose URL digests are smallest, so the sample is the same in any
order. A template is built once the cluster holds ``template_min_pages`` pages and rebuilt only
when the cluster has doubled since, in one worker thread. When records are asked for
(``VISDUP_EXTRACT_ITEMS``) the first template of a cluster is built at once instead, so that
the records of the pages before it flow with the page that completed it; from then on each new
page of the cluster yields its record. :meth:`CrawlClusters.finish` waits for queued builds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from visdup.storage.locks import CLUSTERS_LOCK, advisory_lock
from visdup.storage.store import Store
from visdup.templates.cluster import OnlineClusterer
from visdup.templates.extract import extract_record
from visdup.templates.stm import FlatTree
from visdup.templates.template import Template, build_template

logger = logging.getLogger(__name__)


@dataclass
class Assignment:
    cluster: int
    new_cluster: bool
    #: How closely the page matches its cluster's template layout (1.0: the same skeleton);
    #: None while the cluster has no template.
    fit: float | None = None
    #: Records of the dataset that became available with this page (its own, and when the
    #: cluster's template was just built, those of the cluster's earlier pages).
    records: list[dict[str, Any]] = field(default_factory=list)


def _rank(url: str) -> int:
    """A page's place in its cluster's sample: the same in every process and order."""
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "big")


class CrawlClusters:
    def __init__(
        self,
        store: Store,
        *,
        threshold: float,
        representatives: int,
        template_min_pages: int = 5,
        template_max_pages: int = 40,
        min_fit: float = 0.95,
        extract: bool = True,
        background: bool = True,
    ):
        self.store = store
        self.template_min_pages = max(2, template_min_pages)
        self.template_max_pages = max(self.template_min_pages, template_max_pages)
        self.min_fit = min_fit
        self.extract = extract
        self.clusterer = OnlineClusterer(threshold=threshold, representatives=representatives)
        self.templates: dict[int, Template] = {}
        #: Cluster id → sample of (rank, url, tree), smallest ranks first.
        self.samples: dict[int, list[tuple[int, str, FlatTree]]] = {}
        #: Cluster id → pages it held when its template was last built (or queued).
        self.built_at: dict[int, int] = {}
        self.sizes: dict[int, int] = {}
        self.version = 0
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(1, "visdup-templates") if background else None
        self._pending: list[Future[None]] = []
        with store.engine.connect() as conn:
            self._reload(conn)

    def _reload(self, conn: Any) -> None:
        for row in self.store.changed_clusters(conn, self.version):
            if row.state:
                self.clusterer.load_cluster(json.loads(row.state))
            else:  # written by a batch re-clustering: keep its id out of the way
                self.clusterer.reserve(row.id)
            if row.template and row.id not in self.templates:
                self.templates[row.id] = Template.from_dict(json.loads(row.template))
            self.version = max(self.version, row.version)

    def assign(self, url: str, tree: FlatTree) -> Assignment:
        """Place one page (thread-safe); persists what changed before returning."""
        with self._lock, self.store.engine.begin() as conn:
            if self.store.is_postgres:
                advisory_lock(conn, [CLUSTERS_LOCK])  # one cluster writer at a time
                if self.store.clusters_version(conn) > self.version:
                    self._reload(conn)
            before_next = self.clusterer.next_id
            cid = self.clusterer.assign(url, tree)
            new = cid >= before_next
            changed = self.clusterer.changed
            self.version += 1
            self.store.put_cluster(
                conn,
                cid,
                version=self.version,
                representative=url if new else None,
                state=self.clusterer.cluster_state(cid) if changed else None,
            )
            result = Assignment(cid, new)
            result.records = self._records(conn, cid, url, tree)
        return result

    def _records(self, conn: Any, cid: int, url: str, tree: FlatTree) -> list[dict[str, Any]]:
        """Keep the page in the sample if it ranks; build or queue the template when due.

        Templates are always built (the report lists their fields); records only when asked.
        """
        size = self.sizes[cid] = self.sizes.get(cid, 0) + 1
        sample = self.samples.setdefault(cid, [])
        rank = _rank(url)
        if len(sample) < self.template_max_pages or (rank, url) < sample[-1][:2]:
            sample.append((rank, url, tree))
            sample.sort(key=_by_rank)
            del sample[self.template_max_pages :]
        template = self.templates.get(cid)
        built = self.built_at.get(cid, 0)
        if size >= self.template_min_pages and (built == 0 or size >= 2 * built):
            self.built_at[cid] = size
            trees = [(u, t) for _r, u, t in sample]
            if template is None and (self.extract or self._pool is None):
                template = self._build(cid, trees)
                if template is None:
                    return []
                self._store_template(conn, cid, template)
                if not self.extract:
                    return []
                earlier = [self._record(template, u, t) for u, t in trees if u != url]
                return [*earlier, self._record(template, url, tree)]
            if self._pool is not None:
                self._pending.append(self._pool.submit(self._build_later, cid, trees))
            else:
                template = self._build(cid, trees) or template
                if template is not None:
                    self._store_template(conn, cid, template)
        if template is not None and self.extract:
            return [self._record(template, url, tree)]
        return []

    def _build(self, cid: int, trees: list[tuple[str, FlatTree]]) -> Template | None:
        try:
            template = build_template(
                [t for _u, t in trees],
                cluster=cid,
                representative=trees[0][0],
                max_pages=self.template_max_pages,
            )
        except Exception:
            logger.exception("visdup: cannot build the template of cluster %d", cid)
            return None
        logger.debug("visdup: template of cluster %d built from %d pages", cid, len(trees))
        return template

    def _build_later(self, cid: int, trees: list[tuple[str, FlatTree]]) -> None:
        template = self._build(cid, trees)
        if template is None:
            return
        with self._lock, self.store.engine.begin() as conn:
            self._store_template(conn, cid, template)

    def _store_template(self, conn: Any, cid: int, template: Template) -> None:
        self.templates[cid] = template
        self.version += 1
        self.store.put_cluster(conn, cid, version=self.version, template=template.to_dict())

    def finish(self) -> None:
        """Wait for the queued template builds (call before the store closes)."""
        pending, self._pending = self._pending, []
        for job in pending:
            job.result()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _record(self, template: Template, url: str, tree: FlatTree) -> dict[str, Any]:
        return extract_record(template, url, tree, min_fit=self.min_fit)


def _by_rank(entry: tuple[int, str, FlatTree]) -> tuple[int, str]:
    return entry[0], entry[1]
