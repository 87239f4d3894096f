"""Template clusters by layout signature: an index first, the exact measure only on a miss.

Pages with the very same signature (its 64-bit ``key``) are one *atom*; a page whose atom is
already known is placed by one dictionary lookup, with no comparison. A new atom is compared
with every known atom that its label-path bound leaves within reach (found through
:class:`visdup.templates.cluster._PathIndex`, a superset of them), and STM on the two small
signatures decides. Atoms whose signatures are at least ``threshold`` similar are linked;
a cluster is a connected group of atoms (union-find), so

- the partition does not depend on the order pages arrive in: every link between two atoms
  is found when the later of them arrives, whichever it is;
- clusters that converge merge: a page that links two clusters joins them;
- a cluster's id comes from the smallest atom key in it, never from arrival order.

:func:`cluster_layouts` (batch) and :class:`LayoutClusterer` (one page at a time) are the same
code, so they agree page for page on the same signatures. Not yet the crawl's clusterer: on
small sites the main-content finder sometimes takes a page's whole content column, and then
two page types of one site chrome share a signature (README, "Template signatures").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from visdup.templates.cluster import _PathIndex
from visdup.templates.signature import Layout, similarity, similarity_bound

#: Signature similarity (2·STM/(n1+n2)) at which two atoms are linked: chosen on the Python
#: manual, checked on the PostgreSQL manual (bench/bench_cluster.py --layouts).
DEFAULT_LAYOUT_THRESHOLD = 0.8


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
        key = layout.key
        if key in self.atoms:
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
        for other_key in others:
            if self._find(other_key) == self._find(key):
                continue  # already linked through another atom: the partition is the same
            other = self.atoms[other_key]
            self.stats.bounds += 1
            if similarity_bound(layout, other) < self.threshold:
                continue
            self.stats.exact += 1
            if similarity(layout, other) >= self.threshold:
                self._union(key, other_key)
        slot = len(self._slot)
        self._slot.append(key)
        self._index.add(slot, 0, layout.paths)
        return self.cluster_of(key)

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
