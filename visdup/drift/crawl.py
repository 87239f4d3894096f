"""The crawl's side of snapshots: open one when the crawl opens, record pages, close it.

A failure here never fails the crawl: the snapshot is switched off with one ERROR line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from visdup.drift.snapshot import Snapshot

if TYPE_CHECKING:
    from visdup.config import Options
    from visdup.dedup.analysis import PageAnalysis
    from visdup.dedup.jobs import PageJob
    from visdup.drift.alarms import Closed
    from visdup.storage.store import PageRecord, Store

logger = logging.getLogger(__name__)


def open_crawl_snapshot(
    store: Store,
    opts: Options,
    *,
    run_id: int,
    crawl: str,
    start_urls: Sequence[str],
    spider: str,
) -> Snapshot | None:
    """The snapshot this run adds to (None when VISDUP_DRIFT_ENABLED is off or it failed)."""
    if not opts.drift_enabled:
        return None
    try:
        return Snapshot.open(
            store,
            name=opts.crawl_id or None,
            crawl=crawl,
            run_id=run_id,
            start_urls=start_urls,
            fallback=spider,
            sample_size=opts.drift_sample,
            min_fit=opts.extract_min_fit,
        )
    except Exception:
        logger.exception("visdup: cannot open the crawl's snapshot; drift alarms are off")
        return None


def record_page(
    snapshot: Snapshot,
    item: PageJob,
    record: PageRecord,
    analysis: PageAnalysis,
    page_id: int | None,
    run_id: int | None,
    *,
    refetched: bool,
) -> None:
    """One page of the snapshot; a page fetched again also hands its new links to the store.

    A failure is logged and the page goes on: the snapshot misses one row, the crawl nothing.
    """
    try:
        found = analysis.template_input
        snapshot.add(
            page_id,
            item.url,
            cluster=item.cluster,
            fit=item.fit,
            body_hash=record.body_hash,
            tree=found.tree if found is not None else None,
            layout_key=found.layout.key if found is not None else None,
        )
        if refetched and page_id is not None and item.links:
            snapshot.add_links(page_id, item.links, (item.depth or 0) + 1, run_id, True)
    except Exception:
        logger.exception("visdup: cannot record %s in snapshot %s", item.url, snapshot.name)


def close_crawl_snapshot(snapshot: Snapshot, reason: str | None) -> dict[str, int]:
    """Aggregates, comparison, one WARNING per alarm; the stats totals (empty on failure)."""
    return say_crawl_snapshot(snapshot, finish_crawl_snapshot(snapshot, reason))


def finish_crawl_snapshot(snapshot: Snapshot, reason: str | None) -> Closed | None:
    """Aggregates and comparison, unsaid (:func:`say_crawl_snapshot` logs them); None on a
    failure, which is logged."""
    from visdup.drift.alarms import finish_snapshot

    try:
        return finish_snapshot(snapshot, reason)
    except Exception:
        logger.exception("visdup: cannot close the snapshot %s", snapshot.name)
        return None


def say_crawl_snapshot(snapshot: Snapshot, closed: Closed | None) -> dict[str, int]:
    """One WARNING per alarm of a snapshot :func:`finish_crawl_snapshot` closed; the stats
    totals (empty when it failed)."""
    from visdup.drift.alarms import say_closed

    if closed is None:
        return {}
    try:
        totals, _result = say_closed(snapshot, closed)
    except Exception:
        logger.exception("visdup: cannot close the snapshot %s", snapshot.name)
        return {}
    return totals
