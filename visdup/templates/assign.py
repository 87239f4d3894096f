"""A crawl's template clusters: online assignment, persistence, templates as clusters grow.

Each page joins the nearest cluster through its few well-scattered representatives (seed
003, CURE-style), or opens a new cluster. Clusters live in the store, one row each, so a later
crawl, or another process on PostgreSQL, continues with them: every change bumps a version
number, and a process reloads the clusters written since the version it last saw. Once a
cluster holds enough pages its template is built and stored, and from then on each new page
of the cluster yields a record of the dataset.
"""

from __future__ import annotations

import json
import logging
import threading
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
    #: Records of the dataset that became available with this page (its own, and when the
    #: cluster's template was just built, those of the cluster's earlier pages).
    records: list[dict[str, Any]] = field(default_factory=list)


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
    ):
        self.store = store
        self.template_min_pages = max(2, template_min_pages)
        self.template_max_pages = template_max_pages
        self.min_fit = min_fit
        self.extract = extract
        self.clusterer = OnlineClusterer(threshold=threshold, representatives=representatives)
        self.templates: dict[int, Template] = {}
        self.samples: dict[int, list[tuple[str, FlatTree]]] = {}
        self.version = 0
        self._lock = threading.Lock()
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
                self.samples.pop(row.id, None)
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
        """Templates are always built (the report lists them); records only when asked for."""
        template = self.templates.get(cid)
        if template is not None:
            return [self._record(template, url, tree)] if self.extract else []
        sample = self.samples.setdefault(cid, [])
        sample.append((url, tree))
        if len(sample) < self.template_min_pages:
            return []
        try:
            template = build_template(
                [t for _u, t in sample],
                cluster=cid,
                representative=sample[0][0],
                max_pages=self.template_max_pages,
            )
        except Exception:
            logger.exception("visdup: cannot build the template of cluster %d", cid)
            self.samples[cid] = sample[-self.template_min_pages :]
            return []
        self.templates[cid] = template
        del self.samples[cid]
        self.version += 1
        self.store.put_cluster(conn, cid, version=self.version, template=template.to_dict())
        logger.info("visdup: template of cluster %d built from %d pages", cid, len(sample))
        return [self._record(template, u, t) for u, t in sample] if self.extract else []

    def _record(self, template: Template, url: str, tree: FlatTree) -> dict[str, Any]:
        return extract_record(template, url, tree, min_fit=self.min_fit)
