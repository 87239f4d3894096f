"""Candidates → confirm → label → store for one page, safe under concurrency.

Scrapy runs ``process_item`` for many pages at once, and several crawl processes may share a
PostgreSQL store. Two near-duplicates processed at the same moment must still be linked, so
for each channel (the page's structure, its main content):

1. candidates come from an in-memory SimHash index (fast, outside any lock);
2. they are confirmed, nearest first, with the channel's own measure (tree edit distance for
   structure, layered text fingerprints for content), outside any lock;
3. inside one lock (a thread lock in-process, plus ``pg_advisory_xact_lock`` on the page's
   band keys across processes) the pages stored since step 1 are checked too, then the page,
   its fingerprints and its links are written in one transaction.

Both channels together give the page's verdict: **duplicate** (same content, same template,
or a byte-identical copy), **same_template** (new content in a known layout), **moved** (known
content in another layout) or **novel** (:mod:`visdup.verdicts`). A page too thin for the
content channel is a duplicate (kind ``thin``) when its whole visible text and its structure
match a stored page's. A group's original does not depend on crawl order: a page that ranks
before it (:func:`visdup.verdicts.original_rank`) takes its place in the same transaction.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from visdup.config import flag
from visdup.index import MemoryIndex
from visdup.index.sql import band_index
from visdup.storage.store import Handle, PageRecord, Store
from visdup.structure.fingerprint import hamming
from visdup.verdicts import (
    CONTENT,
    DUPLICATE,
    DUPLICATE_VERDICTS,
    EXACT,
    MOVED,
    NOVEL,
    SAME_TEMPLATE,
    STRUCTURAL,
    THIN,
    original_rank,
    same_url,
)

if TYPE_CHECKING:
    from visdup.content.textprint import ContentPrint

logger = logging.getLogger(__name__)

#: A structural match below VISDUP_SIMILARITY_THRESHOLD: one template, not a duplicate.
TEMPLATE = "template"
#: Stored thin pages with the page's visible-text key that its structure is compared with
#: (the first stored of them first: the group's original is among them).
THIN_CANDIDATES = 8
#: Group sizes kept for pages just stored, until their pipeline reads them (the cap).
RECENT_SIZES = 10_000

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
        for key in mine:
            posting = postings.get(key)
            if posting is None:
                postings[key] = page_id
            elif isinstance(posting, int):
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
        mine = set(keys)
        shared: dict[int, int] = {}
        for key in mine:
            posting = self._postings.get(key)
            if posting is None:
                continue
            if isinstance(posting, int):
                shared[posting] = shared.get(posting, 0) + 1
                continue
            if len(posting) > self.max_postings:
                continue
            for page_id in posting:
                shared[page_id] = shared.get(page_id, 0) + 1
        size = len(mine)
        ranked = sorted(
            shared.items(),
            key=lambda kv: (-kv[1] / max(1, min(size, len(self._keys.get(kv[0], ())))), kv[0]),
        )
        return [page_id for page_id, _n in ranked[:limit]]


#: Hamming radius of the in-memory candidate search. Measured with bench/bench_recall.py: the
#: nearest page at the template threshold lies beyond 10 bits for about 1 % of the pages of a
#: documentation site. The search is a numpy scan of every distinct stored fingerprint
#: (``MemoryIndex(method="scan")``), complete to the radius: the k=8 band tables it replaced
#: missed pairs 11-14 bits apart that shared no band (3 of 248 same-template pages of the
#: PostgreSQL manual), and it is no slower: 0.53 against 0.91 ms per lookup among 10^5
#: templated fingerprints (nearest 128 within 16 bits; 38 against 47 µs among 10^4).
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
        shape: Callable[[T], int] | None = None,
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
        # a second fingerprint of the object itself (not stored: computed when pages are added);
        # cached, since candidates, catch-up and insertion each ask for the page's own
        self.shape = lru_cache(maxsize=1024)(shape) if shape is not None else None
        self.shapes = MemoryIndex(k=k, method="scan") if shape is not None else None
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
        if self.shared is not None or self.shapes is not None:
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
        first: dict[int, int] = {}  # page id -> its position among the candidates
        for position, page_id in enumerate(ids):
            other = stored.get(page_id)
            if other is not None and page_id not in first and self.accepts(other):
                first[page_id] = position
        views = (
            self._summaries_of({page_id: stored[page_id] for page_id in first})
            if self.summarise is not None
            else stored
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

    def late(
        self, conn: Handle | None, fp: int, obj: T, seen: list[int], watermark: int
    ) -> list[int]:
        """Near pages stored after the candidates were taken (here or, with ``conn``, by others)."""
        known = set(seen)
        mine = frozenset(self.keys(obj)) if self.keys is not None else frozenset()
        shape = self.shape(obj) if self.shape is not None and self.shapes is not None else None
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
        self.memory.add(page_id, fp)
        self.order.append(page_id)
        self.cache.put(page_id, obj)
        self._add_views(page_id, obj)


@dataclass
class Pending:
    """A page between its candidate search and its commit, for one channel."""

    fp: int | None = None
    obj: Any = None
    seen: list[int] | None = None
    watermark: int = 0
    match: Match | None = None
    #: The page's confirmation work budget, shared by prepare and the catch-up in commit.
    budget: Any = None
    #: Every similarity measured for the page (page id → score), stored with it.
    compared: dict[int, float] = field(default_factory=dict)


class Labeller:
    """All channels of one crawl process, and the one critical section that stores a page."""

    def __init__(
        self,
        store: Store,
        channels: dict[str, Channel[Any]],
        *,
        nofollow_verdicts: frozenset[str] = frozenset(),
        count: Callable[[str, int], None] | None = None,
        comparisons: int = 0,
    ):
        self.store = store
        self.channels = channels
        #: Measured candidates stored per page and channel (VISDUP_COMPARISONS_MAX; 0: none).
        self.comparisons = comparisons if comparisons > 0 and store.comparisons_ready() else 0
        self.nofollow_verdicts = nofollow_verdicts
        self._count = count or (lambda _key, _n: None)
        self._lock = threading.Lock()
        self._parent: dict[int, int] = {}  # page -> its group's original (duplicate_of)
        self._members: dict[int, set[int]] = {}  # original -> the pages that name it
        self._named: dict[int, set[str]] = {}  # original -> canonicals its pages declare
        self._thin: dict[int, list[int]] = {}  # visible-text key -> thin pages with it
        self._sizes: dict[int, int] = {}  # page -> its group's size when it was stored

    def warm(self) -> int:
        """Load every stored fingerprint, so a second crawl finds the first crawl's pages."""
        n = 0
        for channel in self.channels.values():
            n = max(n, channel.warm())
        for row in self.store.rows("id", "duplicate_of", "canonical", "content_print"):
            if row.duplicate_of is not None:
                self._join(row.id, row.duplicate_of, row.canonical)
            key = self._thin_key(row.content_print)
            if key:
                self._thin_add(key, row.id)
        return n

    def prepare(self, name: str, fp: int | None, obj: Any) -> Pending:
        """Steps 1-2 for one channel: candidates and their confirmation (no lock held)."""
        channel = self.channels.get(name)
        if channel is None or fp is None or obj is None or not channel.accepts(obj):
            return Pending()  # this page takes no part in the channel, and is not indexed in it
        pending = Pending(fp=fp, obj=obj, budget=channel.budget())
        pending.seen, pending.watermark = channel.candidates(fp, obj)
        pending.match = channel.confirm(obj, pending.seen, pending.budget, pending.compared)
        return pending

    def catch_up(self, prepared: dict[str, Pending]) -> None:
        """Confirm, outside the lock, the pages this process stored since ``prepare``.

        Under the lock only the pages stored in the meantime remain to check, so a burst of
        near-duplicates does not queue every writer behind one page's confirmations.
        """
        for name, pending in prepared.items():
            channel = self.channels.get(name)
            if channel is None or pending.fp is None or pending.obj is None:
                continue
            watermark = len(channel.order)
            seen = pending.seen or []
            late = channel.late(None, pending.fp, pending.obj, seen, pending.watermark)
            found = channel.confirm(pending.obj, late, pending.budget, pending.compared)
            if found and (pending.match is None or found.similarity > pending.match.similarity):
                pending.match = found
            pending.seen = [*(pending.seen or []), *late]
            pending.watermark = watermark

    def commit(
        self, record: PageRecord, prepared: dict[str, Pending], run_id: int | None
    ) -> int | None:
        """Step 3: catch up, decide, insert; returns the new page id (None: URL already stored)."""
        self.catch_up(prepared)
        # one sorted sweep over every channel's band keys: no two writers deadlock
        keys = [
            key
            for name, pending in prepared.items()
            if name in self.channels and pending.fp is not None
            for key in self._lock_keys(name, pending.fp)
        ]
        with self._lock, self.store.transaction(locks=keys) as conn:
            structure = prepared.get("structure", Pending())
            exact = None
            if record.body_hash and record.problem is None:
                twin = self.store.page_by_body_hash(conn, record.body_hash)
                if twin is not None:
                    exact = Match(twin, 1.0, EXACT)
            matches: dict[str, Match | None] = {}
            for name, pending in prepared.items():
                channel = self.channels.get(name)
                if channel is None or pending.fp is None or pending.obj is None:
                    continue
                match = pending.match
                if not (name == "structure" and exact is not None):
                    late = channel.late(
                        conn, pending.fp, pending.obj, pending.seen or [], pending.watermark
                    )
                    late_match = channel.confirm(
                        pending.obj, late, pending.budget, pending.compared
                    )
                    if late_match and (match is None or late_match.similarity > match.similarity):
                        match = late_match
                matches[name] = match
            content = matches.get("content")
            same_layout = None
            if content is not None and structure.obj is not None and "structure" in self.channels:
                # duplicate or moved: is the page laid out like the page whose content it has?
                same_layout = self.channels["structure"].confirm(
                    structure.obj, [content.page_id], structure.budget, structure.compared
                )
            thin_key = self._thin_key(record.content_print)
            thin = None
            if thin_key and exact is None and content is None:
                thin = self._thin_match(thin_key, structure)
            self._decide(conn, record, exact, matches.get("structure"), content, same_layout, thin)
            replaced = self._elect(conn, record, structure, matches.get("structure"), exact)
            page_id = self.store.insert_page(
                conn, record, run_id, links_followed=record.verdict not in self.nofollow_verdicts
            )
            if page_id is None:
                return None
            self._store_comparisons(conn, page_id, prepared)
            if replaced is not None:
                self._take_over(conn, page_id, *replaced)
            for name, pending in prepared.items():
                shared = self.channels[name].sql if name in self.channels else None
                if shared is not None and pending.fp is not None:
                    shared.add(page_id, pending.fp, conn=conn)
        # committed: now visible to this process's later pages
        for name, pending in prepared.items():
            if name in self.channels and pending.fp is not None:
                self.channels[name].added(page_id, pending.fp, pending.obj)
        if replaced is not None:
            self._swapped(page_id, replaced, record)
        elif record.duplicate_of is not None:
            self._join(page_id, record.duplicate_of, record.canonical)
        elif record.canonical:
            self._named.setdefault(page_id, set()).add(record.canonical)
        if thin_key:
            self._thin_add(thin_key, page_id)
        group = record.duplicate_of if record.duplicate_of is not None else page_id
        self._sizes[page_id] = len(self._members.get(group, ())) + 1
        while len(self._sizes) > RECENT_SIZES:
            self._sizes.pop(next(iter(self._sizes)))
        return page_id

    def _store_comparisons(self, conn: Handle, page_id: int, prepared: dict[str, Pending]) -> None:
        """The page's measured candidates, the best ``comparisons`` per channel, with its row."""
        if self.comparisons <= 0:
            return
        rows = [
            (other, name, round(score, 6))
            for name, pending in prepared.items()
            for other, score in sorted(pending.compared.items(), key=lambda kv: (-kv[1], kv[0]))[
                : self.comparisons
            ]
        ]
        self.store.add_comparisons(conn, page_id, rows)

    def group_size_at(self, page_id: int | None) -> int:
        """Pages in a recently stored page's group when it joined (its original included)."""
        if page_id is None:
            return 1
        return self._sizes.pop(page_id, 1)

    def group_size_then(self, page_id: int, original: int | None) -> int:
        """What :meth:`group_size_at` gave for a page stored before this labeller started
        (a label process that died before answering): its group's pages up to it."""
        group = original if original is not None else page_id
        return sum(1 for m in self._members.get(group, ()) if m <= page_id) + 1

    def _lock_keys(self, name: str, fp: int) -> list[int]:
        """Advisory lock keys of a page's fingerprint (PostgreSQL only: SQLite has one writer)."""
        shared = self.channels[name].sql
        return shared.lock_keys(fp) if shared is not None else []

    def _decide(
        self,
        conn: Handle,
        record: PageRecord,
        exact: Match | None,
        structure: Match | None,
        content: Match | None,
        same_layout: Match | None = None,
        thin: Match | None = None,
    ) -> None:
        """One verdict from every channel; only a duplicate names its group's original.

        ``kind`` says which evidence made the duplicate: a byte-identical copy, the same main
        content, the same visible text on a thin page, or, when the structure channel decides
        alone, near-identical structure. Structural similarity is kept as a measure on every
        page, but with the content channel on it never makes a duplicate by itself.
        """
        record.duplicate_of = record.kind = record.content_duplicate_of = None
        if structure is not None:
            record.similarity = round(structure.similarity, 6)
        if content is not None:
            record.content_duplicate_of = self._root(conn, content.page_id)
            record.content_similarity = round(content.similarity, 6)
            record.content_kind = content.kind
        if exact is not None:
            record.verdict, record.kind, record.similarity = DUPLICATE, EXACT, 1.0
            record.duplicate_of = self._root(conn, exact.page_id)
        elif content is not None:
            record.verdict = DUPLICATE if same_layout is not None else MOVED
            record.kind = CONTENT
            record.duplicate_of = record.content_duplicate_of
        elif thin is not None:
            record.verdict, record.kind = DUPLICATE, THIN
            record.duplicate_of = self._root(conn, thin.page_id)
        elif (
            structure is not None
            and structure.kind == STRUCTURAL
            and "content" not in self.channels
        ):
            record.verdict, record.kind = DUPLICATE, STRUCTURAL
            record.duplicate_of = self._root(conn, structure.page_id)
        else:
            record.verdict = SAME_TEMPLATE if structure is not None else NOVEL

    def _root(self, conn: Handle, page_id: int) -> int:
        """Follow ``duplicate_of`` links to the group's original (a page that names none)."""
        seen = {page_id}
        while True:
            parent = self._parent.get(page_id)
            if parent is None and self.store.several_writers:  # maybe another process stored it
                parent = self.store.parent_of(conn, page_id, "duplicate_of")
            if parent is None or parent in seen:
                return page_id
            seen.add(parent)
            page_id = parent

    def _join(self, page_id: int, original: int, canonical: str | None) -> None:
        self._parent[page_id] = original
        self._members.setdefault(original, set()).add(page_id)
        if canonical:
            self._named.setdefault(original, set()).add(canonical)

    # ------------------------------------------------------------------ thin pages

    def _thin_key(self, content_print: str | None) -> int:
        """The visible-text key of a page too thin for the content channel, else 0."""
        channel = self.channels.get("content")
        if channel is None or not content_print or '"thin"' not in content_print:
            return 0
        from visdup.content.textprint import ContentPrint

        try:
            cp = ContentPrint.from_json(content_print)
        except (ValueError, KeyError):
            return 0
        return 0 if channel.accepts(cp) else cp.thin

    def _thin_add(self, key: int, page_id: int) -> None:
        pages = self._thin.setdefault(key, [])
        if len(pages) < THIN_CANDIDATES:
            pages.append(page_id)

    def _thin_match(self, key: int, structure: Pending) -> Match | None:
        """A stored thin page with the same visible text and near-identical structure."""
        ids = self._thin.get(key)
        channel = self.channels.get("structure")
        if not ids or channel is None or structure.obj is None:
            return None
        match = channel.confirm(structure.obj, list(ids), structure.budget, structure.compared)
        if match is None or match.kind != STRUCTURAL:
            return None  # same words in another layout: a login box and a 404 may share them
        return Match(match.page_id, match.similarity, THIN)

    # ------------------------------------------------------------------ originals

    def _elect(
        self,
        conn: Handle,
        record: PageRecord,
        structure: Pending,
        measured: Match | None = None,
        exact: Match | None = None,
    ) -> tuple[int, str, str] | None:
        """Before the insert: does the new page rank before its group's original?

        Then it takes the original's place (and verdict); the returned (old original, verdict,
        kind) is what :meth:`_take_over` gives the old original. A byte-identical copy that
        takes over keeps the similarity its structure channel measured (``measured``), as an
        original does; where its twin (``exact``) was not the original but one of its
        duplicates, the old original is to the new page what it was to the twin.
        """
        original = record.duplicate_of
        if original is None or record.verdict is None or record.kind is None:
            return None
        row = self.store.page_fields(conn, original, "url", "canonical", "verdict")
        if row is None or row.verdict is None or row.verdict in DUPLICATE_VERDICTS:
            return None
        named = set(self._named.get(original, ())) | {
            c for c in (row.canonical, record.canonical) if c
        }
        mine = original_rank(record.url, any(same_url(record.url, c) for c in named))
        theirs = original_rank(row.url, any(same_url(row.url, c) for c in named))
        if mine >= theirs:
            return None
        verdict, kind = record.verdict, record.kind
        if kind == EXACT and exact is not None and exact.page_id != original:
            twin = self.store.page_fields(conn, exact.page_id, "verdict", "kind")
            if twin is not None and twin.verdict in DUPLICATE_VERDICTS and twin.kind:
                verdict, kind = twin.verdict, twin.kind
        elif kind == CONTENT and structure.obj is not None and "structure" in self.channels:
            # the old original is laid out like this page, or is its content moved elsewhere
            same = self.channels["structure"].confirm(structure.obj, [original], structure.budget)
            verdict = DUPLICATE if same is not None else MOVED
        if record.kind == EXACT:
            record.similarity = round(measured.similarity, 6) if measured is not None else None
        record.verdict = row.verdict
        record.kind = record.duplicate_of = record.content_duplicate_of = None
        return original, verdict, kind

    def _take_over(
        self, conn: Handle, page_id: int, original: int, verdict: str, kind: str
    ) -> None:
        """In the insert's transaction: the group names the new page; the old original is its
        duplicate."""
        fields = {
            "verdict": verdict,
            "kind": kind,
            "duplicate_of": page_id,
            "content_duplicate_of": page_id if kind == CONTENT else None,
        }
        if kind == EXACT:
            fields["similarity"] = 1.0
        self.store.repoint_group(conn, original, page_id, fields)

    def _swapped(self, page_id: int, replaced: tuple[int, str, str], record: PageRecord) -> None:
        """After the commit: the in-memory groups and the stats follow the store."""
        original, verdict, kind = replaced
        members = self._members.pop(original, set())
        for member in members:
            self._parent[member] = page_id
        self._parent[original] = page_id
        members.add(original)
        self._members[page_id] = members
        named = self._named.pop(original, set())
        if record.canonical:
            named.add(record.canonical)
        self._named[page_id] = named
        # the old original was counted as what this page is now; it is the duplicate instead
        self._count(f"visdup/verdict/{record.verdict}", -1)
        self._count(f"visdup/verdict/{verdict}", 1)
        self._count("visdup/duplicates", 1)
        self._count(f"visdup/duplicates/{kind}", 1)
        self._count("visdup/originals_replaced", 1)


def _layer(
    values: tuple[int, ...], distinct: frozenset[int] | None = None
) -> tuple[frozenset[int], dict[int, int] | None]:
    """A print layer as a set, and the counts of the hashes it repeats (None: it repeats none).

    ``distinct``: the layer's set when the caller has it already (shared, not copied).
    """
    if distinct is None:
        distinct = frozenset(values)
    if len(distinct) == len(values):
        return distinct, None
    return distinct, {h: n for h, n in Counter(values).items() if n > 1}


def _shared(
    a: frozenset[int],
    a_repeats: dict[int, int] | None,
    b: frozenset[int],
    b_repeats: dict[int, int] | None,
) -> int:
    """Size of the multiset intersection of two layers (what ``textprint._common`` counts).

    A hash counts more than once only where both layers repeat it: min(ka, kb) - 1 more.
    """
    if a.isdisjoint(b):  # most candidates: stops at the first shared hash otherwise
        return 0
    n = len(a & b)
    if a_repeats and b_repeats:
        if len(b_repeats) < len(a_repeats):
            a_repeats, b_repeats = b_repeats, a_repeats
        for h, ka in a_repeats.items():
            kb = b_repeats.get(h)
            if kb is not None:
                n += min(ka, kb) - 1
    return n


@dataclass(frozen=True, eq=False)
class PrintSummary:
    """A content print's long-sentence and paragraph layers as sets, built once per page.

    The content channel keeps one per stored page (``Channel.summarise``), so ranking 256
    candidates costs 256 set intersections in C, not 256 rebuilds of both pages' sets.
    """

    document: int
    sentences: frozenset[int]
    sentence_repeats: dict[int, int] | None
    sentence_count: int
    paragraphs: frozenset[int]
    paragraph_repeats: dict[int, int] | None
    paragraph_count: int
    listing: bool = False

    @classmethod
    def of(cls, cp: ContentPrint) -> PrintSummary:
        sentences, sentence_repeats = _layer(cp.sentences, cp.sentence_set)
        paragraphs, paragraph_repeats = _layer(cp.paragraphs)
        return cls(
            cp.document,
            sentences,
            sentence_repeats,
            len(cp.sentences),
            paragraphs,
            paragraph_repeats,
            len(cp.paragraphs),
            cp.listing,
        )


def content_bound(a: PrintSummary, b: PrintSummary) -> float:
    """The content measure of two prints (``ContentMatch.measure`` of
    :func:`visdup.content.textprint.compare`, 1 for a mirror) from their summaries: an upper
    bound on it that is in fact equal to it, in set intersections alone.

    Let na, nb be the prints' long sentences, pa, pb their paragraphs, s the long sentences
    they share and c the paragraphs they share (multiset intersections of the hashes, as
    ``compare`` counts them).

    - Either print without long sentences: ``compare`` scores 0. Equal document
      fingerprints: a mirror, 1. Both are returned as ``compare`` decides them.
    - Sentence Dice 2s/(na + nb) is at most the containment s/min(na, nb), since
      na + nb >= 2 min(na, nb) (and float division rounds monotonically), so
      max(sentence Dice, containment) is the containment, computed here with the same
      float division as ``compare``.
    - Paragraph Dice is 2c/(pa + pb), with c <= min(pa, pb), and c <= s: a paragraph's
      fingerprint hashes its long sentences joined by a newline (``textprint.structure_tree``;
      a normalised sentence holds no newline, so the joined text gives the sentences back),
      and a print's sentence layer is the long sentences of its paragraphs, in order. So two
      paragraphs with one fingerprint (barring a 64-bit hash collision, which ``compare``
      trusts as well) hold the same one or more sentences, present in both sentence layers,
      and distinct matched paragraphs hold distinct positions there: s >= c. Hence
      paragraph Dice <= 2 min(s, pa, pb)/(pa + pb). When that ceiling is at most the
      containment, the measure is the containment; else c is counted and paragraph Dice
      computed as ``compare`` does.

    - When either print is a listing, containment does not count (``compare``): the bound
      starts from sentence Dice 2s/(na + nb) instead, by the same float division.

    So the value returned is max(paragraph Dice, sentence Dice, containment), the measure
    itself, and s = 0 (no long sentence shared, the commonest candidate) gives 0 after one
    ``isdisjoint``. The channel relies on it being an upper bound to skip candidates below
    the floor, and on the equality to store every candidate's score unmeasured
    (``Channel(exact_bound=True)``); tests/test_content_bound.py checks both against
    ``compare`` on generated print pairs.
    """
    na, nb = a.sentence_count, b.sentence_count
    if not na or not nb:
        return 0.0
    if a.document == b.document:
        return 1.0
    s = _shared(a.sentences, a.sentence_repeats, b.sentences, b.sentence_repeats)
    if not s:
        return 0.0
    bound = 2 * s / (na + nb) if a.listing or b.listing else s / min(na, nb)
    pa, pb = a.paragraph_count, b.paragraph_count
    if pa and pb and 2 * min(s, pa, pb) / (pa + pb) > bound:
        c = _shared(a.paragraphs, a.paragraph_repeats, b.paragraphs, b.paragraph_repeats)
        bound = max(bound, 2 * c / (pa + pb))
    return bound


def build_labeller(
    store: Store, get: Callable[[str], Any], count: Callable[[str, int], None]
) -> Labeller:
    """The structural channel always; the content channel unless VISDUP_CONTENT_ENABLED is off."""
    from visdup.structure.distance import (
        OverBudget,
        Profile,
        WorkBudget,
        best_similarities,
        similarity,
    )
    from visdup.structure.fingerprint import shape_simhash
    from visdup.structure.term import Term

    k = int(get("VISDUP_HAMMING_K"))
    max_lookup = int(get("VISDUP_INDEX_MAX_CANDIDATES")) or None
    n = int(get("VISDUP_CANDIDATES"))
    theta = float(get("VISDUP_SIMILARITY_THRESHOLD"))
    template_theta = min(theta, float(get("VISDUP_TEMPLATE_THRESHOLD")))
    max_nodes = int(get("VISDUP_MAX_TERM_NODES"))
    max_cells = int(get("VISDUP_TED_MAX_CELLS"))
    page_cells = int(get("VISDUP_TED_PAGE_CELLS"))

    def measure_terms(a: Term, b: Term, budget: WorkBudget | None) -> tuple[float, str | None]:
        count("visdup/ted_calls", 1)
        try:
            # no at_least: Channel.confirm measures only pairs whose bound reaches the floor
            sim = similarity(a, b, max_nodes=max_nodes, budget=budget)
        except OverBudget as exc:
            count("visdup/ted_skipped", 1)
            logger.debug("visdup: comparison skipped, %s", exc)
            return 0.0, None
        if sim >= theta:
            return sim, STRUCTURAL
        return sim, (TEMPLATE if sim >= template_theta else None)

    def refine_terms(a: Profile, b: Profile, at_least: float) -> float:
        count("visdup/ted_bounds", 1)
        return a.sequence_similarity(b, at_least)

    def load_terms(ids: list[int]) -> dict[int, Term]:
        return {i: Term.parse(t) for i, t in store.values("term", ids).items() if t}

    channels: dict[str, Channel[Any]] = {
        "structure": Channel(
            "structure",
            store,
            fingerprint_column="simhash",
            load=load_terms,
            measure=measure_terms,
            accepts=lambda t: t.nodes <= max_nodes,
            good_enough=theta,
            floor=template_theta,
            summarise=Profile,
            bound=Profile.best_similarity,
            bounds=best_similarities,
            budget=lambda: WorkBudget(max_cells, page_cells),
            refine=refine_terms,
            shape=shape_simhash,
            k=k,
            max_lookup=max_lookup,
            candidates=n,
            count=count,
        )
    }
    if flag(get("VISDUP_CONTENT_ENABLED")):
        from visdup.content.textprint import ContentPrint, compare

        content_theta = float(get("VISDUP_CONTENT_THRESHOLD"))
        min_sentences = int(get("VISDUP_CONTENT_MIN_SENTENCES"))

        def measure_content(
            a: ContentPrint, b: ContentPrint, _budget: Any
        ) -> tuple[float, str | None]:
            m = compare(a, b, threshold=content_theta)  # the setting, not the module default
            if m.kind == "mirror":
                return 1.0, "mirror"
            return m.measure, ("partial" if m.kind and m.measure >= content_theta else None)

        def load_prints(ids: list[int]) -> dict[int, ContentPrint]:
            return {
                i: ContentPrint.from_json(t)
                for i, t in store.values("content_print", ids).items()
                if t
            }

        channels["content"] = Channel(
            "content",
            store,
            fingerprint_column="content_simhash",
            load=load_prints,
            measure=measure_content,
            accepts=lambda cp: len(cp.sentences) >= min_sentences,
            keys=lambda cp: cp.sentence_set,  # the same set object as its summary's
            floor=content_theta,
            summarise=PrintSummary.of,
            bound=content_bound,
            # every candidate's score is stored, measured or not: the report's histogram and
            # its replay at other content thresholds read what measuring them all gave
            exact_bound=True,
            k=k,
            max_lookup=max_lookup,
            # only those that reach the floor are measured, best first
            candidates=max(n, 2 * LOOKUP_PAGES),
            count=count,
        )
    policy = str(get("VISDUP_DUPLICATE_POLICY"))
    nofollow = DUPLICATE_VERDICTS if "nofollow" in policy else frozenset()
    return Labeller(
        store,
        channels,
        nofollow_verdicts=nofollow,
        count=count,
        comparisons=int(get("VISDUP_COMPARISONS_MAX")),
    )
