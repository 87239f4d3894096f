"""A page's placing in its template cluster: what it tells the crawl, and what a placing the
store refused leaves behind.

A placing changes the process's clusters in memory before its transaction commits. When the
store refuses the transaction (it went away), the page's own part is taken back (:class:`Kept`:
it is sent again, or labelled without a cluster), while a new signature and the merges it made
stay in memory, where they cannot be undone, and are owed to the store (:class:`Owed`): the
process's next transaction that commits writes them, so other processes and the next run
place that kind of page in the same cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from visdup.storage.store import Store
from visdup.storage.urls import canonical_url
from visdup.templates.signature import Layout
from visdup.templates.template import Template

__all__ = ["Assignment", "Kept", "Owed", "writes_nothing"]


@dataclass
class Assignment:
    cluster: int
    new_cluster: bool
    #: How closely the page matches its cluster's template layout (1.0: the same skeleton);
    #: None while the cluster has no template.
    fit: float | None = None
    #: Clusters that this page's signature merged into its own (their ids are gone).
    merged: list[int] = field(default_factory=list)
    #: Records of the dataset that became available with this page (its own, and when the
    #: cluster's template was just built, those of the cluster's earlier pages).
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class Owed:
    """A page of a new signature as this process placed it: what its placing stores."""

    layout: Layout
    #: The cluster it was placed in, and the clusters that merged into that one then.
    cluster: int
    absorbed: list[int]
    #: Whether it made a new cluster; the page's URL.
    new: bool
    url: str

    def store(
        self,
        store: Store,
        conn: Any,
        cid: int,
        version: int,
        template: Template | None,
        state: Callable[[int], Any],
    ) -> None:
        """Write the signature, its cluster's row (``cid``, the id it goes by now; ``state``
        gives a cluster's state) and the clusters it merged, at ``version``."""
        layout = self.layout
        store.put_layout(
            conn,
            layout.key,
            cluster_id=cid,
            labels=layout.stored_labels,
            sizes=layout.sizes,
            version=version,
        )
        if self.absorbed:
            gone = sorted({old for old in self.absorbed if old != cid})
            if gone:
                store.merge_clusters(conn, cid, gone)
            store.put_cluster(
                conn,
                cid,
                version=version,
                representative=canonical_url(self.url),
                state=state(cid),
                template=template.to_dict() if template is not None else None,
            )
        else:
            # which page stands for the cluster is settled as the crawl ends, from all of
            # its pages
            store.put_cluster(
                conn,
                cid,
                version=version,
                representative=canonical_url(self.url) if self.new else None,
            )


@dataclass(slots=True)
class Kept:
    """What placing one page changes of its cluster in memory, as it was before: restored
    when the placing's transaction rolls back."""

    cluster: int
    values: list[tuple[dict[int, Any], Any]]
    final: bool

    @classmethod
    def of(cls, maps: Sequence[dict[int, Any]], final: set[int], cid: int) -> Kept:
        """Cluster ``cid``'s entries of the per-cluster ``maps`` (a list copied: placing
        appends to it), and whether it is among the clusters built as the crawl ends."""
        values = []
        for held in maps:
            value = held.get(cid, _ABSENT)
            values.append((held, list(value) if isinstance(value, list) else value))
        return cls(cid, values, cid in final)

    def restore(self, final: set[int]) -> None:
        for held, value in self.values:
            if value is _ABSENT:
                held.pop(self.cluster, None)
            else:
                held[self.cluster] = value
        if not self.final:
            final.discard(self.cluster)


_ABSENT = object()


def writes_nothing() -> Any:
    """The transaction of a placing that must write nothing (a page placed without the
    clusters' lock): asking for it is a bug."""
    raise RuntimeError("a placing without the clusters' lock asked to write")
