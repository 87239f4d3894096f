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
content in another layout) or **novel**. The original of a group is the first page stored.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, select

from visdup.config import flag
from visdup.index import MemoryIndex, SqlIndex
from visdup.index.sql import advisory_lock
from visdup.storage.store import PageRecord, Store, pages
from visdup.structure.fingerprint import hamming

logger = logging.getLogger(__name__)

EXACT, STRUCTURAL, TEMPLATE = "exact", "structural", "template"
DUPLICATE, SAME_TEMPLATE, MOVED, NOVEL = "duplicate", "same_template", "moved", "novel"

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
        self._postings: dict[int, list[int]] = {}
        self._keys: dict[int, frozenset[int]] = {}

    def add(self, page_id: int, keys: Iterable[int]) -> None:
        mine = frozenset(keys)
        self._keys[page_id] = mine
        for key in mine:
            posting = self._postings.setdefault(key, [])
            if len(posting) <= self.max_postings:
                posting.append(page_id)

    def keys(self, page_id: int) -> frozenset[int]:
        return self._keys.get(page_id, frozenset())

    def query(self, keys: Iterable[int], limit: int) -> list[int]:
        """Pages sharing the most keys, most first; keys in too many pages are ignored."""
        shared: dict[int, int] = {}
        for key in set(keys):
            posting = self._postings.get(key)
            if posting is None or len(posting) > self.max_postings:
                continue
            for page_id in posting:
                shared[page_id] = shared.get(page_id, 0) + 1
        ranked = sorted(shared.items(), key=lambda kv: (-kv[1], kv[0]))
        return [page_id for page_id, _n in ranked[:limit]]


class Channel(Generic[T]):
    """One way of being alike: a SimHash index over a fingerprint, and a confirming measure."""

    def __init__(
        self,
        name: str,
        store: Store,
        *,
        fingerprint_column: str,
        load: Callable[[list[int]], dict[int, T]],
        measure: Callable[[T, T], tuple[float, str | None]],
        accepts: Callable[[T], bool] = lambda _obj: True,
        keys: Callable[[T], Iterable[int]] | None = None,
        good_enough: float = 1.0,
        k: int,
        max_lookup: int | None = None,
        candidates: int,
        count: Callable[[str, int], None],
    ):
        self.name = name
        self.store = store
        self.column = fingerprint_column
        self.k = k
        self.max_candidates = candidates
        self.measure = measure
        self.accepts = accepts
        self.memory = MemoryIndex(k=k, max_candidates=max_lookup)
        self.sql = SqlIndex(store.engine, name, k=k, max_candidates=max_lookup)
        self.cache: ObjectCache[T] = ObjectCache(load)
        self.order: list[int] = []  # keys in insertion order, for the catch-up check
        self._count = count
        self.keys = keys
        self.good_enough = good_enough
        self.shared = SharedKeys() if keys is not None else None

    def warm(self) -> int:
        n = 0
        for page_id, fp in self.store.fingerprints(self.column):
            self.memory.add(page_id, fp)
            self.order.append(page_id)
            n += 1
        if self.shared is not None and self.keys is not None:
            for start in range(0, len(self.order), 1000):
                chunk = self.order[start : start + 1000]
                for page_id, obj in self.cache.get_many(chunk).items():
                    self.shared.add(page_id, self.keys(obj))
        return n

    def candidates(self, fp: int, obj: T | None = None) -> tuple[list[int], int]:
        """Nearest stored pages (SimHash within k, then shared keys), and the watermark."""
        watermark = len(self.order)
        found = [key for key, _fp, _d in self.memory.query(fp, k=self.k, limit=self.max_candidates)]
        if self.shared is not None and self.keys is not None and obj is not None:
            known = set(found)
            found += [
                key
                for key in self.shared.query(self.keys(obj), self.max_candidates)
                if key not in known
            ]
        self._count("visdup/candidates", len(found))
        return found, watermark

    def confirm(self, obj: T, ids: list[int]) -> Match | None:
        """The best match at or above the channel's threshold, nearest candidates first."""
        if not ids or not self.accepts(obj):
            return None
        best: Match | None = None
        stored = self.cache.get_many(ids)
        for page_id in ids:
            other = stored.get(page_id)
            if other is None or not self.accepts(other):
                continue
            score, kind = self.measure(obj, other)
            if kind is not None and (best is None or score > best.similarity):
                best = Match(page_id, score, kind)
                if score >= self.good_enough:  # nearest first: a closer page is unlikely
                    break
        return best

    def late(self, conn: Connection, fp: int, obj: T, seen: list[int], watermark: int) -> list[int]:
        """Near pages stored after the candidates were taken (here or by other processes)."""
        known = set(seen)
        mine = frozenset(self.keys(obj)) if self.keys is not None else frozenset()
        late = [
            key
            for key in self.order[watermark:]
            if key not in known
            and (
                ((kfp := self.memory.fingerprint(key)) is not None and hamming(kfp, fp) <= self.k)
                or (self.shared is not None and mine & self.shared.keys(key))
            )
        ]
        if self.store.is_postgres:
            known.update(late)
            late += [
                key
                for key, _f, _d in self.sql.query(fp, k=self.k, limit=64, conn=conn)
                if key not in known and key not in self.memory
            ]
        return late[: self.max_candidates]

    def added(self, page_id: int, fp: int, obj: T) -> None:
        self.memory.add(page_id, fp)
        self.order.append(page_id)
        self.cache.put(page_id, obj)
        if self.shared is not None and self.keys is not None:
            self.shared.add(page_id, self.keys(obj))


@dataclass
class Pending:
    """A page between its candidate search and its commit, for one channel."""

    fp: int | None = None
    obj: Any = None
    seen: list[int] | None = None
    watermark: int = 0
    match: Match | None = None


class Labeller:
    """All channels of one crawl process, and the one critical section that stores a page."""

    def __init__(
        self,
        store: Store,
        channels: dict[str, Channel[Any]],
        *,
        nofollow_verdicts: frozenset[str] = frozenset(),
    ):
        self.store = store
        self.channels = channels
        self.nofollow_verdicts = nofollow_verdicts
        self._lock = threading.Lock()
        self._roots: dict[str, dict[int, int]] = {name: {} for name in channels}

    def warm(self) -> int:
        """Load every stored fingerprint, so a second crawl finds the first crawl's pages."""
        n = 0
        for channel in self.channels.values():
            n = max(n, channel.warm())
        for row in self.store.rows("id", "duplicate_of", "kind", "content_duplicate_of"):
            if row.duplicate_of is not None:  # an exact copy's chain runs through its twin
                self._roots.setdefault("structure", {})[row.id] = row.duplicate_of
            if row.content_duplicate_of is not None:
                self._roots.setdefault("content", {})[row.id] = row.content_duplicate_of
        return n

    def prepare(self, name: str, fp: int | None, obj: Any) -> Pending:
        """Steps 1-2 for one channel: candidates and their confirmation (no lock held)."""
        channel = self.channels.get(name)
        if channel is None or fp is None or obj is None or not channel.accepts(obj):
            return Pending()  # this page takes no part in the channel, and is not indexed in it
        pending = Pending(fp=fp, obj=obj)
        pending.seen, pending.watermark = channel.candidates(fp, obj)
        pending.match = channel.confirm(obj, pending.seen)
        return pending

    def commit(
        self, record: PageRecord, prepared: dict[str, Pending], run_id: int | None
    ) -> int | None:
        """Step 3: catch up, decide, insert; returns the new page id (None: URL already stored)."""
        with self._lock, self.store.engine.begin() as conn:
            structure = prepared.get("structure", Pending())
            # one sorted sweep over every channel's band keys: no two writers deadlock
            advisory_lock(
                conn,
                [
                    key
                    for name, pending in prepared.items()
                    if name in self.channels and pending.fp is not None
                    for key in self.channels[name].sql.lock_keys(pending.fp)
                ],
            )
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
                    late_match = channel.confirm(pending.obj, late)
                    if late_match and (match is None or late_match.similarity > match.similarity):
                        match = late_match
                matches[name] = match
            content = matches.get("content")
            same_layout = None
            if content is not None and structure.obj is not None and "structure" in self.channels:
                # duplicate or moved: is the page laid out like the page whose content it has?
                same_layout = self.channels["structure"].confirm(structure.obj, [content.page_id])
            self._decide(conn, record, exact, matches.get("structure"), content, same_layout)
            page_id = self.store.insert_page(
                conn, record, run_id, links_followed=record.verdict not in self.nofollow_verdicts
            )
            if page_id is None:
                return None
            for name, pending in prepared.items():
                if name in self.channels and pending.fp is not None:
                    self.channels[name].sql.add(page_id, pending.fp, conn=conn)
        # committed: now visible to this process's later pages
        for name, pending in prepared.items():
            if name in self.channels and pending.fp is not None:
                self.channels[name].added(page_id, pending.fp, pending.obj)
        if record.duplicate_of is not None:
            self._roots.setdefault("structure", {})[page_id] = record.duplicate_of
        if record.content_duplicate_of is not None:
            self._roots.setdefault("content", {})[page_id] = record.content_duplicate_of
        return page_id

    def _decide(
        self,
        conn: Connection,
        record: PageRecord,
        exact: Match | None,
        structure: Match | None,
        content: Match | None,
        same_layout: Match | None = None,
    ) -> None:
        if exact is not None:  # an exact copy points at its first twin
            record.duplicate_of, record.similarity, record.kind = exact.page_id, 1.0, EXACT
            record.verdict = DUPLICATE
            if content is not None:
                self._set_content(conn, record, content)
            return
        if structure is not None:
            record.similarity = round(structure.similarity, 6)
        if structure is not None and structure.kind == STRUCTURAL:
            # a structural near-duplicate points at its group's original
            record.duplicate_of = self._root(conn, "structure", structure.page_id, "duplicate_of")
            record.kind = STRUCTURAL
        if content is not None:
            self._set_content(conn, record, content)
        if "content" not in self.channels:
            # structure alone: a structural match is all there is to say
            near = structure is not None and structure.kind == STRUCTURAL
            record.verdict = DUPLICATE if near else SAME_TEMPLATE if structure else NOVEL
        elif content is not None:
            record.verdict = DUPLICATE if same_layout is not None else MOVED
        elif structure is not None:
            record.verdict = SAME_TEMPLATE
        else:
            record.verdict = NOVEL

    def _set_content(self, conn: Connection, record: PageRecord, content: Match) -> None:
        record.content_duplicate_of = self._root(
            conn, "content", content.page_id, "content_duplicate_of"
        )
        record.content_similarity = round(content.similarity, 6)
        record.content_kind = content.kind

    def _root(self, conn: Connection, channel: str, page_id: int, column: str) -> int:
        """Follow a channel's links to the page that is nobody's duplicate (the first stored)."""
        roots = self._roots.setdefault(channel, {})
        seen = {page_id}
        while True:
            parent = roots.get(page_id)
            if parent is None and self.store.is_postgres:  # maybe stored by another process
                parent = conn.execute(select(pages.c[column]).where(pages.c.id == page_id)).scalar()
            if parent is None or parent in seen:
                return page_id
            seen.add(parent)
            page_id = parent


def build_labeller(
    store: Store, get: Callable[[str], Any], count: Callable[[str, int], None]
) -> Labeller:
    """The structural channel always; the content channel unless VISDUP_CONTENT_ENABLED is off."""
    from visdup.structure.distance import similarity
    from visdup.structure.term import Term

    k = int(get("VISDUP_HAMMING_K"))
    max_lookup = int(get("VISDUP_INDEX_MAX_CANDIDATES")) or None
    n = int(get("VISDUP_CANDIDATES"))
    theta = float(get("VISDUP_SIMILARITY_THRESHOLD"))
    template_theta = min(theta, float(get("VISDUP_TEMPLATE_THRESHOLD")))
    max_nodes = int(get("VISDUP_MAX_TERM_NODES"))

    def measure_terms(a: Term, b: Term) -> tuple[float, str | None]:
        count("visdup/ted_calls", 1)
        sim = similarity(a, b, at_least=template_theta, max_nodes=max_nodes)
        if sim >= theta:
            return sim, STRUCTURAL
        return sim, (TEMPLATE if sim >= template_theta else None)

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

        def measure_content(a: ContentPrint, b: ContentPrint) -> tuple[float, str | None]:
            m = compare(a, b)
            if m.kind == "mirror":
                return 1.0, "mirror"
            score = max(m.score, m.containment)
            return score, ("partial" if m.kind and score >= content_theta else None)

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
            keys=lambda cp: cp.sentences,
            k=k,
            max_lookup=max_lookup,
            candidates=n,
            count=count,
        )
    policy = str(get("VISDUP_DUPLICATE_POLICY"))
    nofollow = frozenset({"duplicate", "moved"}) if "nofollow" in policy else frozenset()
    return Labeller(store, channels, nofollow_verdicts=nofollow)
