"""Candidates → confirm → label → store for one page, safe under concurrency.

Scrapy runs ``process_item`` for many pages at once, and several crawl processes may share a
PostgreSQL store. Two near-duplicates processed at the same moment must still be linked, so:

1. candidates come from an in-memory SimHash index (fast, outside any lock);
2. they are confirmed with the tree edit distance, nearest first (outside any lock);
3. inside one lock (a thread lock in-process, plus ``pg_advisory_xact_lock`` on the page's
   band keys across processes) the pages stored since step 1 are checked too, then the page,
   its fingerprint and its links are written in one transaction.

The original of a group is the first page stored; later members point at it.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, select

from visdup.distance import similarity
from visdup.fingerprint import hamming
from visdup.index import MemoryIndex, SqlIndex
from visdup.store import PageRecord, Store, pages
from visdup.term import Term

logger = logging.getLogger(__name__)

EXACT, STRUCTURAL = "exact", "structural"


@dataclass
class Match:
    page_id: int
    similarity: float
    kind: str


class TermCache:
    """Recently used stored terms, so confirmation rarely touches the database."""

    def __init__(self, store: Store, capacity: int = 20_000):
        self.store = store
        self.capacity = capacity
        self._terms: OrderedDict[int, Term] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, page_id: int, term: Term) -> None:
        with self._lock:
            self._terms[page_id] = term
            self._terms.move_to_end(page_id)
            while len(self._terms) > self.capacity:
                self._terms.popitem(last=False)

    def get_many(self, ids: list[int]) -> dict[int, Term]:
        with self._lock:
            found = {i: self._terms[i] for i in ids if i in self._terms}
        missing = [i for i in ids if i not in found]
        if missing:
            for page_id, text in self.store.terms(missing).items():
                if text:
                    term = Term.parse(text)
                    found[page_id] = term
                    self.put(page_id, term)
        return found


class Labeller:
    """The structural channel of one crawl process."""

    def __init__(
        self,
        store: Store,
        *,
        k: int = 8,
        candidates: int = 8,
        threshold: float = 0.95,
        max_nodes: int = 5000,
        count: Callable[[str, int], None] | None = None,
    ):
        self.store = store
        self.k = k
        self.max_candidates = candidates
        self.threshold = threshold
        self.max_nodes = max_nodes
        self.memory = MemoryIndex(k=k)
        self.sql = SqlIndex(store.engine, "structure", k=k)
        self.terms = TermCache(store)
        self._lock = threading.Lock()
        self._order: list[int] = []  # keys in insertion order, for the catch-up check
        self._roots: dict[int, int] = {}  # page id -> original of its group
        self._count = count or (lambda _key, _n: None)

    def warm(self) -> int:
        """Load every stored fingerprint, so a second crawl finds the first crawl's pages."""
        n = 0
        for page_id, fp in self.store.fingerprints("simhash"):
            self.memory.add(page_id, fp)
            self._order.append(page_id)
            n += 1
        for row in self.store.rows("id", "duplicate_of"):
            if row.duplicate_of is not None:
                self._roots[row.id] = row.duplicate_of
        return n

    # -------------------------------------------------------------- candidates & confirm
    def candidates(self, fp: int) -> tuple[list[int], int]:
        """Nearest stored pages within k, and the watermark for the catch-up check."""
        watermark = len(self._order)
        found = self.memory.query(fp, k=self.k, limit=self.max_candidates)
        self._count("visdup/candidates", len(found))
        return [key for key, _fp, _d in found], watermark

    def confirm(self, term: Term, ids: list[int]) -> Match | None:
        """Best TED similarity at or above the threshold, nearest candidates first."""
        if not ids or term.nodes > self.max_nodes:
            return None
        stored = self.terms.get_many(ids)
        best: Match | None = None
        for page_id in ids:
            other = stored.get(page_id)
            if other is None or other.nodes > self.max_nodes:
                continue
            self._count("visdup/ted_calls", 1)
            sim = similarity(term, other, at_least=self.threshold)
            if sim >= self.threshold and (best is None or sim > best.similarity):
                best = Match(page_id, sim, STRUCTURAL)
                if sim >= 1.0:
                    break
        return best

    # -------------------------------------------------------------- store
    def commit(
        self,
        record: PageRecord,
        term: Term | None,
        seen: list[int],
        watermark: int,
        match: Match | None,
        run_id: int | None,
    ) -> int | None:
        """Final check and insert under the lock; returns the new page id (None: URL known)."""
        fp = record.simhash
        with self._lock, self.store.engine.begin() as conn:
            if fp is not None:
                self.sql.lock(conn, fp)
            if record.body_hash and record.problem is None:
                same = self.store.page_by_body_hash(conn, record.body_hash)
                if same is not None:
                    match = Match(same, 1.0, EXACT)
            if term is not None and fp is not None and (match is None or match.kind != EXACT):
                late = [
                    key
                    for key in self._order[watermark:]
                    if key not in seen
                    and (kfp := self.memory.fingerprint(key)) is not None
                    and hamming(kfp, fp) <= self.k
                ]
                if self.store.is_postgres:  # pages other processes stored meanwhile
                    known = set(seen) | set(late)
                    late += [
                        key
                        for key, _f, _d in self.sql.query(fp, k=self.k, limit=64, conn=conn)
                        if key not in known and key not in self.memory
                    ]
                late_match = self.confirm(term, late[: self.max_candidates])
                if late_match and (match is None or late_match.similarity > match.similarity):
                    match = late_match
            if match is not None:
                # an exact copy points at its first twin; a near-duplicate at its group's original
                original = (
                    match.page_id
                    if match.kind == EXACT
                    else self._resolve_root(conn, match.page_id)
                )
                record.duplicate_of = original
                record.similarity = round(match.similarity, 6)
                record.kind = match.kind
            page_id = self.store.insert_page(conn, record, run_id)
            if page_id is None:
                return None
            if fp is not None:
                self.sql.add(page_id, fp, conn=conn)
        # committed: now visible to this process's later pages
        if fp is not None:
            self.memory.add(page_id, fp)
            self._order.append(page_id)
        if term is not None:
            self.terms.put(page_id, term)
        if record.duplicate_of is not None:
            self._roots[page_id] = record.duplicate_of
        return page_id

    def _resolve_root(self, conn: Connection, page_id: int) -> int:
        """Follow duplicate_of links to the page that is nobody's duplicate (the first stored)."""
        seen = {page_id}
        while True:
            parent = self._roots.get(page_id)
            if parent is None and self.store.is_postgres:  # maybe stored by another process
                parent = conn.execute(
                    select(pages.c.duplicate_of).where(pages.c.id == page_id)
                ).scalar()
            if parent is None or parent in seen:
                return page_id
            seen.add(parent)
            page_id = parent
