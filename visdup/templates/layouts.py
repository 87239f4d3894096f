"""Template clusters by layout signature: an index first, the exact measure only on a miss.

Pages with the very same signature (its 64-bit ``key``) are one *atom*; a page whose atom is
already known is placed by one dictionary lookup, with no comparison. A new atom is compared
with every known atom that its label-path bound leaves within reach (found through
:class:`visdup.templates.cluster._PathIndex`, a superset of them) and whose ``<body>`` marks
and frame outline agree with its own (:func:`visdup.templates.signature.may_link`), and STM
on the two small signatures decides. Atoms whose signatures are at least ``threshold`` similar
are linked; a cluster is a connected group of atoms (union-find), so

- the partition does not depend on the order pages arrive in: every link between two atoms
  is found when the later of them arrives, whichever it is;
- clusters that converge merge: a page that links two clusters joins them;
- a cluster's id comes from the smallest atom key in it, never from arrival order.

:func:`cluster_layouts` (batch) and :class:`LayoutClusterer` (one page at a time) are the same
code, so they agree page for page on the same signatures; the crawl's clusters
(:class:`visdup.templates.assign.CrawlClusters`) are this clusterer too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from visdup import config
from visdup.templates.cluster import Cluster, _PathIndex
from visdup.templates.signature import (
    Layout,
    may_link,
    similarity,
    similarity_bound,
    similarity_bounds,
)

#: Signature similarity (2·STM/(n1+n2)) at which two atoms are linked (VISDUP_CLUSTER_THRESHOLD).
DEFAULT_LAYOUT_THRESHOLD = config.VISDUP_CLUSTER_THRESHOLD


def cluster_id(key: int) -> int:
    """A positive 31-bit cluster id derived from an atom key (stores keep 32-bit integers)."""
    return (key % 0x7FFFFFFF) + 1


@dataclass
class LayoutStats:
    pages: int = 0
    atoms: int = 0
    #: Exact measures (STM on two signatures) run.
    exact: int = 0
    #: Atoms the bound was computed against.
    bounds: int = 0
    merges: int = 0
    #: Pages placed by the key lookup alone.
    hits: int = 0
    sizes: dict[int, int] = field(default_factory=dict)


class LayoutClusterer:
    """Online, order-independent clusters of layout signatures."""

    def __init__(self, *, threshold: float = DEFAULT_LAYOUT_THRESHOLD):
        self.threshold = threshold
        self.atoms: dict[int, Layout] = {}
        #: Pages seen per atom.
        self.counts: dict[int, int] = {}
        self._parent: dict[int, int] = {}
        self._slot: list[int] = []
        self._index = _PathIndex()
        self.stats = LayoutStats()
        #: Cluster ids that the last :meth:`add` made disappear: merged into its page's
        #: cluster, or renamed because the new atom's key is the cluster's smallest.
        self.absorbed: list[int] = []
        #: Whether the last :meth:`add` joined a cluster that existed (False: a new one).
        self.joined = False

    def _find(self, key: int) -> int:
        parent = self._parent
        root = key
        while parent[root] != root:
            root = parent[root]
        while parent[key] != root:
            parent[key], key = root, parent[key]
        return root

    def _union(self, a: int, b: int) -> bool:
        ra, rb = self._find(a), self._find(b)
        if ra == rb:
            return False
        low, high = (ra, rb) if ra < rb else (rb, ra)
        self._parent[high] = low
        self.stats.merges += 1
        return True

    def add(self, layout: Layout, count: int = 1) -> int:
        """Place a page (``count`` pages) of this signature; its cluster's id."""
        self.stats.pages += count
        self.absorbed = []
        key = layout.key
        self.joined = key in self.atoms
        if self.joined:
            self.stats.hits += count
            self.counts[key] += count
            return self.cluster_of(key)
        self.stats.atoms += 1
        distance = 1.0 - self.threshold
        slots = self._index.candidates(layout.paths, layout.nodes, distance)
        others = self._slot if slots is None else [self._slot[s] for s in slots]
        self.atoms[key] = layout
        self.counts[key] = count
        self._parent[key] = key
        before: set[int] = set()  # ids of the clusters this atom joins, as they were
        by_root: dict[int, list[int]] = {}
        for other_key in others:
            if may_link(layout, self.atoms[other_key]):  # else: other names on <body>, or
                by_root.setdefault(self._find(other_key), []).append(other_key)  # headings
        # One link to a cluster decides the partition: the rest of its atoms need neither a
        # bound nor a measure. Its most common atom first (most pages of a layout look like
        # it), then the rest by their bound, most similar first.
        counts = self.counts
        for root in sorted(by_root):
            members = by_root[root]
            core = min(members, key=lambda k: (-counts[k], k))
            if self._link(layout, core, before):
                continue
            rest = [k for k in members if k != core]
            self.stats.bounds += len(rest)
            bounds = similarity_bounds(layout, [self.atoms[k] for k in rest])
            reachable = [
                (-bound, other_key)
                for bound, other_key in zip(bounds, rest, strict=True)
                if bound >= self.threshold
            ]
            reachable.sort()
            for _bound, other_key in reachable:
                if self._find(other_key) == self._find(key):
                    break  # linked: the partition is the same whatever else links
                if self._link(layout, other_key, before, bounded=True):
                    break
        slot = len(self._slot)
        self._slot.append(key)
        self._index.add(slot, 0, layout.paths)
        final = self.cluster_of(key)
        self.absorbed = sorted(before - {final})
        self.joined = bool(before)
        return final

    def _link(
        self, layout: Layout, other_key: int, before: set[int], *, bounded: bool = False
    ) -> bool:
        """Link ``layout``'s atom to ``other_key`` when their signatures are similar enough
        (``bounded``: the label-path bound was checked already); whether they were."""
        other = self.atoms[other_key]
        if not bounded:
            self.stats.bounds += 1
            if similarity_bound(layout, other) < self.threshold:
                return False
        self.stats.exact += 1
        if similarity(layout, other) < self.threshold:
            return False
        before.add(self.cluster_of(other_key))
        self._union(layout.key, other_key)
        return True

    def core(self, cluster: int) -> Layout | None:
        """The cluster's most common signature (ties: the smallest key): what it looks like."""
        best: tuple[int, int] | None = None
        for key, n in self.counts.items():
            if self.cluster_of(key) == cluster and (best is None or (-n, key) < best):
                best = (-n, key)
        return self.atoms[best[1]] if best is not None else None

    def cluster_of(self, key: int) -> int:
        """The id of the cluster holding atom ``key`` (its smallest atom key, as an id)."""
        return cluster_id(self._find(key))

    def clusters(self) -> dict[int, list[int]]:
        """Cluster id → its atom keys (sorted)."""
        out: dict[int, list[int]] = {}
        for key in sorted(self.atoms):
            out.setdefault(self.cluster_of(key), []).append(key)
        return out

    def sizes(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for key, n in self.counts.items():
            cid = self.cluster_of(key)
            out[cid] = out.get(cid, 0) + n
        return out


def cluster_layouts(
    items: Iterable[tuple[str, Layout]], *, threshold: float = DEFAULT_LAYOUT_THRESHOLD
) -> dict[str, int]:
    """Batch: ``(key, signature)`` pairs → key → cluster id (the crawl's code, in one go)."""
    clusterer = LayoutClusterer(threshold=threshold)
    atom_of: dict[str, int] = {}
    for page, layout in items:
        clusterer.add(layout)
        atom_of[page] = layout.key
    return {page: clusterer.cluster_of(key) for page, key in atom_of.items()}


def layout_clusters(
    items: Iterable[tuple[str, Layout]], *, threshold: float = DEFAULT_LAYOUT_THRESHOLD
) -> list[Cluster]:
    """Batch: the clusters of ``(key, signature)`` pairs, largest first (then by id).

    A cluster's representative is the first key, in sorted order, carrying its most common
    signature: the same for any input order.
    """
    pairs = list(items)
    clusterer = LayoutClusterer(threshold=threshold)
    for _key, layout in pairs:
        clusterer.add(layout)
    members: dict[int, list[str]] = {}
    by_atom: dict[int, list[str]] = {}
    for key, layout in pairs:
        members.setdefault(clusterer.cluster_of(layout.key), []).append(key)
        by_atom.setdefault(layout.key, []).append(key)
    out = []
    for cid, keys in members.items():
        core = clusterer.core(cid)
        assert core is not None
        keys.sort()
        out.append(Cluster(cid, keys, min(by_atom[core.key])))
    out.sort(key=lambda c: (-c.size, c.id))
    return out
