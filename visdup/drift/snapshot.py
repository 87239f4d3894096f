"""A crawl as a snapshot: per page its template, fit and body hash; per template aggregates.

A page is stored and labelled once (``visdup_pages``); each snapshot that fetches it adds a row
to ``visdup_snapshot_pages`` (snapshot, page, template, fit, body hash: tens of bytes). At the
end of each run the snapshot's per-template aggregates are written
(:mod:`visdup.drift.aggregate`), from the rows and from a bounded sample of pages kept in
memory while the crawl runs: the same URLs in every snapshot (smallest URL digests).

Which snapshot a run adds to (:meth:`Snapshot.open`):

- a name given (``--crawl-id``, ``VISDUP_CRAWL_ID``): that snapshot, created when new;
- no name: the last snapshot of the same sites (``crawl_key``) when it did not finish (stopped,
  killed, ``--max-pages``), else ``HOSTS-YYYY-MM-DD`` (UTC), continued when it exists.

A new snapshot fetches every page again, stored ones included; continuing a snapshot (resume)
skips the pages it holds and starts from the links earlier runs stored and nobody fetched, plus
every stored page of its sites it has not fetched yet: links are stored once, where first found,
so the queue a stopped run lost is not kept per snapshot, and the stored pages stand for it.
"""

from __future__ import annotations

import bisect
import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from visdup.drift.aggregate import (
    encode,
    fit_limit,
    layout_digest,
    measure,
    merge_sample,
    template_stats,
)
from visdup.page.urlpatterns import url_shape as url_pattern
from visdup.storage import snapshots
from visdup.storage.snapshots import STORED_LABELS as _STORED_LABELS  # noqa: F401 - tests read it
from visdup.storage.urls import origin
from visdup.templates.extract import DEFAULT_MIN_FIT
from visdup.templates.sample import sample_rank
from visdup.templates.signature import SIGNATURE_VERSION
from visdup.templates.stm import PackedTree, label_paths, packed, stm_upper_bound
from visdup.templates.template import Template

if TYPE_CHECKING:
    from visdup.storage.store import Store
    from visdup.templates.stm import FlatTree

logger = logging.getLogger(__name__)

#: Close reason of a run that crawled everything it found: its snapshot is complete.
FINISHED = "finished"
#: Snapshot rows written per transaction while a crawl runs.
BATCH = 200
#: A new template's sample pages measured on the layout of a template that lost its pages
#: (``against``): at least this many, at most :data:`AGAINST_PAGES`, on the :data:`AGAINST`
#: lost templates likeliest to be its predecessor, for the :data:`AGAINST_TEMPLATES` largest
#: new templates.
AGAINST_MIN_SAMPLE = 3
AGAINST_PAGES = 8
AGAINST = 2
AGAINST_TEMPLATES = 20
#: A template lost its pages when it holds less than this share of those it had.
LOST_SHARE = 0.5


def _pattern_overlap(patterns: dict[str, int], stats: dict[str, Any]) -> int:
    """Pages of ``patterns`` whose URL pattern the other template's ``stats`` had."""
    theirs = stats.get("patterns") or {}
    return sum(n for p, n in patterns.items() if p in theirs)


def ensure_tables(store: Store) -> None:
    """Create the snapshot tables in a store made before them (schema version 3 already)."""
    snapshots.ensure_tables(store)


def has_tables(store: Store) -> bool:
    return snapshots.has_tables(store)


def default_name(start_urls: Iterable[str], day: datetime | None = None, fallback: str = "") -> str:
    """``example.com-2026-11-30``: the start URLs' hosts (ports other than the scheme's) and
    the UTC date."""
    hosts: list[str] = []
    for url in start_urls:
        if "://" not in url:
            continue
        found = origin(url)
        scheme, rest = found.split("://", 1)
        host, _, port = rest.rpartition(":")
        if (scheme, port) in {("http", "80"), ("https", "443")}:
            rest = host
        if rest not in hosts:
            hosts.append(rest)
    stem = "+".join(sorted(hosts)) or fallback or "crawl"
    day = day or datetime.now(UTC)
    return f"{stem[:150]}-{day:%Y-%m-%d}"


@dataclass
class SnapshotInfo:
    id: int
    name: str
    crawl: str | None
    source: str
    started_at: datetime | None
    finished_at: datetime | None
    reason: str | None


def _info(row: Any) -> SnapshotInfo:
    return SnapshotInfo(
        row.id, row.name, row.crawl, row.source, row.started_at, row.finished_at, row.reason
    )


def list_snapshots(store: Store, crawl: str | None = None) -> list[SnapshotInfo]:
    """Snapshots in the order they began (of one crawl when ``crawl`` is given)."""
    if not has_tables(store):
        return []
    return [_info(r) for r in snapshots.listed(store, crawl)]


def find_snapshot(store: Store, name: str) -> SnapshotInfo | None:
    if not has_tables(store):
        return None
    row = snapshots.named(store, name)
    return _info(row) if row is not None else None


def load_stats(store: Store, snapshot_id: int) -> dict[int, dict[str, Any]]:
    """The snapshot's aggregates per template."""
    return {
        cid: json.loads(text) for cid, text in snapshots.template_stats(store, snapshot_id).items()
    }


def page_pairs(store: Store, baseline: int, current: int) -> list[tuple[Any, Any, bool, int]]:
    """(baseline template, current template, same bytes, pages) over the pages of both."""
    return snapshots.page_pairs(store, baseline, current)


class Snapshot:
    """The snapshot one run adds to; :meth:`add` from any thread, :meth:`finish` at the end."""

    def __init__(
        self,
        store: Store,
        info: SnapshotInfo,
        *,
        resumed: bool,
        sample_size: int = 30,
        min_fit: float = DEFAULT_MIN_FIT,
        start_templates: dict[int, str] | None = None,
    ):
        """``start_templates``: the templates as the run found them, when this object joins a
        run that began elsewhere (a label process); else they are read now."""
        self.store = store
        self.info = info
        self.resumed = resumed
        self.sample_size = sample_size
        self.min_fit = min_fit
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] = []
        #: Cluster id → sample of (rank, url, page id, tree), smallest ranks first.
        self._samples: dict[int, list[tuple[int, str, int, PackedTree]]] = {}
        #: The id a template goes by now, given the one a page was placed in: a template that
        #: merged into another after its pages were queued here leads to that one (set by the
        #: crawl's template clusters; without it, ids are taken as given).
        self.live: Callable[[int], int] | None = None
        #: How a page of a signature key, placed in a template, fits that template as the run
        #: leaves it (set by the crawl's template clusters; without it, fits stay as given).
        self.final_fit: Callable[[int, int], float | None] | None = None
        #: Page id -> its signature's key, by which :meth:`_settle_fits` measures it again.
        self._keys: dict[int, int] = {}
        self.added = 0
        #: Templates as they stood when this run began: the layout each page is measured against.
        self._start_templates: dict[int, str] = dict(start_templates or {})
        if start_templates is None:
            self._start_templates = snapshots.templates(store)

    @property
    def id(self) -> int:
        return self.info.id

    @property
    def start_templates(self) -> dict[int, str]:
        return dict(self._start_templates)

    def held(self) -> int:
        """Pages this snapshot holds in the store now."""
        return snapshots.held(self.store, self.id)

    def recover(self, run_id: int | None, held_at_start: int) -> None:
        """Take over from a labelling that ended without flushing (a label process killed):
        pages run ``run_id`` stored and the snapshot misses join it (their fit unknown), and
        :attr:`added` counts every page the run added, not only this object's.

        The pages a dead process kept in its template samples are not known here: the end's
        aggregates measure the pages sampled from now on.
        """
        if run_id is not None:
            snapshots.add_missing(self.store, self.id, run_id)
        with self._lock:
            self.added = max(0, self.held() - held_at_start)

    @property
    def name(self) -> str:
        return self.info.name

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        store: Store,
        *,
        name: str | None,
        crawl: str,
        source: str = "crawl",
        run_id: int | None = None,
        start_urls: Sequence[str] = (),
        fallback: str = "",
        sample_size: int = 30,
        min_fit: float = DEFAULT_MIN_FIT,
    ) -> Snapshot:
        """The snapshot this run adds to (module docstring), created when new."""
        ensure_tables(store)
        info = None
        if not name:
            earlier = list_snapshots(store, crawl)
            if earlier and earlier[-1].reason != FINISHED:
                info = earlier[-1]
            name = default_name(start_urls, fallback=fallback)
        info = info or find_snapshot(store, name)
        resumed = info is not None
        if info is None:
            if not snapshots.create(store, name, crawl, source):
                resumed = True  # another process of this crawl made it a moment ago
            info = find_snapshot(store, name)
            assert info is not None
        if run_id is not None:
            snapshots.add_run(store, info.id, run_id)
        snap = cls(store, info, resumed=resumed, sample_size=sample_size, min_fit=min_fit)
        logger.info(
            "visdup: snapshot %r (%s)",
            info.name,
            "continued" if resumed else "new: every page is fetched again",
        )
        return snap

    # ------------------------------------------------------------------ resume
    def urls(self) -> set[str]:
        """Canonical URLs of the pages this snapshot holds (a resumed run skips them)."""
        return snapshots.urls(self.store, self.id)

    def revisit(self) -> list[tuple[str, int]]:
        """Stored pages this snapshot has not fetched yet, shallowest first (resume only):
        those first stored by runs of the same sites (runs of schema version 1 name none)."""
        if not self.resumed:
            return []
        return snapshots.not_fetched(self.store, self.id, self.info.crawl)

    def stored_labels(self, url: str) -> Any:
        """The stored page of this URL (``id``, ``verdict``, ``kind``, ``duplicate_of``,
        ``similarity``): fetched again for this snapshot; None when it is new."""
        return snapshots.stored_labels(self.store, url)

    def page_id(self, url: str) -> int | None:
        """The stored page of this URL (fetched again for this snapshot), or None."""
        return snapshots.page_id(self.store, url)

    # ------------------------------------------------------------------ pages
    def add(
        self,
        page_id: int | None,
        url: str,
        *,
        cluster: int | None,
        fit: float | None,
        body_hash: str | None,
        tree: FlatTree | PackedTree | None = None,
        layout_key: int | None = None,
    ) -> None:
        """One page of this snapshot (thread-safe); rows are written in batches.
        ``layout_key``: its signature's, by which its fit is measured again at the end."""
        if page_id is None:
            return
        row = {
            "snapshot_id": self.id,
            "page_id": page_id,
            "cluster_id": cluster,
            "fit": None if fit is None else round(float(fit), 4),
            "body_hash": body_hash,
        }
        with self._lock:
            self._rows.append(row)
            self._remember(page_id, layout_key)
            self.added += 1
            if cluster is not None and tree is not None and tree.nodes:
                self._keep(cluster, url, page_id, tree)
            due = len(self._rows) >= BATCH
        if due:
            self.flush()

    def refit(
        self,
        page_id: int,
        url: str,
        *,
        cluster: int | None,
        fit: float | None,
        tree: FlatTree | PackedTree | None = None,
        layout_key: int | None = None,
    ) -> None:
        """A page whose row :meth:`recover` wrote (its fit unknown then): its fit and place in
        the samples now, not counted again."""
        if cluster is not None and self.live is not None:
            cluster = self.live(cluster)
        snapshots.refit(
            self.store, self.id, page_id, cluster, None if fit is None else round(float(fit), 4)
        )
        with self._lock:
            self._remember(page_id, layout_key)
            if cluster is not None and tree is not None and tree.nodes:
                self._keep(cluster, url, page_id, tree)

    def _remember(self, page_id: int, key: int | None) -> None:  # under the lock
        if key is not None and self.final_fit is not None:
            self._keys[page_id] = key

    def _settle_fits(self, placed: list[Any], live: Callable[[int], int]) -> list[Any]:
        """The placed rows (page id, template, fit, URL) with each page's fit measured again
        against its template as the run leaves it, the changed ones written: a fit measured as
        the page came depends on which template builds were done by then, so two crawls of
        one site in another order would store other fits. Pages written by an earlier process
        of a resumed run keep the fit it measured."""
        final = self.final_fit
        with self._lock:
            keys, self._keys = self._keys, {}
        if final is None or not keys:
            return placed
        settled, changed = [], []
        for page_id, cid, fit, url in placed:
            key = keys.get(page_id)
            if key is not None:
                now = final(key, live(cid))
                now = None if now is None else round(float(now), 4)
                if now != fit:
                    changed.append((page_id, now))
                    fit = now
            settled.append((page_id, cid, fit, url))
        snapshots.set_fits(self.store, self.id, changed)
        return settled

    def _keep(self, cluster: int, url: str, page_id: int, tree: FlatTree | PackedTree) -> None:
        sample = self._samples.setdefault(cluster, [])
        rank = sample_rank(url)
        if len(sample) >= self.sample_size and (rank, url) >= sample[-1][:2]:
            return
        entry = (rank, url, page_id, packed(tree))
        bisect.insort(sample, entry, key=lambda e: e[:2])
        del sample[self.sample_size :]

    def _follow_merges(self, live: Callable[[int], int]) -> None:
        """Rows of this snapshot written under a template that merged as they were written
        (the merge's own update ran before them) take the id it goes by now."""
        stale = {
            cid: live(cid)
            for cid in snapshots.page_templates(self.store, self.id)
            if live(cid) != cid
        }
        if stale:
            snapshots.rename_templates(self.store, self.id, stale)

    def _merge_samples(self, live: Callable[[int], int]) -> None:
        """Samples kept under a template that merged into another join that one's."""
        with self._lock:
            merged: dict[int, list[tuple[int, str, int, PackedTree]]] = {}
            for cid, entries in self._samples.items():
                merged.setdefault(live(cid), []).extend(entries)
            for entries in merged.values():
                entries.sort(key=lambda e: e[:2])
                del entries[self.sample_size :]
            self._samples = merged

    def add_links(
        self, page_id: int, urls: Iterable[str], depth: int, run_id: int | None, followed: bool
    ) -> None:
        """Links of a page fetched again: the new ones join the store's frontier."""
        self.store.add_links(page_id, urls, depth, run_id, followed)

    def _previous_clusters(self) -> dict[int, int]:
        """Page id → template in the last finished snapshot of the same sites before this one."""
        return snapshots.previous_templates(self.store, self.id, self.info.crawl, FINISHED)

    def flush(self) -> None:
        with self._lock:
            queued, self._rows = self._rows, []
        if not queued:
            return
        live = self.live
        if live is not None:  # merged since the row was queued: the rows already stored follow
            for row in queued:  # their template's merge, these take its id here
                if row["cluster_id"] is not None:
                    row["cluster_id"] = live(row["cluster_id"])
        snapshots.add_pages(self.store, queued)  # a row naming no stored page is refused alone

    # ------------------------------------------------------------------ the end
    def _starting_templates(self, live: Callable[[int], int]) -> dict[int, str]:
        """The templates as they were at the start, under the ids they go by now: a template
        renamed since (a page whose signature key is smaller joined it) or merged into another
        keeps its layout of then (the survivor's own when two met, else the smallest id's, as
        the clusters keep it)."""
        starts: dict[int, str] = {}
        chosen: dict[int, int] = {}
        for old_id, text in self._start_templates.items():
            now_id = live(old_id)
            was = chosen.get(now_id)
            if was is None or old_id == now_id or (was != now_id and old_id < was):
                starts[now_id], chosen[now_id] = text, old_id
        return starts

    @staticmethod
    def _moved(
        cid: int, entries: list[Any], before: dict[int, int], live: Callable[[int], int]
    ) -> dict[int, list[tuple[str, FlatTree]]]:
        """Sample pages another template held in the previous snapshot, by that template: how
        they now fit its layout, and what of it they miss, is the "where" of a replacement."""
        moved: dict[int, list[tuple[str, FlatTree]]] = {}
        for _r, u, page, tree in entries:
            was = before.get(page)
            if was is not None:
                was = live(was)  # a rename or merge since is no move
            if was is not None and was != cid:
                moved.setdefault(was, []).append((u, tree.unpack()))
        return moved

    def _on_layout(self, trees: list[tuple[str, FlatTree]], layout: Template) -> dict[str, Any]:
        """How pages fit another template's layout: ``n``, ``shares``, the first miss."""
        got = measure(trees, layout, None, min_fit=self.min_fit)
        return {"n": got["n"], "shares": got["shares"], "misses": got["misses"][:1]}

    def _previous_stats(self) -> dict[int, dict[str, Any]]:
        """The aggregates of the last finished snapshot of the same sites before this one."""
        earlier = [
            s
            for s in list_snapshots(self.store, self.info.crawl)
            if s.id < self.id and s.reason == FINISHED
        ]
        return load_stats(self.store, earlier[-1].id) if earlier else {}

    def _against(
        self,
        out: dict[int, dict[str, Any]],
        counts: Counter[int],
        starts: dict[int, str],
        template: Callable[[str | None], Template | None],
        live: Callable[[int], int],
    ) -> None:
        """A template new in this snapshot, beside one that lost half its pages or more since
        the previous snapshot: its sample pages measured on the lost one's layout (``against``)
        tell a redesign (they fit it badly) from visdup grouping the same layout anew (they fit
        it well), when the pages are not the same URLs (``moved`` covers those)."""
        new = [
            cid
            for cid in out
            if cid not in starts and len(self._samples.get(cid, [])) >= AGAINST_MIN_SAMPLE
        ]
        if not new:
            return
        lost: dict[int, dict[str, Any]] = {}
        for was, stats in self._previous_stats().items():
            now = live(was)
            pages = int(stats.get("pages") or 0)
            if now in starts and now not in new and counts.get(now, 0) < LOST_SHARE * pages:
                lost[now] = stats
        if not lost:
            return
        paths: dict[int, tuple[dict[int, int], int]] = {}
        for cid in sorted(new, key=lambda c: (-counts[c], c))[:AGAINST_TEMPLATES]:
            entries = self._samples[cid][:AGAINST_PAGES]
            trees = [(u, t.unpack()) for _r, u, _p, t in entries]
            mine = label_paths(trees[0][1])
            ranked: list[tuple[int, float, int]] = []
            for was, stats in lost.items():
                layout = template(starts[was])
                if layout is None:
                    continue
                if was not in paths:
                    paths[was] = (label_paths(layout.tree), max(1, layout.tree.nodes))
                theirs, size = paths[was]
                shared = _pattern_overlap(out[cid].get("patterns") or {}, stats)
                ranked.append((-shared, -stm_upper_bound(mine, theirs) / size, was))
            found = {}
            for _s, _b, was in sorted(ranked)[:AGAINST]:
                layout = template(starts[was])
                assert layout is not None
                found[str(was)] = self._on_layout(trees, layout)
            if found:
                out[cid]["against"] = found

    def finish(self, reason: str | None) -> dict[int, dict[str, Any]]:
        """Write the rows left, the per-template aggregates, and the run's close reason."""
        self.flush()
        counts: Counter[int] = Counter()
        fits: dict[int, list[float]] = {}
        patterns: dict[int, Counter[str]] = {}
        live = self.live or (lambda cid: cid)
        self._merge_samples(live)
        self._follow_merges(live)
        placed, now_templates = snapshots.placed_pages(self.store, self.id)
        for _page, cid, fit, url in self._settle_fits(placed, live):
            cid = live(cid)  # a row written as its template merged elsewhere
            counts[cid] += 1
            if fit is not None:
                fits.setdefault(cid, []).append(float(fit))
            patterns.setdefault(cid, Counter())[url_pattern(url)] += 1
        old: dict[int, dict[str, Any]] = {}
        for old_id, stats in load_stats(self.store, self.id).items():  # earlier runs' parts
            now_id = live(old_id)  # a template that merged since: its parts join the survivor's
            old[now_id] = merge_sample(old[now_id], stats) if now_id in old else stats
        parsed: dict[str, Template] = {}

        def template(text: str | None) -> Template | None:
            if text is None:
                return None
            if text not in parsed:
                try:
                    parsed[text] = Template.from_dict(json.loads(text))
                except (ValueError, KeyError, TypeError):
                    logger.warning("visdup: a stored template cannot be read; skipped")
                    return None
            return parsed[text]

        before = self._previous_clusters()
        starts = self._starting_templates(live)
        out: dict[int, dict[str, Any]] = {}
        for cid, n in counts.items():
            start = template(starts.get(cid))
            end = template(now_templates.get(cid))
            entries = self._samples.get(cid, [])
            sample = [(u, t.unpack()) for _r, u, _p, t in entries]
            part = measure(sample, start or end, end or start, min_fit=self.min_fit)
            if start is not None:
                part["start_layout"] = layout_digest(starts.get(cid))
            else:  # measured with the end's template: the same as the fields
                part.pop("fields_start", None)
                part.pop("masks_start", None)
            if cid in old:
                part = merge_sample(old[cid], part)
            if (part.get("fields_start"), part.get("masks_start")) == (
                part.get("fields"),
                part.get("masks"),
            ):
                part.pop("fields_start", None)
                part.pop("masks_start", None)
            stats = template_stats(
                pages=n, fits=fits.get(cid, []), patterns=patterns[cid], sample=part
            )
            stats["layout"] = layout_digest(now_templates.get(cid))
            moved = self._moved(cid, entries, before, live)
            if moved:
                stats["moved"] = {}
            for was, trees in sorted(moved.items(), key=lambda kv: -len(kv[1]))[:2]:
                layout = template(starts.get(was))
                if layout is not None:
                    stats["moved"][str(was)] = self._on_layout(trees, layout)
            stats["signature"] = SIGNATURE_VERSION  # templates of another version: not compared
            out[cid] = stats
        self._against(out, counts, starts, template, live)
        out = {cid: fit_limit(stats) for cid, stats in out.items()}
        snapshots.close(
            self.store,
            self.id,
            [(cid, encode(stats)) for cid, stats in sorted(out.items())],
            reason,
        )
        self.info.reason = reason
        self._samples.clear()
        return out
