"""Drift between two stored snapshots, and what a crawl says about it when it ends."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from visdup.drift.compare import NOTE, SEVERITIES, Alarm, Same, compare, split
from visdup.drift.snapshot import (
    FINISHED,
    SnapshotInfo,
    find_snapshot,
    list_snapshots,
    load_stats,
    page_pairs,
)
from visdup.errors import InputError

if TYPE_CHECKING:
    from visdup.drift.snapshot import Snapshot
    from visdup.storage.store import Store

logger = logging.getLogger(__name__)

#: Snapshots before the baseline whose spread sets the tolerances.
HISTORY = 3


@dataclass
class Drift:
    current: SnapshotInfo | None
    baseline: SnapshotInfo | None
    alarms: list[Alarm] = field(default_factory=list)
    templates: int = 0
    #: What moved without evidence enough to alarm, and templates only regrouped.
    notes: list[Alarm] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "current": self.current.name if self.current else None,
            "baseline": self.baseline.name if self.baseline else None,
            "templates": self.templates,
            "alarms": [a.to_dict() for a in self.alarms],
            "notes": [a.to_dict() for a in self.notes],
        }

    def counts(self) -> dict[str, int]:
        """Alarms per severity, and ``note``: the notes."""
        out = {s: sum(1 for a in self.alarms if a.severity == s) for s in SEVERITIES}
        out[NOTE] = len(self.notes)
        return out


def _measured(infos: list[SnapshotInfo]) -> list[SnapshotInfo]:
    """Complete snapshots: their last run finished (a stopped one is compared once continued
    to its end, or when named)."""
    return [s for s in infos if s.finished_at is not None and s.reason == FINISHED]


def _named(store: Store, name: str, what: str) -> SnapshotInfo:
    info = find_snapshot(store, name)
    if info is None:
        known = ", ".join(s.name for s in list_snapshots(store)[-5:]) or "none"
        raise InputError(f"no snapshot named {name!r} ({what}); recent snapshots: {known}")
    return info


def drift(store: Store, *, baseline: str | None = None, current: str | None = None) -> Drift:
    """Alarms of ``current`` (default: the last measured snapshot) against ``baseline``
    (default: the snapshot of the same crawl before it), each with the snapshot since when."""
    every = _measured(list_snapshots(store))
    cur = _named(store, current, "--current") if current else (every[-1] if every else None)
    if cur is None:
        return Drift(None, None)
    same = [s for s in every if s.crawl == cur.crawl and s.id != cur.id]
    if baseline:
        base: SnapshotInfo | None = _named(store, baseline, "--baseline")
    else:
        earlier = [s for s in same if s.id < cur.id]
        base = earlier[-1] if earlier else None
    if base is None:
        return Drift(cur, None, templates=len(load_stats(store, cur.id)))
    base_stats = load_stats(store, base.id)
    cur_stats = load_stats(store, cur.id)
    version = signature_version(cur_stats)
    if signature_version(base_stats) not in (version, None) and version is not None:
        # templates are signatures' clusters: another version groups (and names) them
        # otherwise, and every template would look replaced
        logger.warning(
            "visdup: drift in %s against %s: their templates were made by different versions "
            "of visdup's layout signatures; no alarms between them (%s is the new baseline)",
            cur.name,
            base.name,
            cur.name,
        )
        return Drift(cur, base, templates=len(cur_stats))
    before = [s for s in same if s.id < base.id][-HISTORY:]
    history = [h for h in (load_stats(store, s.id) for s in before) if _comparable(h, version)]
    history.append(base_stats)
    found = compare(cur_stats, base_stats, history, unchanged(store, base.id, cur.id))
    between = [s for s in same if base.id < s.id < cur.id] if base.id < cur.id else []
    shown: list[tuple[str, dict[int, Alarm]]] = []
    for s in between:
        stats = load_stats(store, s.id)
        if not _comparable(stats, version):
            continue
        seen = compare(stats, base_stats, history, unchanged(store, base.id, s.id))
        shown.append((s.name, {a.template: a for a in split(seen)[0]}))
    for alarm in found:
        _since(alarm, cur.name, shown)
    alarms, notes = split(found)
    return Drift(cur, base, alarms, templates=len(cur_stats), notes=notes)


def _since(alarm: Alarm, current: str, shown: list[tuple[str, dict[int, Alarm]]]) -> None:
    """The first snapshot after the baseline that shows the template's alarm (a note is only
    the current snapshot's), what it was there, and its severity at its worst."""
    first = next(
        ((name, seen[alarm.template]) for name, seen in shown if alarm.template in seen), None
    )
    if first is None or alarm.severity == NOTE:
        alarm.since = current
        return
    alarm.since, then = first
    if alarm.change == "fields" and then.change in {"changed", "replaced"}:
        # the layout changed then; the template has since been rebuilt on the new pages
        alarm.change, alarm.where = then.change, then.where
        alarm.replaced_by, alarm.detail = then.replaced_by, then.detail
    if alarm.where is None and then.where is not None:
        alarm.where = then.where  # seen where it began
    if then.severity == "error":
        alarm.severity = "error"


def signature_version(stats: dict[int, dict[str, Any]]) -> int | None:
    """The layout signature version a snapshot's templates were made with (None: no templates;
    1: written before versions were recorded)."""
    versions = [int(s.get("signature") or 1) for s in stats.values()]
    return max(versions) if versions else None


def _comparable(stats: dict[int, dict[str, Any]], version: int | None) -> bool:
    return signature_version(stats) in (version, None) or version is None


def unchanged(store: Store, baseline: int, current: int) -> Same:
    """Per template, the share of its pages fetched in both snapshots with the same bytes."""
    before: dict[int, list[int]] = {}
    after: dict[int, list[int]] = {}
    for old, new, equal, count in page_pairs(store, baseline, current):
        for table, cid in ((before, old), (after, new)):
            if cid is not None:
                tally = table.setdefault(cid, [0, 0])
                tally[0] += count if equal else 0
                tally[1] += count
    return Same(
        before={c: s / n for c, (s, n) in before.items() if n},
        after={c: s / n for c, (s, n) in after.items() if n},
    )


def close_snapshot(snapshot: Snapshot, reason: str | None) -> tuple[dict[str, int], Drift]:
    """A crawl's end: write the snapshot's aggregates, compare it with the one before, log one
    WARNING per alarm; returns the stats totals (``visdup/drift/...``) and the comparison."""
    return say_closed(snapshot, finish_snapshot(snapshot, reason))


@dataclass
class Closed:
    """A snapshot written and compared (:func:`finish_snapshot`), not yet said."""

    reason: str | None
    result: Drift
    #: Seconds its aggregates took to write.
    seconds: float


def finish_snapshot(snapshot: Snapshot, reason: str | None) -> Closed:
    """Write the snapshot's aggregates and compare it with the one before, saying nothing:
    a crawl's end runs it beside the final labels, whose lines then come in one order."""
    started = time.perf_counter()
    snapshot.finish(reason)
    seconds = time.perf_counter() - started
    if reason != FINISHED:
        result = Drift(snapshot.info, None, templates=len(load_stats(snapshot.store, snapshot.id)))
    else:
        result = drift(snapshot.store, current=snapshot.name)
    return Closed(reason, result, seconds)


def say_closed(snapshot: Snapshot, closed: Closed) -> tuple[dict[str, int], Drift]:
    """Log what :func:`finish_snapshot` found, one WARNING per alarm; the stats totals
    (``visdup/drift/...``) and the comparison."""
    result = closed.result
    logger.info(
        "visdup: snapshot %s: %d pages this run, aggregates written in %.1f s",
        snapshot.name,
        snapshot.added,
        closed.seconds,
    )
    if closed.reason != FINISHED:
        logger.info(
            "visdup: snapshot %s stopped (%s): compared with the one before once a run of it "
            "finishes",
            snapshot.name,
            closed.reason,
        )
    counts = result.counts()
    baseline = result.baseline.name if result.baseline else "-"
    for alarm in result.alarms:
        logger.warning("visdup: drift in %s against %s: %s", snapshot.name, baseline, alarm.line())
    for note in result.notes:
        logger.info("visdup: drift in %s against %s: %s", snapshot.name, baseline, note.line())
    totals = {
        "visdup/drift/pages": snapshot.added,
        "visdup/drift/templates": result.templates,
        "visdup/drift/alarms": len(result.alarms),
        "visdup/drift/warnings": counts["warning"],
        "visdup/drift/errors": counts["error"],
        "visdup/drift/notes": counts[NOTE],
    }
    return totals, result
