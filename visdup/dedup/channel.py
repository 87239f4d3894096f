"""One way for two pages to be alike: where its candidates come from, how they are ranked,
and how they are confirmed (:class:`Channel`), with the caches and indexes it keeps.

The crawl's structure channel (visual terms, tree edit distance) and content channel (layered
text prints) are two instances, built by :func:`visdup.dedup.label.build_labeller`.
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, TypeVar

from visdup.index import MemoryIndex
from visdup.index.small import SmallTerms
from visdup.index.sql import band_index
from visdup.storage.store import Handle, Store
from visdup.structure.fingerprint import hamming

T = TypeVar("T")


@dataclass
class Match:
    page_id: int
    similarity: float
    kind: str


class ObjectCache(Generic[T]):
    """Recently used stored objects (terms, content prints) keyed by page id."""

    def __init__(self, load: Callable[[list[int]], dict[int, T]], capacity: int = 20_000):
        self._load = load
        self.capacity = capacity
        self._items: OrderedDict[int, T] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, page_id: int, obj: T) -> None:
        with self._lock:
            self._items[page_id] = obj
            self._items.move_to_end(page_id)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def get_many(self, ids: list[int]) -> dict[int, T]:
        with self._lock:
            found = {i: self._items[i] for i in ids if i in self._items}
        missing = [i for i in ids if i not in found]
        if missing:
            for page_id, obj in self._load(missing).items():
                found[page_id] = obj
                self.put(page_id, obj)
        return found


class SharedKeys:
    """Inverted index of exact keys (long-sentence hashes): finds partial copies SimHash misses.

    A page that adds a header and a footer to an article moves its SimHash by more bits than
    the band tables search, but still shares most long sentences with the original. Keys
    shared by many pages (boilerplate) stop counting once their posting list is full.
    """

    def __init__(self, max_postings: int = 64):
        self.max_postings = max_postings
        #: Key → the page that has it, or the pages (most keys belong to one page: a plain
        #: int there saves a list per key).
        self._postings: dict[int, int | list[int]] = {}
        self._keys: dict[int, frozenset[int]] = {}

    def add(self, page_id: int, keys: Iterable[int]) -> None:
        """Index a page's keys; a frozenset is kept as it is (a summary may share it)."""
        mine = keys if isinstance(keys, frozenset) else frozenset(keys)
        self._keys[page_id] = mine
        postings = self._postings
        known = postings.keys() & mine  # in C: most of a page's keys are new
        if len(known) < len(mine):
            postings.update(dict.fromkeys(mine - known if known else mine, page_id))
        for key in known:
            posting = postings[key]
            if isinstance(posting, int):
                postings[key] = [posting, page_id]
            elif len(posting) <= self.max_postings:
                posting.append(page_id)

    def keys(self, page_id: int) -> frozenset[int]:
        return self._keys.get(page_id, frozenset())

    def query(self, keys: Iterable[int], limit: int) -> list[int]:
        """Pages with the largest share of keys in common, best first; boilerplate ignored.

        The share is of the smaller page's keys (containment): a short page quoted whole by a
        long one shares 3 of its 3 sentences, and must rank above a long page that shares 10
        of 100. Ranking by the raw count lost exactly those (bench/bench_recall.py).
        """
        mine = keys if isinstance(keys, (set, frozenset)) else set(keys)
        postings = self._postings
        hits: list[int] = []  # a page once for each key it shares, counted in C below
        for key in postings.keys() & mine:
            posting = postings[key]
            if isinstance(posting, int):
                hits.append(posting)
            elif len(posting) <= self.max_postings:
                hits.extend(posting)
        shared = Counter(hits)
        size = len(mine)
        ranked = sorted(
            shared.items(),
            key=lambda kv: (-kv[1] / max(1, min(size, len(self._keys.get(kv[0], ())))), kv[0]),
        )
        return [page_id for page_id, _n in ranked[:limit]]


#: Hamming radius of the in-memory candidate search. Measured with bench/bench_recall.py: the
#: nearest page at the template threshold lies beyond 10 bits for about 1 % of the pages of a
#: documentation site. The search is a scan of every distinct stored fingerprint
#: (``MemoryIndex(method="scan")``: the text kernel's, else numpy's), complete to the radius:
#: the k=8 band tables it replaced missed pairs 11-14 bits apart that shared no band (3 of 248
#: same-template pages of the PostgreSQL manual), and it is no slower (docs/performance.md).
SEARCH_RADIUS = 16
#: Nearest stored pages (by Hamming distance) each lookup returns, before they are ranked by
#: the measure's cheap bound. Measured with bench/bench_recall.py on 300 pages each: 64 lost 2
#: of 246 structural near-duplicates of warpcore and 3 of 339 same-template pages of the
#: Python manual, 128 none of either, for 13-24 % more exact measures.
LOOKUP_PAGES = 128


class Channel(Generic[T]):
    """One way of being alike: candidate sources, a cheap bound, and a confirming measure.

    Candidates come from the SimHash bands (and shared keys); they are confirmed in the order
    of an upper bound on the measure (``bound``, then the tighter ``refine`` for the one about
    to be measured), not of their Hamming distance, and the confirmation stops as soon as no
    remaining candidate can beat what was found (or reach ``floor``), after ``candidates``
    exact measures, or when the page's work budget is spent.
    """

    def __init__(
        self,
        name: str,
        store: Store,
        *,
        fingerprint_column: str,
        load: Callable[[list[int]], dict[int, T]],
        measure: Callable[[T, T, Any], tuple[float, str | None]],
        accepts: Callable[[T], bool] = lambda _obj: True,
        keys: Callable[[T], Iterable[int]] | None = None,
        good_enough: float = 1.0,
        floor: float = 0.0,
        summarise: Callable[[T], Any] | None = None,
        bound: Callable[[Any, Any], float] | None = None,
        bounds: Callable[[Any, list[Any]], list[float]] | None = None,
        budget: Callable[[], Any] | None = None,
        refine: Callable[[Any, Any, float], float] | None = None,
        refines: Callable[[Any, list[Any], float], list[float]] | None = None,
        shape: Callable[[T], int] | None = None,
        small: Callable[[T], Any] | None = None,
        exact_bound: bool = False,
        k: int,
        max_lookup: int | None = None,
        candidates: int,
        count: Callable[[str, int], None],
    ):
        self.name = name
        self.store = store
        self.column = fingerprint_column
        self.k = k
        self.radius = max(k, SEARCH_RADIUS)
        self.max_candidates = candidates
        self.measure = measure
        self.accepts = accepts
        self.memory = MemoryIndex(k=k, method="scan")
        # shared band rows for other processes (PostgreSQL); None on SQLite: one writer
        self.sql = band_index(store, name, k, max_lookup)
        self.cache: ObjectCache[T] = ObjectCache(load)
        self.order: list[int] = []  # keys in insertion order, for the catch-up check
        self._taken: set[int] = set()  # pages added here, whose objects the channel takes
        self._count = count
        self.keys = keys
        self.good_enough = good_enough
        self.floor = floor
        self.summarise = summarise
        # ``bound`` of all of a page's candidates in one call: the channel's own (the same
        # values, faster), or ``bound`` taken for each
        self.bounds = bounds
        if bounds is None and bound is not None:
            self.bounds = lambda mine, views: [bound(mine, view) for view in views]
        self.new_budget = budget
        # a tighter, costlier ceiling than ``bound``, taken only for the candidate to measure next
        self.refine = refine
        # ``refine`` of several candidates in one call (the final pass's search for a template
        # peer bounds them in a row), or ``refine`` taken for each
        self.refines = refines
        if refines is None and refine is not None:
            self.refines = lambda mine, views, at_least: [
                refine(mine, view, at_least) for view in views
            ]
        # a second fingerprint of the object itself (not stored: computed when pages are added);
        # cached, since candidates, catch-up and insertion each ask for the page's own
        self.shape = lru_cache(maxsize=1024)(shape) if shape is not None else None
        self.shapes = MemoryIndex(k=k, method="scan") if shape is not None else None
        # ``small``: the identity of an object small enough for the exhaustive search (None:
        # not small); its candidates are every stored small object whose bound reaches
        # ``good_enough``, wherever its SimHash lies
        self.small = small if summarise is not None else None
        self.smalls = SmallTerms(good_enough) if self.small is not None else None
        self._summaries: OrderedDict[int, Any] = OrderedDict()
        self._summary_lock = threading.Lock()
        self._last_summary: tuple[Any, Any] | None = None
        self.shared = SharedKeys() if keys is not None else None
        # ``bound`` is the measure's score itself (proved where it is defined): every
        # candidate's score is known without a measure, only its kind (match or not) is not
        self.exact_bound = exact_bound

    def warm(self) -> int:
        n = 0
        for page_id, fp in self.store.fingerprints(self.column):
            self.memory.add(page_id, fp)
            self.order.append(page_id)
            n += 1
        if self.shared is not None or self.shapes is not None or self.smalls is not None:
            for start in range(0, len(self.order), 1000):
                chunk = self.order[start : start + 1000]
                for page_id, obj in self.cache.get_many(chunk).items():
                    self._add_views(page_id, obj)
        return n

    def _add_views(self, page_id: int, obj: T) -> None:
        if self.shared is not None and self.keys is not None:
            self.shared.add(page_id, self.keys(obj))
        if self.shapes is not None and self.shape is not None:
            self.shapes.add(page_id, self.shape(obj))
        if self.smalls is not None and self.small is not None:
            identity = self.small(obj)
            if identity is not None:
                self.smalls.add(page_id, self._own_summary(obj), identity)

    def budget(self) -> Any:
        """A fresh work budget for one page (None: unbounded)."""
        return self.new_budget() if self.new_budget is not None else None

    def candidates(self, fp: int, obj: T | None = None) -> tuple[list[int], int]:
        """Nearest stored pages (SimHash bands, then shared keys), and the watermark."""
        watermark = len(self.order)
        found = [key for key, _fp, _d in self.memory.near(fp, self.radius, LOOKUP_PAGES)]
        known = set(found)
        if self.shapes is not None and self.shape is not None and obj is not None:
            for key, _fp, _d in self.shapes.near(self.shape(obj), self.radius, LOOKUP_PAGES):
                if key not in known:
                    known.add(key)
                    found.append(key)
        small = self.small
        if self.smalls is not None and small is not None and obj is not None and small(obj):
            for key, _bound in self.smalls.query(self._own_summary(obj), LOOKUP_PAGES):
                if key not in known:
                    known.add(key)
                    found.append(key)
        if self.shared is not None and self.keys is not None and obj is not None:
            found += [
                key for key in self.shared.query(self.keys(obj), LOOKUP_PAGES) if key not in known
            ]
        self._count("visdup/candidates", len(found))
        return found, watermark

    def _summaries_of(self, objs: dict[int, T]) -> dict[int, Any]:
        """The summaries of stored objects (page id -> summary), made once per page: one
        look at the cache for all of a page's candidates, not one (and a lock) each."""
        assert self.summarise is not None
        cache = self._summaries
        with self._summary_lock:
            found = {pid: s for pid in objs if (s := cache.get(pid)) is not None}
            for pid in found:
                cache.move_to_end(pid)
        missing = {pid: self.summarise(obj) for pid, obj in objs.items() if pid not in found}
        if missing:
            with self._summary_lock:
                cache.update(missing)
                while len(cache) > self.cache.capacity:
                    cache.popitem(last=False)
            found.update(missing)
        return found

    def _own_summary(self, obj: T) -> Any:
        """The page's own summary: one page is confirmed several times (its candidates, the
        pages stored meanwhile, the original of its content), summarised once."""
        if self.summarise is None:
            return obj
        last = self._last_summary
        if last is not None and last[0] is obj:
            return last[1]
        summary = self.summarise(obj)
        self._last_summary = (obj, summary)  # one tuple: threads read it whole or not at all
        return summary

    def confirm(
        self, obj: T, ids: list[int], budget: Any = None, sink: dict[int, float] | None = None
    ) -> Match | None:
        """The best match at or above the channel's floor, best possible candidates first.

        ``sink`` receives every similarity measured (page id → score), rejected ones included;
        a comparison the work budget skipped measured nothing and is left out.

        Candidates wait in a heap by their ceiling (``bound``). The one on top, before its
        exact measure, gets the tighter ``refine`` ceiling; if that one is lower it goes back
        in the heap, or out of it below the floor. So the costlier bound runs only on the
        candidates that could be measured next, and the search stops on the tighter ceilings.

        With ``exact_bound`` (the bound is the score itself) ``sink`` receives every
        candidate's score, measured or not, as if all were measured; only candidates that
        reach the floor are measured (for their kind), and the search does not stop at
        ``good_enough`` short of a perfect score: the match is the best-scoring one, the first
        stored page on a tie (as the report's replay of the stored scores picks it).
        """
        if not ids or not self.accepts(obj):
            return None
        stored = self.cache.get_many(ids)
        mine = self._own_summary(obj)
        views, ceilings, heap = self._ranked(mine, ids, stored, sink)
        heapq.heapify(heap)
        best: Match | None = None
        measured: set[Any] = set()  # on a templated site many stored pages share one term
        refined: dict[Any, float] = {}  # the refined ceiling of each distinct stored object
        while heap:
            negative, position, page_id = heapq.heappop(heap)
            ceiling = ceilings[page_id]
            if best is not None and (
                ceiling <= best.similarity
                or best.similarity >= self.good_enough
                or (ceiling < self.good_enough and not self.exact_bound)
            ):
                # nothing left can beat it, or only by a score that changes no verdict
                break
            other = stored[page_id]
            if other in measured:
                continue  # the same measure of the same pair: it did not win before
            if len(measured) >= self.max_candidates:
                break
            if self.refine is not None and -negative == ceiling:
                need = self.floor if best is None else max(best.similarity, self.good_enough)
                tighter = refined.get(other)
                if tighter is None:
                    tighter = self.refine(mine, views[page_id], need)
                    if tighter >= need:
                        refined[other] = tighter  # not an early stop: worth reusing
                if tighter < ceiling:
                    ceilings[page_id] = tighter
                    if tighter >= self.floor:
                        heapq.heappush(heap, (-tighter, position, page_id))
                    continue
            measured.add(other)
            skipped = getattr(budget, "skipped", 0)
            score, kind = self.measure(obj, other, budget)
            if sink is not None and getattr(budget, "skipped", 0) == skipped:
                sink[page_id] = max(score, sink.get(page_id, score))
            if kind is not None and (best is None or score > best.similarity):
                best = Match(page_id, score, kind)
        return best

    def _ranked(
        self, mine: Any, ids: list[int], stored: dict[int, T], sink: dict[int, float] | None
    ) -> tuple[dict[int, Any], dict[int, float], list[tuple[float, int, int]]]:
        """The candidates' summaries, their ceilings (``bound``), and the heap they wait in,
        highest ceiling first; those that cannot reach the floor are left out (with
        ``exact_bound``, their scores still go to ``sink``)."""
        first: dict[int, int] = {}  # page id -> its position among the candidates
        taken = self._taken
        for position, page_id in enumerate(ids):
            other = stored.get(page_id)
            if (
                other is not None
                and page_id not in first
                and (page_id in taken or self.accepts(other))
            ):
                first[page_id] = position
        views: dict[int, Any] = (
            self._summaries_of({page_id: stored[page_id] for page_id in first})
            if self.summarise is not None
            else dict(stored)
        )
        ceilings: dict[int, float] = {}
        heap: list[tuple[float, int, int]] = []
        tops = (
            self.bounds(mine, [views[page_id] for page_id in first])
            if self.bounds is not None
            else [1.0] * len(first)
        )
        for (page_id, position), ceiling in zip(first.items(), tops, strict=True):
            if self.bounds is not None:
                if self.exact_bound and sink is not None:
                    sink[page_id] = max(ceiling, sink.get(page_id, ceiling))
                if ceiling < self.floor:
                    continue  # cannot reach the floor: no exact measure needed
            ceilings[page_id] = ceiling
            # on a tie: the nearest candidate first, or with exact scores the first stored,
            # the one the report's replay of the stored scores picks
            heap.append((-ceiling, page_id if self.exact_bound else position, page_id))
        return views, ceilings, heap

    def late(
        self, conn: Handle | None, fp: int, obj: T, seen: list[int], watermark: int
    ) -> list[int]:
        """Near pages stored after the candidates were taken (here or, with ``conn``, by others)."""
        if watermark >= len(self.order) and (conn is None or self.sql is None):
            return []  # none stored since, and no other process stores any
        known = set(seen)
        mine = frozenset(self.keys(obj)) if self.keys is not None else frozenset()
        shape = self.shape(obj) if self.shape is not None and self.shapes is not None else None
        smalls = self.smalls if self.small is not None and self.small(obj) is not None else None
        late = [
            key
            for key in self.order[watermark:]
            if key not in known
            and (
                (
                    (kfp := self.memory.fingerprint(key)) is not None
                    and hamming(kfp, fp) <= self.radius
                )
                or (self.shared is not None and mine & self.shared.keys(key))
                or (
                    shape is not None
                    and self.shapes is not None
                    and (kshape := self.shapes.fingerprint(key)) is not None
                    and hamming(kshape, shape) <= self.radius
                )
                or (smalls is not None and key in smalls)
            )
        ]
        if conn is not None and self.sql is not None:  # pages other processes stored
            known.update(late)
            late += [
                key
                for key, _f, _d in self.sql.query(fp, k=self.k, limit=64, conn=conn)
                if key not in known and key not in self.memory
            ]
        return late[:LOOKUP_PAGES]

    def added(self, page_id: int, fp: int, obj: T) -> None:
        """A page stored with ``obj``, an object the channel takes (``accepts``)."""
        self.memory.add(page_id, fp)
        self.order.append(page_id)
        self._taken.add(page_id)
        self.cache.put(page_id, obj)
        last = self._last_summary
        if last is not None and last[0] is obj:  # the summary it was confirmed with
            with self._summary_lock:
                self._summaries[page_id] = last[1]
                while len(self._summaries) > self.cache.capacity:
                    self._summaries.popitem(last=False)
        self._add_views(page_id, obj)

    def summaries(self, objs: dict[int, T]) -> dict[int, Any]:
        """The summaries of stored objects (page id -> summary): those the labelling made,
        and what the bounds learnt of them, are reused."""
        return self._summaries_of(objs)
