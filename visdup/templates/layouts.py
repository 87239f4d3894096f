"""Template clusters by layout signature: an index first, the exact measure only on a miss.

Pages with the very same signature (its 64-bit ``key``) are one *atom*; a page whose atom is
already known is placed by one dictionary lookup, with no comparison. A new atom meets only
the clusters that its label-path bound may leave within reach (an index over clusters, not
atoms: :class:`_GroupIndex`), and in each of them only atoms whose ``<body>`` marks and frame
outline agree with its own (:func:`visdup.templates.signature.may_link`): first the
cluster's hubs (the atoms most new atoms linked to), the rest only when no hub links, each
batch most similar first by the bound, and STM on the two small signatures decides. Atoms
whose signatures are at least ``threshold`` similar are linked; a cluster is a connected group
of atoms, so

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
from visdup.templates.region import SHAPE_SHARE, TEXT_SHAPE_SHARE
from visdup.templates.sample import cleanliness
from visdup.templates.signature import (
    Layout,
    marks_agree,
    outlines_agree,
    shapes_agree,
    similarity,
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


class _GroupIndex(_PathIndex):
    """Clusters by the label-path tokens their atoms hold (per path, the largest count of any
    atom): a cluster holding an atom within reach of a page holds every token that atom
    shares with it, so :meth:`_PathIndex.candidates` run on clusters gives a superset of the
    clusters within reach, in time that grows with the clusters, not with their atoms."""

    def __init__(self) -> None:
        super().__init__()
        self.held: dict[int, dict[int, int]] = {}

    def put(self, group: int, paths: dict[int, int]) -> None:
        held = self.held.setdefault(group, {})
        self.owner[group] = (group, 0)
        postings = self.postings
        for h, count in paths.items():
            have = held.get(h, 0)
            if count > have:
                held[h] = count
                for k in range(have, count):
                    got = postings.get((h, k))
                    if got is None:
                        postings[(h, k)] = {group}
                    else:
                        got.add(group)

    def merge(self, into: int, other: int) -> None:
        held = self.held.pop(other)
        del self.owner[other]
        postings = self.postings
        for h, count in held.items():
            for k in range(count):
                postings[(h, k)].discard(other)
        self.put(into, held)


@dataclass(slots=True)
class _Group:
    """A cluster: its atoms by link class (what :func:`may_link` reads of a signature), the
    pages it holds, its smallest atom key (the cluster's id), its most common atom and its
    hubs."""

    members: dict[int, list[int]]
    pages: int
    smallest: int
    core: int
    hubs: list[int]

    @property
    def size(self) -> int:
        return sum(map(len, self.members.values()))


class LayoutClusterer:
    """Online, order-independent clusters of layout signatures."""

    #: Atoms of a cluster tried before the rest of them: those that most new atoms linked to
    #: (a layout's central variants). Only the cost depends on them, never the partition.
    HUBS = 8

    def __init__(self, *, threshold: float = DEFAULT_LAYOUT_THRESHOLD):
        self.threshold = threshold
        self.atoms: dict[int, Layout] = {}
        #: Pages seen per atom.
        self.counts: dict[int, int] = {}
        self.stats = LayoutStats()
        #: Cluster ids that the last :meth:`add` made disappear: merged into its page's
        #: cluster, or renamed because the new atom's key is the cluster's smallest.
        self.absorbed: list[int] = []
        #: Whether the last :meth:`add` joined a cluster that existed (False: a new one).
        self.joined = False
        self._groups: dict[int, _Group] = {}
        self._group_of: dict[int, int] = {}  # atom key -> its group's handle
        self._by_id: dict[int, int] = {}  # cluster id -> its group's handle
        self._next = 0
        #: New atoms each atom linked to: who becomes a hub.
        self._links: dict[int, int] = {}
        self._classes: dict[tuple[frozenset[str], tuple[int, ...], str], int] = {}
        self._class_list: list[tuple[frozenset[str], tuple[int, ...], str]] = []
        self._class_of: dict[int, int] = {}
        self._may: dict[tuple[int, int], bool] = {}
        self._index = _GroupIndex()

    def add(self, layout: Layout, count: int = 1) -> int:
        """Place a page (``count`` pages) of this signature; its cluster's id."""
        self.stats.pages += count
        self.absorbed = []
        key = layout.key
        self.joined = key in self.atoms
        if self.joined:
            self.stats.hits += count
            self.counts[key] += count
            group = self._groups[self._group_of[key]]
            group.pages += count
            group.core = self._commoner(group.core, key)
            return self.cluster_of(key)
        self.stats.atoms += 1
        kind = (layout.marks, layout.outline, layout.shape)
        link_class = self._classes.get(kind, -1)
        if link_class < 0:
            link_class = self._classes[kind] = len(self._class_list)
            self._class_list.append(kind)
        found = self._index.candidates(layout.paths, layout.nodes, 1.0 - self.threshold)
        groups = self._groups
        handles = sorted(groups if found is None else found, key=lambda g: groups[g].smallest)
        # Whether the new atom links to some atom of a cluster does not depend on what it
        # links to elsewhere: each cluster is decided alone, then they all merge at once.
        linked = [g for g in handles if self._reaches(layout, link_class, groups[g])]
        before = {cluster_id(groups[g].smallest) for g in linked}
        self.atoms[key] = layout
        self.counts[key] = count
        self._links[key] = 0
        self._class_of[key] = link_class
        handle = self._next
        self._next += 1
        groups[handle] = _Group({link_class: [key]}, count, key, key, [key])
        self._group_of[key] = handle
        self._by_id[cluster_id(key)] = handle
        self._index.put(handle, layout.paths)
        for other in linked:
            handle = self._merge(handle, other)
        self.stats.merges += len(linked)
        final = self.cluster_of(key)
        self.absorbed = sorted(before - {final})
        self.joined = bool(before)
        return final

    def withdraw(self, key: int, count: int = 1) -> None:
        """Take back ``count`` pages of signature ``key`` that :meth:`add` placed (their
        placing was not stored: they come again, or go without a cluster). The signature and
        the merges it made stay: they do not depend on how many pages carry it."""
        self.stats.pages -= count
        self.counts[key] -= count
        group = self._groups[self._group_of[key]]
        group.pages -= count
        counts = self.counts
        group.core = min(
            (k for keys in group.members.values() for k in keys), key=lambda k: (-counts[k], k)
        )

    def _commoner(self, a: int, b: int) -> int:
        """Of two atoms, the one more pages carry (ties: the smaller key)."""
        counts = self.counts
        return a if (-counts[a], a) < (-counts[b], b) else b

    def _reaches(self, layout: Layout, link_class: int, group: _Group) -> bool:
        """Whether ``layout`` is similar enough to one of the group's atoms: its hubs first,
        then the rest, each batch most similar first by the label-path bound."""
        # the hubs' classes alone first: most new atoms link to a hub, and the gate of every
        # class of a large cluster would cost more than the link
        class_of = self._class_of
        hubs = [k for k in group.hubs if self._may_link(link_class, class_of[k])]
        if hubs and self._first_link(layout, hubs, group):
            return True
        classes = [c for c in group.members if self._may_link(link_class, c)]
        if not classes:
            return False  # other names on <body>, or headings in another order
        rest = [k for c in classes for k in group.members[c] if k not in hubs]
        return bool(rest) and self._first_link(layout, rest, group)

    def _may_link(self, a: int, b: int) -> bool:
        got = self._may.get((a, b))
        if got is None:
            (marks_a, outline_a, shape_a) = self._class_list[a]
            (marks_b, outline_b, shape_b) = self._class_list[b]
            got = (
                marks_agree(marks_a, marks_b)
                and outlines_agree(outline_a, outline_b)
                # the gate never asks more than the threshold: at 0 every page joins
                and shapes_agree(
                    shape_a,
                    shape_b,
                    min(SHAPE_SHARE, self.threshold),
                    min(TEXT_SHAPE_SHARE, self.threshold),
                )
            )
            self._may[(a, b)] = self._may[(b, a)] = got
        return got

    def _first_link(self, layout: Layout, keys: list[int], group: _Group) -> bool:
        """Whether one of ``keys`` (atoms of ``group``) is similar enough to ``layout``."""
        atoms, threshold = self.atoms, self.threshold
        self.stats.bounds += len(keys)
        others = [atoms[k] for k in keys]
        reachable = [
            (-bound, k)
            for bound, k in zip(similarity_bounds(layout, others), keys, strict=True)
            if bound >= threshold
        ]
        reachable.sort()
        for _bound, other in reachable:
            self.stats.exact += 1
            if similarity(layout, atoms[other]) >= threshold:
                self._used(other, group)
                return True
        return False

    def _used(self, key: int, group: _Group) -> None:
        """``key`` linked a new atom: it may become one of its group's hubs."""
        self._links[key] += 1
        if key not in group.hubs:
            group.hubs.append(key)
        self._rank_hubs(group.hubs)

    def _rank_hubs(self, hubs: list[int]) -> None:
        links = self._links
        hubs.sort(key=lambda k: (-links[k], k))
        del hubs[self.HUBS :]

    def _merge(self, a: int, b: int) -> int:
        """Groups ``a`` and ``b`` as one (the larger one's handle); that handle."""
        groups = self._groups
        if groups[a].size < groups[b].size:
            a, b = b, a
        into, gone = groups[a], groups.pop(b)
        for link_class, keys in gone.members.items():
            into.members.setdefault(link_class, []).extend(keys)
            for k in keys:
                self._group_of[k] = a
        into.pages += gone.pages
        low, high = sorted((into.smallest, gone.smallest))
        into.smallest = low
        self._by_id.pop(cluster_id(high), None)
        self._by_id[cluster_id(low)] = a
        into.core = self._commoner(into.core, gone.core)
        into.hubs = list({*into.hubs, *gone.hubs})
        self._rank_hubs(into.hubs)
        self._index.merge(a, b)
        return a

    def core(self, cluster: int) -> Layout | None:
        """The cluster's most common signature (ties: the smallest key): what it looks like."""
        handle = self._by_id.get(cluster)
        return self.atoms[self._groups[handle].core] if handle is not None else None

    def cluster_of(self, key: int) -> int:
        """The id of the cluster holding atom ``key`` (its smallest atom key, as an id)."""
        return cluster_id(self._groups[self._group_of[key]].smallest)

    def clusters(self) -> dict[int, list[int]]:
        """Cluster id → its atom keys (sorted)."""
        out: dict[int, list[int]] = {}
        for group in sorted(self._groups.values(), key=lambda g: g.smallest):
            keys = out.setdefault(cluster_id(group.smallest), [])
            keys.extend(k for ks in group.members.values() for k in ks)
            keys.sort()
        return out

    def sizes(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for group in self._groups.values():
            cid = cluster_id(group.smallest)
            out[cid] = out.get(cid, 0) + group.pages
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

    A cluster's representative is its cleanest key (:func:`visdup.templates.sample.cleanest`,
    as a crawl's), its ``core`` the key of its most common signature: the same for any input
    order.
    """
    pairs = list(items)
    clusterer = LayoutClusterer(threshold=threshold)
    for _key, layout in pairs:
        clusterer.add(layout)
    members: dict[int, list[str]] = {}
    for key, layout in pairs:
        members.setdefault(clusterer.cluster_of(layout.key), []).append(key)
    out = []
    for cid, keys in members.items():
        core = clusterer.core(cid)
        assert core is not None
        keys.sort()
        best = min(keys, key=cleanliness)
        out.append(Cluster(cid, keys, best, core=core.key))
    out.sort(key=lambda c: (-c.size, c.id))
    return out
