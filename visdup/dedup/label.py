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

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from visdup.config import options
from visdup.dedup.channel import Channel, Match
from visdup.dedup.channels import content_channel, structure_channel
from visdup.index.sql import band_index
from visdup.storage.store import Handle, PageRecord, Store
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

logger = logging.getLogger(__name__)

#: Stored thin pages with the page's visible-text key that its structure is compared with
#: (the first stored of them first: the group's original is among them).
THIN_CANDIDATES = 8
#: Group sizes kept for pages just stored, until their pipeline reads them (the cap).
RECENT_SIZES = 10_000


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
    #: The page's object where the channel does not take it (too large a term, too thin a
    #: print): cached with the page all the same, so the final pass reads it without
    #: loading and parsing it again.
    kept: Any = None


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
        # the thin pages' keys in the shared band table, where other processes store pages too
        # (PostgreSQL): this process's own cache knows only what it warmed and stored
        self._thin_sql = self._shared_thin(store, channels)
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

    @staticmethod
    def _shared_thin(store: Store, channels: dict[str, Channel[Any]]) -> Any:
        """The band index of thin pages' visible-text keys, on a store with several writers."""
        if "content" not in channels or "structure" not in channels:
            return None  # no thin pages: they are matched by the content channel's text key
        return band_index(store, "thin", channels["structure"].k)

    def prepare(self, name: str, fp: int | None, obj: Any) -> Pending:
        """Steps 1-2 for one channel: candidates and their confirmation (no lock held)."""
        channel = self.channels.get(name)
        if channel is None or obj is None:
            return Pending()  # this page takes no part in the channel, and is not indexed in it
        if fp is None or not channel.accepts(obj):
            return Pending(kept=obj)  # nor here, but its object is cached with it
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
        thin_key = self._thin_key(record.content_print)
        if thin_key and self._thin_sql is not None:  # two writers of one thin text wait in turn
            keys += self._thin_sql.lock_keys(thin_key)
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
            thin = None
            if thin_key and exact is None and content is None:
                thin = self._thin_match(conn, thin_key, structure)
            self._decide(conn, record, exact, matches.get("structure"), content, same_layout, thin)
            replaced = self._elect(conn, record, structure, matches.get("structure"), exact)
            page_id = self.store.insert_page(
                conn, record, run_id, links_followed=record.verdict not in self.nofollow_verdicts
            )
            if page_id is None:
                return None
            self._store_comparisons(conn, page_id, prepared)
            if thin_key and self._thin_sql is not None:
                self._thin_sql.add(page_id, thin_key, conn=conn)
            if replaced is not None:
                self._take_over(conn, page_id, *replaced)
            for name, pending in prepared.items():
                shared = self.channels[name].sql if name in self.channels else None
                if shared is not None and pending.fp is not None:
                    shared.add(page_id, pending.fp, conn=conn)
        self._committed(page_id, record, prepared, replaced, thin_key)
        return page_id

    def _committed(
        self,
        page_id: int,
        record: PageRecord,
        prepared: dict[str, Pending],
        replaced: tuple[int, str, str] | None,
        thin_key: int,
    ) -> None:
        """The committed page, made visible to this process's later pages."""
        for name, pending in prepared.items():
            if name not in self.channels:
                continue
            if pending.fp is not None:
                self.channels[name].added(page_id, pending.fp, pending.obj)
            elif pending.kept is not None:
                self.channels[name].cache.put(page_id, pending.kept)
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

    def _thin_match(self, conn: Handle, key: int, structure: Pending) -> Match | None:
        """A stored thin page with the same visible text and near-identical structure: those
        this process knows, and (under the key's lock) those other processes stored."""
        ids = self._thin.get(key, [])
        if self._thin_sql is not None:
            found = self._thin_sql.query(key, k=0, limit=THIN_CANDIDATES, conn=conn)
            ids = sorted({*ids, *(page_id for page_id, _fp, _d in found)})[:THIN_CANDIDATES]
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


def build_labeller(store: Store, settings: Any, count: Callable[[str, int], None]) -> Labeller:
    """The structural channel always; the content channel unless VISDUP_CONTENT_ENABLED is off.
    ``settings``: :class:`~visdup.config.Options`, or what :func:`visdup.config.options` reads
    them from."""
    opts = options(settings)
    channels: dict[str, Channel[Any]] = {"structure": structure_channel(store, opts, count)}
    if opts.content_enabled:
        channels["content"] = content_channel(store, opts, count)
    policy = opts.duplicate_policy
    nofollow = DUPLICATE_VERDICTS if "nofollow" in policy else frozenset()
    return Labeller(
        store,
        channels,
        nofollow_verdicts=nofollow,
        count=count,
        comparisons=opts.comparisons_max,
    )
