"""The final labels of a store: a function of its pages and the settings, never of their order.

Labels given during a crawl are provisional: a page is compared only with the pages stored
before it, candidate searches are capped, and the duplicate policy has to act at once. At the
end of a crawl, of a ``visdup dups`` run or of a resumed crawl, :func:`settle` derives every
page's labels again from the set of stored pages alone:

1. **Edges**: byte-identical bodies; the same main content (layered text prints) among the
   pages the content channel takes; the same visible text and near-identical structure among
   thin pages; near-identical structure when the structure channel decides alone. Candidates
   are every page within the channels' SimHash radius (for content, every page sharing a long
   sentence that at most :data:`MAX_POSTINGS` pages share; for a small layout, every small
   layout whose histogram bound reaches the near-duplicate threshold), uncapped; each pair is
   measured once, with a work budget of its own, so no measure depends on what came before.
2. **Groups** are the connected components of those edges. A group's **original** is the page
   its pages name canonical, else the cleanest URL (no tracking parameters or session ids),
   else the shortest, else the first in URL order (:func:`visdup.verdicts.original_rank`).
3. **Copies** are measured against their original, whichever member linked them: their
   ``kind`` (``exact`` for the original's bytes), their content and layout similarities, and
   ``duplicate`` (the original's layout) or ``moved`` (another layout). The original is
   ``original``; any other page is ``same_template`` when some page lies at or above the
   template threshold structurally, else ``novel``.

Measures the crawl stored (``visdup_comparisons``) are reused: the same pair measured the same
way gives the same number, so they only save work. Pages are visited in URL order throughout,
and every tie is broken by URL.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from visdup.dedup.channels import term_key
from visdup.dedup.groups import Find as _Find
from visdup.dedup.groups import near as _near
from visdup.dedup.prints import content_score
from visdup.dedup.sentence_postings import SentencePostings
from visdup.dedup.structure_index import StructureIndex
from visdup.storage.locks import SETTLE_LOCK
from visdup.storage.schema import unsigned
from visdup.verdicts import (
    CONTENT,
    DUPLICATE,
    EXACT,
    MOVED,
    NOVEL,
    ORIGINAL,
    SAME_TEMPLATE,
    STRUCTURAL,
    THIN,
    original_rank,
    same_url,
)

logger = logging.getLogger(__name__)

#: A long sentence shared by more pages than this is boilerplate: it proposes no candidates.
MAX_POSTINGS = 64
#: Pages whose terms or prints are held at once while the store is read.
CHUNK = 1000
#: Candidates of a template peer search bounded in one call (most pages searched find none).
PEER_BATCH = 16
#: The columns :func:`settle` writes.
LABELS = (
    "verdict",
    "kind",
    "duplicate_of",
    "content_duplicate_of",
    "similarity",
    "content_similarity",
    "content_kind",
)


@dataclass
class _Page:
    id: int
    url: str
    canonical: str | None
    body_hash: str | None
    simhash: int | None
    content_simhash: int | None
    term_key: bytes | None = None
    #: Visible-text key of a page too thin for the content channel (0: none).
    thin: int = 0
    #: Whether the content channel takes the page.
    content: bool = False
    current: dict[str, Any] = field(default_factory=dict)


@dataclass
class Settled:
    """What :func:`settle` found: final verdict counts and how many pages changed."""

    pages: int = 0
    groups: int = 0
    changed: int = 0
    measured: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)


class _Settler:
    def __init__(self, store: Any, channels: dict[str, Any]):
        self.store = store
        self.structure = channels.get("structure")
        self.content = channels.get("content")
        self.pages: list[_Page] = []
        self.measured = 0
        #: (position, position), smaller first -> layout similarity (rounded).
        self._layout: dict[tuple[int, int], float] = {}
        self._content: dict[tuple[int, int], tuple[float, str | None, bool]] = {}
        self._index: StructureIndex | None = None

    # ---------------------------------------------------------------- reading the store
    def load(self) -> None:
        rows = self.store.rows(
            "id",
            "url",
            "canonical",
            "body_hash",
            "problem",
            "simhash",
            "content_simhash",
            *LABELS,
        )
        pages = [
            _Page(
                r.id,
                r.url,
                r.canonical,
                r.body_hash if r.problem is None else None,
                None if r.simhash is None else unsigned(r.simhash),
                None if r.content_simhash is None else unsigned(r.content_simhash),
                current={name: getattr(r, name) for name in LABELS},
            )
            for r in rows
        ]
        pages.sort(key=lambda p: (p.url, p.id))
        self.pages = pages
        self.position = {p.id: i for i, p in enumerate(pages)}
        for start in range(0, len(pages), CHUNK):
            chunk = pages[start : start + CHUNK]
            if self.structure is not None:  # parsed once: the peer search reads them too
                terms = self.structure.cache.get_many(
                    [p.id for p in chunk if p.simhash is not None]
                )
                for p in chunk:
                    term = terms.get(p.id)
                    if term is not None:
                        p.term_key = term_key(term)
            if self.content is not None:
                prints = self.content.cache.get_many([p.id for p in chunk])
                for p in chunk:
                    cp = prints.get(p.id)
                    if cp is None:
                        continue
                    if self.content.accepts(cp):
                        p.content = p.content_simhash is not None
                    else:
                        p.thin = cp.thin
        self._seed()

    def _seed(self) -> None:
        """The crawl's stored measures: the same pairs measured the same way."""
        if self.structure is None or not self.store.has_comparisons():
            return
        position = self.position
        for row in self.store.comparison_rows():
            if row.channel != "structure":
                continue
            a, b = position.get(row.page_id), position.get(row.other_id)
            if a is not None and b is not None and a != b:
                self._layout[(min(a, b), max(a, b))] = round(float(row.similarity), 6)

    # ---------------------------------------------------------------- measures
    def layout(self, a: int, b: int) -> float | None:
        """Layout similarity of two pages (None: one has no term the channel takes)."""
        if a == b:
            return 1.0
        pair = (min(a, b), max(a, b))
        found = self._layout.get(pair)
        if found is not None:
            return found
        pa, pb = self.pages[a], self.pages[b]
        channel = self.structure
        if channel is None or pa.term_key is None or pb.term_key is None:
            return None
        if pa.term_key == pb.term_key:
            self._layout[pair] = 1.0
            return 1.0
        terms = channel.cache.get_many([pa.id, pb.id])
        ta, tb = terms.get(pa.id), terms.get(pb.id)
        if ta is None or tb is None or not channel.accepts(ta) or not channel.accepts(tb):
            return None
        first, second = (ta, tb) if pair[0] == a else (tb, ta)
        score, _kind = channel.measure(first, second, channel.budget())
        self.measured += 1
        value = self._layout[pair] = round(score, 6)
        return value

    def content_measure(self, a: int, b: int) -> tuple[float, str | None, bool]:
        """The content channel's measure of two pages, its kind (None: no match), and whether
        the match is mutual (the same text, not one page's text contained in the other's)."""
        pair = (min(a, b), max(a, b))
        found = self._content.get(pair)
        if found is not None:
            return found
        from visdup.content.textprint import compare

        channel = self.content
        assert channel is not None
        prints = channel.cache.get_many([self.pages[i].id for i in pair])
        first, second = prints.get(self.pages[pair[0]].id), prints.get(self.pages[pair[1]].id)
        if first is None or second is None:
            return 0.0, None, False
        m = compare(first, second, threshold=channel.floor)
        measure, kind = content_score(m, channel.floor)
        mutual = kind == "mirror" or (kind is not None and m.score >= channel.floor)
        value = self._content[pair] = (round(measure, 6), kind, mutual)
        return value

    # ---------------------------------------------------------------- edges
    def edges(self, find: _Find) -> None:
        self._exact(find)
        if self.content is not None:
            self._content_edges(find)
            self._thin_edges(find)
        elif self.structure is not None:
            self._structural_edges(find)

    def _exact(self, find: _Find) -> None:
        first: dict[str, int] = {}
        for i, p in enumerate(self.pages):
            if p.body_hash:
                j = first.setdefault(p.body_hash, i)
                if j != i:
                    find.union(j, i)

    def _content_edges(self, find: _Find) -> None:
        channel = self.content
        assert channel is not None
        members = [i for i, p in enumerate(self.pages) if p.content]
        if len(members) < 2:
            return
        fps = np.array([self.pages[i].content_simhash for i in members], dtype=np.uint64)
        prints = {}
        for start in range(0, len(members), CHUNK):
            ids = [self.pages[i].id for i in members[start : start + CHUNK]]
            prints.update(channel.cache.get_many(ids))
        # the labelling's own summaries, where it still holds them
        made = channel.summaries({self.pages[i].id: prints[self.pages[i].id] for i in members})
        summaries = {i: made[self.pages[i].id] for i in members}
        contained: dict[int, tuple[float, int]] = {}
        sentences = SentencePostings([summaries[i] for i in members], MAX_POSTINGS)
        for slot, i in enumerate(members):
            near = set(_near(fps, self.pages[i].content_simhash or 0, channel.radius).tolist())
            keys = sentences.proposed(slot)
            for key in keys:
                near.update(sentences.postings[key])
            later = sentences.reaching(
                slot, sorted(s for s in near if s > slot), keys, channel.floor
            )
            if not later:
                continue
            scores = channel.bounds(summaries[i], [summaries[members[s]] for s in later])
            for s, bound in zip(later, scores, strict=True):
                if bound < channel.floor:
                    continue
                j = members[s]
                measure, kind, mutual = self.content_measure(i, j)
                if kind is None:
                    continue
                if mutual:
                    find.union(i, j)
                    continue
                # one page's text lies whole in the other's: the smaller one is the copy
                small, large = (
                    (i, j)
                    if len(prints[self.pages[i].id].sentences)
                    < len(prints[self.pages[j].id].sentences)
                    else (j, i)
                )
                rank = (-measure, large)
                if small not in contained or rank < contained[small]:
                    contained[small] = rank
        # A page contained in several others joins the one that contains most of it (the
        # first in URL order on a tie): its containers share a fragment, not their content,
        # and stay apart.
        for small, (_measure, large) in sorted(contained.items()):
            find.union(small, large)

    def _thin_edges(self, find: _Find) -> None:
        channel = self.structure
        if channel is None:
            return
        by_key: dict[int, list[int]] = defaultdict(list)
        for i, p in enumerate(self.pages):
            if p.thin and p.term_key is not None:
                by_key[p.thin].append(i)
        for group in by_key.values():
            self._structural_pairs(find, group, channel.good_enough)

    def _structural_pairs(self, find: _Find, group: list[int], theta: float) -> None:
        """Link the pages of ``group`` whose layouts lie at or above ``theta`` (pages of one
        term are one: measured once)."""
        distinct: dict[bytes, int] = {}
        for i in group:
            key = self.pages[i].term_key
            assert key is not None
            j = distinct.setdefault(key, i)
            if j != i:
                find.union(j, i)
        heads = sorted(distinct.values())
        for x, a in enumerate(heads):
            for b in heads[x + 1 :]:
                if find.find(a) == find.find(b):
                    continue
                score = self.layout(a, b)
                if score is not None and score >= theta:
                    find.union(a, b)

    def _structural_edges(self, find: _Find) -> None:
        """Each page and each of its candidates, once per pair, the bounds before the measure
        (a bound below the threshold rules a pair out exactly)."""
        channel = self.structure
        assert channel is not None
        theta = channel.good_enough
        # the pairs a bound cannot rule out: measured already (seeded), or of one term
        seeded: dict[int, set[int]] = defaultdict(set)
        for a, b in self._layout:
            seeded[a].add(b)
        same: dict[bytes, list[int]] = defaultdict(list)
        for i, p in enumerate(self.pages):
            if p.term_key is not None:
                same[p.term_key].append(i)
        for i in range(len(self.pages)):
            key = self.pages[i].term_key
            if key is None:
                continue
            later = [j for j in self.structure_candidates(i) if j > i]
            profiles = self._profiles  # made with the first candidates
            mine = profiles.get(i)
            # every later candidate's cheap bound in one call into the kernel; those below the
            # threshold are ruled out (``_reaches`` says no to them, and changes nothing)
            views = [j for j in later if j in profiles] if mine is not None else []
            tops: dict[int, float] = {}
            if views:
                found = np.asarray(channel.bounds(mine, [profiles[j] for j in views]))
                for slot in np.flatnonzero(found >= theta).tolist():
                    tops[views[slot]] = float(found[slot])
            extra = seeded.get(i, set()).union(j for j in same[key] if j > i)
            if extra:
                extra.intersection_update(later)
                extra.difference_update(tops)
            for j in sorted(extra.union(tops)) if extra else tops:
                if find.find(i) != find.find(j) and self._reaches(i, j, theta, tops.get(j)):
                    find.union(i, j)

    def _reaches(self, i: int, j: int, theta: float, top: float | None) -> bool:
        """Whether pages ``i`` and ``j`` lie at or above ``theta``; ``top``: their profiles'
        cheap bound (None: one has no profile)."""
        channel, known = self.structure, self._layout.get((i, j))
        if known is None and self.pages[i].term_key != self.pages[j].term_key:
            a, b = self._profiles.get(i), self._profiles.get(j)
            if a is None or b is None or channel is None or top is None or top < theta:
                return False
            if channel.refine is not None and channel.refine(a, b, theta) < theta:
                return False
        found = self.layout(i, j)
        return found is not None and found >= theta

    # ---------------------------------------------------------------- template peers
    def structure_candidates(self, i: int) -> list[int]:
        """Every page within the structure channel's radius of page ``i`` (uncapped)."""
        return self._structure_index().candidates(i)

    def _structure_index(self) -> StructureIndex:
        if self._index is None:
            assert self.structure is not None
            self._index = StructureIndex(self.pages, self.structure)
        return self._index

    @property
    def _profiles(self) -> dict[int, Any]:
        """Position -> the structure channel's profile of the page's term."""
        return self._structure_index().profiles

    def peers(self, candidates: Iterable[int]) -> set[int]:
        """The pages (of ``candidates``) with another page at or above the template
        threshold: known ones from the stored measures, the others searched for."""
        channel = self.structure
        if channel is None:
            return set()
        floor = channel.floor
        found: set[int] = set()
        for (a, b), score in self._layout.items():
            if score >= floor:
                found.update((a, b))
        for i in candidates:
            if i in found or self.pages[i].term_key is None:
                continue
            j = self._peer(i, floor)
            if j is not None:
                found.update((i, j))
        return found

    def _peer(self, i: int, floor: float) -> int | None:
        """A page at or above ``floor`` structurally, searched best bound first: the cheap
        bound, then the tighter sequence bound, and the tree edit distance only for the pages
        both leave in reach."""
        channel = self.structure
        assert channel is not None
        candidates = self.structure_candidates(i)
        profiles = self._profiles
        mine = profiles.get(i)
        if mine is None:
            return None
        views = [j for j in candidates if j in profiles]
        bounds = channel.bounds(mine, [profiles[j] for j in views])
        ranked = sorted(
            ((bound, j) for j, bound in zip(views, bounds, strict=True) if bound >= floor),
            key=lambda bj: (-bj[0], bj[1]),
        )
        for start in range(0, len(ranked), PEER_BATCH):
            batch = [j for _bound, j in ranked[start : start + PEER_BATCH]]
            # their tighter bounds in one call (a measure below sets only its own pair)
            unknown = [j for j in batch if (min(i, j), max(i, j)) not in self._layout]
            tighter: dict[int, float] = {}
            if channel.refines is not None and unknown:
                views_of = [profiles[j] for j in unknown]
                tighter = dict(zip(unknown, channel.refines(mine, views_of, floor), strict=True))
            for j in batch:
                known = self._layout.get((min(i, j), max(i, j)))
                if known is None:
                    if j in tighter and tighter[j] < floor:
                        continue
                    known = self.layout(i, j)
                if known is not None and known >= floor:
                    return j
        return None

    # ---------------------------------------------------------------- labels
    def labels(self) -> tuple[dict[int, dict[str, Any]], int]:
        """Every page's final labels (by page id), and the number of groups."""
        find = _Find(len(self.pages))
        self.edges(find)
        groups: dict[int, list[int]] = defaultdict(list)
        for i in range(len(self.pages)):
            groups[find.find(i)].append(i)
        labels: dict[int, dict[str, Any]] = {}
        alone: list[int] = []
        n_groups = 0
        for members in groups.values():
            if len(members) == 1:
                alone.append(members[0])
                continue
            n_groups += 1
            original = self.original(members)
            labels[self.pages[original].id] = _blank(ORIGINAL)
            for i in members:
                if i != original:
                    labels[self.pages[i].id] = self.copy(i, original)
        template_threshold_peers = self.peers(sorted(alone))
        for i in alone:
            verdict = SAME_TEMPLATE if i in template_threshold_peers else NOVEL
            labels[self.pages[i].id] = _blank(verdict)
        return labels, n_groups

    def original(self, members: list[int]) -> int:
        pages = self.pages
        named = {c for i in members if (c := pages[i].canonical)}

        def rank(i: int) -> tuple[int, int, int, str]:
            url = pages[i].url
            return original_rank(url, any(same_url(url, c) for c in named))

        return min(members, key=rank)

    def copy(self, i: int, original: int) -> dict[str, Any]:
        page, first = self.pages[i], self.pages[original]
        layout = self.layout(i, original)
        labels = _blank(DUPLICATE)
        labels["duplicate_of"] = first.id
        labels["similarity"] = layout
        floor = self.structure.floor if self.structure is not None else 0.0
        if page.body_hash is not None and page.body_hash == first.body_hash:
            kind = EXACT
            labels["similarity"] = 1.0
        elif page.content and first.content:
            kind = CONTENT
        elif page.thin and page.thin == first.thin:
            kind = THIN
        elif self.content is None:
            kind = STRUCTURAL
        else:
            kind = CONTENT if page.content else THIN
        labels["kind"] = kind
        if kind == EXACT:  # the same bytes: the same text, whichever channel takes it
            labels["content_similarity"] = 1.0
        if page.content and first.content:
            score, measured, _mutual = self.content_measure(i, original)
            labels["content_similarity"] = 1.0 if kind == EXACT else score
            labels["content_kind"] = "mirror" if kind == EXACT else measured
            if kind == CONTENT:
                labels["content_duplicate_of"] = first.id
        if kind in (CONTENT, THIN) and (layout is None or layout < floor):
            labels["verdict"] = MOVED
        return labels


def _blank(verdict: str) -> dict[str, Any]:
    labels: dict[str, Any] = dict.fromkeys(LABELS)
    labels["verdict"] = verdict
    return labels


def settle(store: Any, labeller: Any, count: Callable[[str, int], None] | None = None) -> Settled:
    """Derive every stored page's final labels and write those that changed.

    ``labeller`` gives the channels (their measures, thresholds and caches): a crawl's own
    :class:`visdup.dedup.label.Labeller`, or one built for the store. On PostgreSQL the pass
    holds :data:`~visdup.storage.locks.SETTLE_LOCK`, so processes that end together settle one
    after another; the last one to end sees every page.
    """
    count = count or (lambda _key, _n: None)
    settler = _Settler(store, labeller.channels)
    with store.holding([SETTLE_LOCK]):  # one settler at a time per store
        return _settle(store, settler, count)


def derive(store: Any, labeller: Any) -> dict[int, dict[str, Any]]:
    """Every stored page's final labels (page id -> the :data:`LABELS` columns), unwritten:
    what :func:`settle` would store, for a report that replays other thresholds."""
    settler = _Settler(store, labeller.channels)
    settler.load()
    labels, _groups = settler.labels()
    return labels


def _settle(store: Any, settler: _Settler, count: Callable[[str, int], None]) -> Settled:
    settler.load()
    labels, groups = settler.labels()
    changed: dict[int, dict[str, Any]] = {}
    verdicts: dict[str, int] = defaultdict(int)
    for page in settler.pages:
        new = labels[page.id]
        verdicts[new["verdict"]] += 1
        if any(_differs(page.current.get(k), v) for k, v in new.items()):
            changed[page.id] = new
    if changed:
        store.update_pages(changed)
    for verdict, n in verdicts.items():
        count(f"visdup/final/{verdict}", n)
    count("visdup/settled/changed", len(changed))
    count("visdup/settled/measured", settler.measured)
    result = Settled(
        pages=len(settler.pages),
        groups=groups,
        changed=len(changed),
        measured=settler.measured,
        verdicts=dict(sorted(verdicts.items())),
    )
    logger.info(
        "visdup: final labels of %d pages (%d duplicate groups): %d changed, %d measured again",
        result.pages,
        result.groups,
        result.changed,
        result.measured,
    )
    return result


def _differs(old: Any, new: Any) -> bool:
    if isinstance(old, float) and isinstance(new, float):
        return round(old, 6) != round(new, 6)
    return bool(old != new)


def settle_labels(
    store: Any, labeller: Any, count: Callable[[str, int], None] | None = None
) -> Settled | None:
    """:func:`settle` at the end of a run: a failure leaves the run's own labels, logged."""
    try:
        return settle(store, labeller, count)
    except Exception as exc:
        settle_failed(exc, count)
        return None


def settle_failed(exc: Exception, count: Callable[[str, int], None] | None = None) -> None:
    """Say that the final pass failed (``exc``): the run's own labels stay."""
    logger.error("visdup: cannot derive the final labels; the crawl's labels stay", exc_info=exc)
    if count is not None:
        count("visdup/errors", 1)
