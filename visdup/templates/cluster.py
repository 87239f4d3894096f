"""Template clusters of pages by Simple Tree Matching (seed 003, ALGORITHMS.md §4.2).

Batch: CURE-style agglomeration. Every cluster keeps a few well-scattered representative
pages, one of them the medoid; the distance of two clusters is that of their closest
representatives, shrunk toward the medoids:

    d(C, D) = (1 - shrink) * min over reps r of C, s of D of d(r, s) + shrink * d(mC, mD)

which is the bound the triangle inequality gives for points moved a ``shrink`` fraction of the
way to their cluster's centre; it keeps a long chain of pages from gluing two templates
together. The closest pair merges until the closest distance exceeds ``threshold``.

Exact STM is only run when needed: STM maps a node only together with its parent, so mapped
nodes share their root-to-node label path and the path histograms give a free upper bound on
STM (a lower bound on the distance). Pairs wait in the heap under that bound and are measured
only when they reach its top; most pairs of a large template never are, because their pages
merged with others first.

The input is sorted by key and every tie is broken by key order, so the clusters do not depend
on the order pages arrive in.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from visdup import config
from visdup.templates.stm import (
    DEFAULT_MAX_NODES,
    FlatTree,
    Tree,
    label_paths,
    stm,
    stm_upper_bound,
)

logger = logging.getLogger(__name__)

#: Distance above which two clusters stay apart: the setting's similarity, as a distance.
DEFAULT_THRESHOLD = round(1.0 - config.VISDUP_CLUSTER_THRESHOLD, 9)
#: Representatives kept per cluster (the medoid included).
DEFAULT_REPRESENTATIVES = config.VISDUP_CLUSTER_REPRESENTATIVES
#: Fraction by which representatives are pulled toward the medoid.
DEFAULT_SHRINK = 0.2


@dataclass
class Cluster:
    """A group of pages sharing a template. ``representative``: the page that stands for it
    (:func:`cluster_trees`: the medoid's key; layout clusters: the cleanest URL)."""

    id: int
    members: list[str]
    representative: str
    representatives: list[str] = field(default_factory=list)
    #: Layout clusters: the key of the signature most of its pages carry.
    core: int | None = None

    @property
    def size(self) -> int:
        return len(self.members)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "size": self.size,
            "representative": self.representative,
            "members": list(self.members),
        }


#: How far a bound may pass the best total before it is taken as above it: more than the
#: rounding of any sum of distances, so the true best (and the first on a tie) is never cut.
_SLACK = 1e-9


class _Pages:
    """Trees with their cached path histograms and a cache of measured distances."""

    def __init__(self, trees: Sequence[Tree], max_nodes: int):
        self.trees = trees
        self.max_nodes = max_nodes
        self.nodes = [min(len(t.labels), max_nodes) for t in trees]
        self.paths = [label_paths(t, max_nodes) for t in trees]
        self._exact: dict[tuple[int, int], float] = {}
        self._bound: dict[tuple[int, int], float] = {}
        self.stm_calls = 0

    def bound(self, i: int, j: int) -> float:
        """A lower bound on the distance, free compared with STM."""
        if i == j:
            return 0.0
        key = (i, j) if i < j else (j, i)
        got = self._exact.get(key)
        if got is not None:
            return got
        got = self._bound.get(key)
        if got is None:
            total = self.nodes[i] + self.nodes[j]
            if total == 0:
                got = 0.0
            else:
                ub = stm_upper_bound(self.paths[i], self.paths[j])
                got = max(0.0, 1.0 - 2.0 * ub / total)
            self._bound[key] = got
        return got

    def exact(self, i: int, j: int) -> float:
        if i == j:
            return 0.0
        key = (i, j) if i < j else (j, i)
        got = self._exact.get(key)
        if got is None:
            total = self.nodes[i] + self.nodes[j]
            if total == 0:
                got = 0.0
            else:
                self.stm_calls += 1
                score = stm(self.trees[i], self.trees[j], max_nodes=self.max_nodes)
                got = 1.0 - 2.0 * score / total
            self._exact[key] = got
            self._bound.pop(key, None)
        return got

    def is_exact(self, i: int, j: int) -> bool:
        return i == j or ((i, j) if i < j else (j, i)) in self._exact

    def medoid(self, candidates: Sequence[int]) -> int:
        """The candidate with the least total distance to the others (the first on a tie):
        the one ``min(candidates, key=lambda c: (sum(exact(c, o) for o in candidates), c))``
        gives, with far fewer STM runs.

        Every total is bounded from below by the free bounds, exact distances where known. A
        candidate is taken up in the order of its bound, and measured against the others
        until its bound passes the best total found; the search ends when no bound is below
        it. Totals that are compared are summed in the candidates' order, as that ``min``
        sums them, so a tie is the same tie.
        """

        def lower(c: int) -> float:
            return sum(self.bound(c, o) for o in candidates)

        heap = [(lower(c), c) for c in candidates]
        heapq.heapify(heap)
        best: tuple[float, int] | None = None
        while heap:
            floor, c = heapq.heappop(heap)
            if best is not None and floor > best[0] + _SLACK:
                break  # no total left can reach the best one
            now = lower(c)
            if now > floor:  # exact distances measured since it was queued raised it
                heapq.heappush(heap, (now, c))
                continue
            # the likeliest far ones first: they pass the best total soonest
            for o in sorted(candidates, key=lambda o: (-self.bound(c, o), o)):
                if o == c or self.is_exact(c, o):
                    continue
                below = self.bound(c, o)
                now += self.exact(c, o) - below
                if best is not None and now > best[0] + _SLACK:
                    break
            else:
                total = (sum(self.exact(c, o) for o in candidates), c)
                if best is None or total < best:
                    best = total
        assert best is not None
        return best[1]


class _Group:
    __slots__ = ("medoid", "members", "reps")

    def __init__(self, members: list[int], reps: list[int], medoid: int):
        self.members = members
        self.reps = reps
        self.medoid = medoid


def _choose_reps(pages: _Pages, candidates: list[int], count: int) -> tuple[int, list[int]]:
    """Medoid of the candidates, then farthest-point picks: a few well-scattered pages."""
    candidates = sorted(set(candidates))
    if len(candidates) == 1:
        return candidates[0], candidates
    medoid = pages.medoid(candidates)
    reps = [medoid]
    rest = [c for c in candidates if c != medoid]
    while rest and len(reps) < count:
        far = max(rest, key=lambda c: (min(pages.exact(c, r) for r in reps), -c))
        reps.append(far)
        rest.remove(far)
    return medoid, reps


def _group_distance(pages: _Pages, a: _Group, b: _Group, shrink: float, exact: bool) -> float:
    measure = pages.exact if exact else pages.bound
    closest = min(measure(r, s) for r in a.reps for s in b.reps)
    if shrink <= 0.0:
        return closest
    return (1.0 - shrink) * closest + shrink * measure(a.medoid, b.medoid)


def cluster_trees(
    items: Iterable[tuple[str, Tree]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    representatives: int = DEFAULT_REPRESENTATIVES,
    shrink: float = DEFAULT_SHRINK,
    max_nodes: int = DEFAULT_MAX_NODES,
    stats: dict[str, int] | None = None,
) -> list[Cluster]:
    """Cluster ``(key, tree)`` pairs; clusters come largest first, then by first member key.

    ``stats``, when given, receives ``pages``, ``pairs``, ``candidate_pairs`` (within the
    bound) and ``stm_calls`` (exact STM runs).
    """
    by_key: dict[str, Tree] = {}
    for key, tree in items:
        if key in by_key:
            logger.warning("Page %s given twice; the first copy is clustered", key)
            continue
        by_key[key] = tree
    keys = sorted(by_key)
    if not keys:
        if stats is not None:
            stats.update(pages=0, pairs=0, candidate_pairs=0, stm_calls=0)
        return []
    pages = _Pages([by_key[k] for k in keys], max_nodes)
    groups: dict[int, _Group] = {i: _Group([i], [i], i) for i in range(len(keys))}
    next_id = len(keys)
    # Heap entries: (distance, exact?, group a, group b); stale ones are skipped on pop.
    heap: list[tuple[float, int, int, int]] = []
    ids = sorted(groups)
    for x, i in enumerate(ids):
        for j in ids[x + 1 :]:
            d = pages.bound(i, j)
            if d <= threshold:
                heap.append((d, 0, i, j))
    heapq.heapify(heap)
    candidate_pairs = len(heap)
    while heap:
        d, is_exact, a, b = heapq.heappop(heap)
        if d > threshold:
            break
        ga, gb = groups.get(a), groups.get(b)
        if ga is None or gb is None:
            continue
        if not is_exact:
            exact_d = _group_distance(pages, ga, gb, shrink, exact=True)
            if exact_d <= threshold:
                heapq.heappush(heap, (exact_d, 1, a, b))
            continue
        # Merge a and b into a new group.
        members = sorted(ga.members + gb.members)
        medoid, reps = _choose_reps(pages, ga.reps + gb.reps, representatives)
        merged = _Group(members, reps, medoid)
        del groups[a], groups[b]
        new_id = next_id
        next_id += 1
        for other_id in sorted(groups):
            bd = _group_distance(pages, merged, groups[other_id], shrink, exact=False)
            if bd <= threshold:
                heapq.heappush(heap, (bd, 0, other_id, new_id))
        groups[new_id] = merged
    logger.debug("Clustered %d pages with %d STM runs", len(keys), pages.stm_calls)
    if stats is not None:
        stats.update(
            pages=len(keys),
            pairs=len(keys) * (len(keys) - 1) // 2,
            candidate_pairs=candidate_pairs,
            stm_calls=pages.stm_calls,
        )
    ordered = sorted(groups.values(), key=lambda g: (-len(g.members), g.members[0]))
    return [
        Cluster(
            id=n,
            members=[keys[m] for m in g.members],
            representative=keys[g.medoid],
            representatives=[keys[r] for r in g.reps],
        )
        for n, g in enumerate(ordered)
    ]


def medoid(trees: Sequence[Tree], max_nodes: int = DEFAULT_MAX_NODES) -> int:
    """Index of the tree with the highest total STM similarity to the others (seed 003 §2.4)."""
    return _Pages(trees, max_nodes).medoid(range(len(trees)))


#: Below this many representatives the online clusterer scans them all: cheaper than the index.
_SCAN_BELOW = 24
#: Tokens held by at most this many representatives (plus one per 8 held) are always probed.
_PROBE_POSTINGS = 64


class _PathIndex:
    """Representatives by the occurrences of their label paths, for an exact first filter.

    A page's path histogram is a multiset of tokens (path, k-th occurrence); the STM upper
    bound of two pages is the size of the tokens they share. A representative within reach
    of a page of n nodes must share at least t = (1 - thr)·n/(1 + thr) of them (size
    filter and bound together), so by pigeonhole it shares one of any n - t + 1 tokens of the
    page: the page probes only its rarest ones. The result is a superset of the
    representatives the bound admits, which then go through the same bound: nothing is lost.
    """

    def __init__(self) -> None:
        self.postings: dict[tuple[int, int], set[int]] = {}
        self.owner: dict[int, tuple[int, int]] = {}
        self._slot_of: dict[tuple[int, int], int] = {}
        self._next = 0

    def add(self, cid: int, r: int, paths: dict[int, int]) -> None:
        slot = self._next
        self._next += 1
        self.owner[slot] = (cid, r)
        self._slot_of[(cid, r)] = slot
        postings = self.postings
        for h, count in paths.items():
            for k in range(count):
                got = postings.get((h, k))
                if got is None:
                    postings[(h, k)] = {slot}
                else:
                    got.add(slot)

    def remove(self, cid: int, r: int, paths: dict[int, int]) -> None:
        slot = self._slot_of.pop((cid, r), None)
        if slot is None:
            return
        del self.owner[slot]
        postings = self.postings
        for h, count in paths.items():
            for k in range(count):
                got = postings.get((h, k))
                if got is not None:
                    got.discard(slot)
                    if not got:
                        del postings[(h, k)]

    def candidates(self, paths: dict[int, int], n: int, threshold: float) -> list[int] | None:
        """Sorted slots that may be within reach; None when a full scan is as good."""
        # A full scan costs per representative (most fail the size test at once), the index
        # per token of the page: big pages against few representatives are cheaper scanned.
        if len(self.owner) < max(_SCAN_BELOW, n // 2) or n == 0 or threshold >= 1.0:
            return None
        # One less than the bound asks, so that rounding can never drop a representative.
        need = math.ceil((1.0 - threshold) * n / (1.0 + threshold)) - 1
        if need <= 0:
            return None
        probe = n - need + 1
        postings = self.postings
        empty: set[int] = set()
        ranked: list[tuple[int, set[int]]] = []
        for h, count in paths.items():
            for k in range(count):
                got = postings.get((h, k), empty)
                ranked.append((len(got), got))
        ranked.sort(key=_first)
        # Probing more tokens than needed tightens the filter: a representative within reach
        # then shares at least ``probed - (n - need)`` of them. Cheap (rare) tokens only.
        limit = max(ranked[probe - 1][0], _PROBE_POSTINGS + len(self.owner) // 8)
        probed = probe
        while probed < len(ranked) and ranked[probed][0] <= limit:
            probed += 1
        counts = Counter(chain.from_iterable(got for _, got in ranked[:probed]))
        required = probed - (n - need)
        return sorted(slot for slot, c in counts.items() if c >= required)


def _first(item: tuple[int, Any]) -> int:
    return item[0]


class OnlineClusterer:
    """Assigns pages one at a time to the nearest cluster, or opens a new one.

    Each cluster keeps at most ``representatives`` trees, so a page costs at most that many
    comparisons per candidate cluster however large clusters grow; the path-histogram bound
    rules out most clusters before any STM, and with many representatives an index of their
    label paths (:class:`_PathIndex`) keeps even that bound from running against them all.
    ``cluster_state``/``load_cluster`` give one cluster as a JSON-able dict, so a crawl can
    persist the clusters between runs and processes.
    """

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        representatives: int = DEFAULT_REPRESENTATIVES,
        max_nodes: int = DEFAULT_MAX_NODES,
    ):
        self.threshold = threshold
        self.representatives = max(1, representatives)
        self.max_nodes = max_nodes
        self._next_id = 0
        # cluster id -> list of (key, tree, paths, nodes); the first entry is the founder.
        self._reps: dict[int, list[tuple[str, FlatTree, dict[int, int], int]]] = {}
        self._sizes: dict[int, int] = {}
        self._index = _PathIndex()
        self.stm_calls = 0
        #: Whether the last assign opened a cluster or took a new representative.
        self.changed = False

    @property
    def clusters(self) -> dict[int, int]:
        """Cluster id -> number of pages assigned."""
        return dict(self._sizes)

    def representatives_of(self, cluster_id: int) -> list[str]:
        return [key for key, *_ in self._reps[cluster_id]]

    def _distance(self, tree: Tree, n: int, rep: tuple[Any, ...]) -> float:
        total = n + rep[3]
        if total == 0:
            return 0.0
        self.stm_calls += 1
        return 1.0 - 2.0 * stm(tree, rep[1], max_nodes=self.max_nodes) / total

    def nearest(self, tree: Tree) -> tuple[int | None, float]:
        """(cluster id, distance) of the closest cluster within reach, else (None, 1.0)."""
        return self._nearest(tree, label_paths(tree, self.max_nodes), {})

    def _nearest(
        self, tree: Tree, paths: dict[int, int], measured: dict[tuple[int, int], float]
    ) -> tuple[int | None, float]:
        """nearest() with the page's path histogram given; ``measured`` receives the
        distances computed, by (cluster id, representative)."""
        n = min(len(tree.labels), self.max_nodes)
        candidates: list[tuple[float, int, int]] = []
        for cid, r, rep in self._within_reach(paths, n):
            total = n + rep[3]
            if total == 0:
                lb = 0.0
            else:
                small = min(n, rep[3])
                if 2.0 * small / total < 1.0 - self.threshold:
                    continue
                lb = 1.0 - 2.0 * stm_upper_bound(paths, rep[2]) / total
            if lb <= self.threshold:
                candidates.append((lb, cid, r))
        candidates.sort()
        best: tuple[float, int] | None = None
        for lb, cid, r in candidates:
            if best is not None and lb >= best[0]:
                break
            d = measured[(cid, r)] = self._distance(tree, n, self._reps[cid][r])
            if d <= self.threshold and (best is None or (d, cid) < best):
                best = (d, cid)
        if best is None:
            return None, 1.0
        return best[1], best[0]

    def _within_reach(
        self, paths: dict[int, int], n: int
    ) -> Iterator[tuple[int, int, tuple[Any, ...]]]:
        """Representatives the path bound could admit: all of them, or the index's superset."""
        slots = self._index.candidates(paths, n, self.threshold)
        if slots is None:
            for cid, reps in self._reps.items():
                for r, rep in enumerate(reps):
                    yield cid, r, rep
            return
        for slot in slots:
            cid, r = self._index.owner[slot]
            yield cid, r, self._reps[cid][r]

    def assign(self, key: str, tree: FlatTree) -> int:
        """The id of the cluster ``tree`` joins (a new id when no cluster is close enough)."""
        paths = label_paths(tree, self.max_nodes)
        measured: dict[tuple[int, int], float] = {}
        cid, _ = self._nearest(tree, paths, measured)
        n = min(len(tree.labels), self.max_nodes)
        entry = (key, tree, paths, n)
        self.changed = True
        if cid is None:
            cid = self._next_id
            self._next_id += 1
            self._reps[cid] = [entry]
            self._sizes[cid] = 1
            self._index.add(cid, 0, entry[2])
            return cid
        self.changed = False
        self._sizes[cid] += 1
        reps = self._reps[cid]
        if len(reps) < self.representatives:
            # Keep representatives scattered: a page close to one already kept adds nothing.
            spread = min(
                measured[(cid, r)] if (cid, r) in measured else self._distance(tree, n, rep)
                for r, rep in enumerate(reps)
            )
            if spread > self.threshold / 3:
                reps.append(entry)
                self._index.add(cid, len(reps) - 1, entry[2])
                self.changed = True
        return cid

    def cluster_state(self, cluster_id: int) -> dict[str, Any]:
        """One cluster's size and representatives, JSON-able: stored per cluster by a crawl."""
        return {
            "id": cluster_id,
            "size": self._sizes[cluster_id],
            "representatives": [
                {"key": key, "tree": _tree_dict(tree)} for key, tree, _, _ in self._reps[cluster_id]
            ],
        }

    def load_cluster(self, item: dict[str, Any]) -> None:
        """Add or replace one cluster from :meth:`cluster_state` (another process made it)."""
        cid = int(item["id"])
        reps = []
        for rep in item["representatives"]:
            tree = FlatTree.from_dict(rep["tree"])
            reps.append(
                (
                    rep["key"],
                    tree,
                    label_paths(tree, self.max_nodes),
                    min(tree.nodes, self.max_nodes),
                )
            )
        for r, old in enumerate(self._reps.get(cid, ())):
            self._index.remove(cid, r, old[2])
        self._reps[cid] = reps
        for r, rep in enumerate(reps):
            self._index.add(cid, r, rep[2])
        self._sizes[cid] = int(item["size"])
        self._next_id = max(self._next_id, cid + 1)

    def representative_count(self, cluster_id: int) -> int:
        return len(self._reps.get(cluster_id, ()))

    @property
    def next_id(self) -> int:
        return self._next_id

    def reserve(self, cluster_id: int) -> None:
        """Never hand out ``cluster_id``: it is taken elsewhere (a batch re-clustering)."""
        self._next_id = max(self._next_id, cluster_id + 1)


def _tree_dict(tree: Tree) -> dict[str, Any]:
    if isinstance(tree, FlatTree):
        return tree.to_dict()
    return FlatTree(tree.labels, tree.sizes).to_dict()
