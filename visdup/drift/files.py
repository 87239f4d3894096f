"""Page files and WARC records as a snapshot (``visdup dups --db URL --crawl-id NAME PATH...``).

The same analysis as a crawl: every page is clustered into the store's template clusters
(:class:`visdup.templates.assign.CrawlClusters`, in input order), labelled once when new, and
recorded in the snapshot with its template, fit and body hash; the snapshot's aggregates are
written and compared with the previous snapshot of files at the end.

A page is named as a site would name it, so that two snapshots of one site match page by page:
a file by its path under the PATH it was found in (``books/0001.html`` for ``dups s1/`` and
``dups s2/`` alike), a single file by its name, a WARC record by its target URI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from visdup.dedup.offline import CHUNK, FileLabeller, _analyse_item
from visdup.drift.alarms import Drift, close_snapshot
from visdup.drift.snapshot import Snapshot
from visdup.engine import Engine, LocalEngine
from visdup.storage.store import Store
from visdup.templates.assign import CrawlClusters

#: The ``crawl`` key of snapshots made from files: they are compared with each other.
FILES_CRAWL = "files"


class SiteNamedFiles:
    """(name, bytes) of the pages under PATH..., named relative to the PATH that holds them."""

    def __init__(self, paths: Sequence[str]):
        from visdup.page.files import PageFiles

        self.paths = paths
        self._readers = [(raw, PageFiles([raw])) for raw in paths]

    @property
    def status(self) -> int:
        return max((r.status for _raw, r in self._readers), default=0)

    def __iter__(self) -> Iterator[tuple[str, bytes]]:
        for raw, reader in self._readers:
            base = Path(raw)
            folder = base.is_dir()
            for name, data in reader:
                if "://" in name:
                    yield name, data
                elif folder:
                    yield Path(os.path.relpath(name, base)).as_posix(), data
                else:
                    yield Path(name).name, data


@dataclass
class FilesSnapshot:
    snapshot: str
    pages: int
    stats: dict[str, int]
    drift: Drift


def snapshot_files(
    pages: SiteNamedFiles | Sequence[tuple[str, bytes]],
    *,
    db: str,
    name: str,
    overrides: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
) -> FilesSnapshot:
    """Store ``pages`` as the snapshot ``name`` of the store at ``db`` and compare it."""
    store = Store.from_url(db)
    try:
        return _run(store, pages, name, overrides, engine)
    finally:
        store.close()


def _run(
    store: Store,
    pages: Any,
    name: str,
    overrides: Mapping[str, Any] | None,
    engine: Engine | None,
) -> FilesSnapshot:
    labeller = FileLabeller(store, overrides)
    opts = labeller.settings
    labeller.options = replace(labeller.options, template=True)
    min_fit = opts.extract_min_fit
    clusters = CrawlClusters(
        store,
        threshold=opts.cluster_threshold,
        template_min_pages=opts.template_min_pages,
        template_max_pages=opts.template_max_pages,
        min_fit=min_fit,
        extract=False,
        background=False,
    )
    snap = Snapshot.open(
        store,
        name=name,
        crawl=FILES_CRAWL,
        source="files",
        run_id=labeller.run_id,
        sample_size=opts.drift_sample,
        min_fit=min_fit,
    )
    snap.live = clusters.live  # rows queued before their template merged take its new id
    snap.final_fit = clusters.final_fit
    held = snap.urls() if snap.resumed else set()
    engine = engine or LocalEngine()
    analyse_one = partial(_analyse_item, labeller.options)
    count = 0
    it = iter(pages)
    while chunk := [item for item in islice(it, CHUNK)]:
        chunk = [(n, b) for n, b in chunk if n not in held]
        for (key, body), page in zip(chunk, engine.map(analyse_one, chunk), strict=True):
            cluster = fit = None
            if page.template_input is not None and page.template_input.layout.nodes:
                assignment = clusters.assign(key, page.template_input)
                cluster, fit = assignment.cluster, assignment.fit
            page_id = snap.page_id(key)
            if page_id is None:  # a page is labelled once, by the first snapshot that has it
                page_id = labeller.add(key, body, page, cluster=cluster)
            snap.add(
                page_id,
                key,
                cluster=cluster,
                fit=fit,
                body_hash=page.body_hash,
                tree=page.template_input.tree if page.template_input is not None else None,
                layout_key=page.template_input.layout.key if page.template_input else None,
            )
            count += 1
    clusters.finish()
    labeller.settle()
    store.finish_run(labeller.run_id, "finished", labeller.counts)
    stats, result = close_snapshot(snap, "finished")
    return FilesSnapshot(snap.name, count, stats, result)
