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
from visdup.templates.signature import Layout, marks_agree, outlines_agree, similarity
from visdup.templates.stm import stm_upper_bounds

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
        # A cluster is a group: its atoms by link class (what may_link reads of a signature),
        # its smallest key (the cluster's id), its most common atom, its hubs.
        self._group_of: dict[int, int] = {}
        self._members: dict[int, dict[int, list[int]]] = {}
        self._size: dict[int, int] = {}
        self._pages: dict[int, int] = {}
        self._smallest: dict[int, int] = {}
        self._core: dict[int, int] = {}
        self._hubs: dict[int, list[int]] = {}
        self._links: dict[int, int] = {}
        self._by_id: dict[int, int] = {}
        self._groups = 0
        self._classes: dict[tuple[frozenset[str], tuple[int, ...]], int] = {}
        self._class_list: list[tuple[frozenset[str], tuple[int, ...]]] = []
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
            group = self._group_of[key]
            self._pages[group] += count
            core = self._core[group]
            if (-self.counts[key], key) < (-self.counts[core], core):
                self._core[group] = key
            return self.cluster_of(key)
        self.stats.atoms += 1
        link_class = self._classes.get((layout.marks, layout.outline), -1)
        if link_class < 0:
            link_class = self._classes[(layout.marks, layout.outline)] = len(self._class_list)
            self._class_list.append((layout.marks, layout.outline))
        found = self._index.candidates(layout.paths, layout.nodes, 1.0 - self.threshold)
        groups = sorted(self._members if found is None else found, key=self._smallest.__getitem__)
        # Whether the new atom links to some atom of a cluster does not depend on what it
        # links to elsewhere: each cluster is decided alone, then they all merge at once.
        linked = [g for g in groups if self._reaches(layout, link_class, g)]
        before = {cluster_id(self._smallest[g]) for g in linked}
        self.atoms[key] = layout
        self.counts[key] = count
        self._links[key] = 0
        self._class_of[key] = link_class
        group = self._groups
        self._groups += 1
        self._group_of[key] = group
        self._members[group] = {link_class: [key]}
        self._size[group] = 1
        self._pages[group] = count
        self._smallest[group] = key
        self._core[group] = key
        self._hubs[group] = [key]
        self._by_id[cluster_id(key)] = group
        self._index.put(group, layout.paths)
        for other in linked:
            group = self._merge(group, other)
        self.stats.merges += len(linked)
        final = self.cluster_of(key)
        self.absorbed = sorted(before - {final})
        self.joined = bool(before)
        return final

    def _reaches(self, layout: Layout, link_class: int, group: int) -> bool:
        """Whether ``layout`` is similar enough to one of the group's atoms: its hubs first,
        then the rest, each batch most similar first by the label-path bound."""
        classes = [c for c in self._members[group] if self._may_link(link_class, c)]
        if not classes:
            return False  # other names on <body>, or headings in another order
        allowed = set(classes)
        hubs = [k for k in self._hubs[group] if self._class_of[k] in allowed]
        if hubs and self._first_link(layout, hubs, group):
            return True
        members = self._members[group]
        rest = [k for c in classes for k in members[c] if k not in hubs]
        return bool(rest) and self._first_link(layout, rest, group)

    def _may_link(self, a: int, b: int) -> bool:
        got = self._may.get((a, b))
        if got is None:
            (marks_a, outline_a), (marks_b, outline_b) = self._class_list[a], self._class_list[b]
            got = marks_agree(marks_a, marks_b) and outlines_agree(outline_a, outline_b)
            self._may[(a, b)] = self._may[(b, a)] = got
        return got

    def _first_link(self, layout: Layout, keys: list[int], group: int) -> bool:
        """Whether one of ``keys`` (atoms of ``group``) is similar enough to ``layout``."""
        atoms, threshold, n = self.atoms, self.threshold, layout.nodes
        self.stats.bounds += len(keys)
        common = stm_upper_bounds(layout.paths, [atoms[k].paths for k in keys])
        reachable = []
        for shared, other in zip(common, keys, strict=True):
            total = n + atoms[other].nodes
            bound = 2.0 * shared / total if total else 1.0
            if bound >= threshold:
                reachable.append((-bound, other))
        reachable.sort()
        for _bound, other in reachable:
            self.stats.exact += 1
            if similarity(layout, atoms[other]) >= threshold:
                self._used(other, group)
                return True
        return False

    def _used(self, key: int, group: int) -> None:
        """``key`` linked a new atom: it may become one of its group's hubs."""
        links = self._links
        links[key] += 1
        hubs = self._hubs[group]
        if key not in hubs:
            hubs.append(key)
        hubs.sort(key=lambda k: (-links[k], k))
        del hubs[self.HUBS :]

    def _merge(self, a: int, b: int) -> int:
        """Groups ``a`` and ``b`` as one (the larger one's handle); that handle."""
        if self._size[a] < self._size[b]:
            a, b = b, a
        members = self._members[a]
        for link_class, keys in self._members.pop(b).items():
            members.setdefault(link_class, []).extend(keys)
            for k in keys:
                self._group_of[k] = a
        self._size[a] += self._size.pop(b)
        self._pages[a] += self._pages.pop(b)
        low, high = sorted((self._smallest[a], self._smallest.pop(b)))
        self._smallest[a] = low
        self._by_id.pop(cluster_id(high), None)
        self._by_id[cluster_id(low)] = a
        counts, core = self.counts, self._core.pop(b)
        if (-counts[core], core) < (-counts[self._core[a]], self._core[a]):
            self._core[a] = core
        links = self._links
        hubs = sorted({*self._hubs[a], *self._hubs.pop(b)}, key=lambda k: (-links[k], k))
        self._hubs[a] = hubs[: self.HUBS]
        self._index.merge(a, b)
        return a

    def core(self, cluster: int) -> Layout | None:
        """The cluster's most common signature (ties: the smallest key): what it looks like."""
        group = self._by_id.get(cluster)
        return self.atoms[self._core[group]] if group is not None else None

    def cluster_of(self, key: int) -> int:
        """The id of the cluster holding atom ``key`` (its smallest atom key, as an id)."""
        return cluster_id(self._smallest[self._group_of[key]])

    def clusters(self) -> dict[int, list[int]]:
        """Cluster id → its atom keys (sorted)."""
        out: dict[int, list[int]] = {}
        for group in sorted(self._members, key=self._smallest.__getitem__):
            keys = out.setdefault(cluster_id(self._smallest[group]), [])
            keys.extend(k for ks in self._members[group].values() for k in ks)
            keys.sort()
        return out

    def sizes(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for group, pages in self._pages.items():
            cid = cluster_id(self._smallest[group])
            out[cid] = out.get(cid, 0) + pages
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
