"""What the store holds, read once for every report format: pages, clusters, runs, settings.

The report never talks SQL itself: it reads through :class:`visdup.storage.store.Store` into
plain values, so the text, JSON, per-page and HTML reports (and a re-analysis) all start from
the same snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from visdup.report.drift import drift_section
from visdup.report.responses import Responses, load_responses
from visdup.storage.body import unpack_body
from visdup.storage.store import Store
from visdup.storage.urls import mask_password

#: Columns of a stored page the reports need (never the body, the term or the content print:
#: those are read on demand, for the few pages a section shows).
PAGE_COLUMNS = (
    "id",
    "url",
    "title",
    "status",
    "verdict",
    "kind",
    "duplicate_of",
    "similarity",
    "content_duplicate_of",
    "content_similarity",
    "content_kind",
    "problem",
    "cluster_id",
    "canonical",
    "referer",
)

#: Settings that shape verdicts and groups, shown in the overview when a run recorded them.
VERDICT_SETTINGS = (
    "VISDUP_SIMILARITY_THRESHOLD",
    "VISDUP_TEMPLATE_THRESHOLD",
    "VISDUP_CONTENT_ENABLED",
    "VISDUP_CONTENT_THRESHOLD",
    "VISDUP_CONTENT_MIN_SENTENCES",
    "VISDUP_HAMMING_K",
    "VISDUP_CANDIDATES",
    "VISDUP_MAX_TERM_NODES",
    "VISDUP_CLUSTER_ENABLED",
    "VISDUP_CLUSTER_THRESHOLD",
    "VISDUP_DUPLICATE_POLICY",
)

#: Prefix of the run statistics that record a crawl's settings (see visdup.progress).
SETTING_STAT = "visdup/settings/"


@dataclass
class PageRow:
    """One stored page as the reports see it."""

    id: int
    url: str
    title: str | None = None
    status: int | None = None
    verdict: str | None = None
    kind: str | None = None
    duplicate_of: int | None = None
    similarity: float | None = None
    content_duplicate_of: int | None = None
    content_similarity: float | None = None
    content_kind: str | None = None
    problem: str | None = None
    cluster_id: int | None = None
    canonical: str | None = None
    #: The page whose link the crawl followed to fetch this one (its Referer).
    referer: str | None = None

    def with_labels(self, **labels: Any) -> PageRow:
        return replace(self, **labels)


@dataclass
class ClusterRow:
    id: int
    representative: str | None
    fields: list[str]


@dataclass
class RunRow:
    id: int
    spider: str
    started_at: datetime | None
    finished_at: datetime | None
    reason: str | None
    stats: dict[str, Any]


@dataclass
class StoreData:
    """A snapshot of one store, with the few lookups every report needs."""

    database_url: str
    pages: list[PageRow]
    clusters: list[ClusterRow] = field(default_factory=list)
    runs: list[RunRow] = field(default_factory=list)
    #: Where the verdicts come from: "crawl", or a description of the re-analysis.
    source: str = "crawl"
    #: Settings the verdicts were computed with (recorded by the crawl, or the re-analysis's).
    settings: dict[str, Any] = field(default_factory=dict)
    #: The last snapshot against the one before (visdup.report.drift), None without snapshots.
    drift: dict[str, Any] | None = None
    #: URLs that gave no HTML page (redirects, 4xx, 5xx, other content, robots.txt).
    responses: Responses = field(default_factory=Responses)
    #: Reads stored page bodies by id, while the store is open (None: not from a store).
    bodies: Callable[[list[int]], dict[int, bytes | None]] | None = field(
        default=None, repr=False, compare=False
    )

    def url_of(self) -> dict[int, str]:
        return {p.id: p.url for p in self.pages}


def load(store: Store, database_url: str = "") -> StoreData:
    names = {f.name for f in fields(PageRow)}
    pages = [
        PageRow(**{k: v for k, v in row._mapping.items() if k in names})
        for row in store.rows(*PAGE_COLUMNS)
    ]
    clusters = [
        ClusterRow(c.id, c.representative, _field_names(c.template)) for c in store.cluster_rows()
    ]
    runs = [
        RunRow(r.id, r.spider, r.started_at, r.finished_at, r.reason, _stats(r.stats))
        for r in store.run_rows()
    ]
    return StoreData(
        database_url=safe_url(database_url),
        pages=pages,
        clusters=clusters,
        runs=runs,
        settings=recorded_settings(runs),
        drift=drift_section(store),
        responses=load_responses(store, {p.url for p in pages}),
        bodies=lambda ids: {i: unpack_body(b) for i, b in store.values("body", ids).items()},
    )


def recorded_settings(runs: list[RunRow]) -> dict[str, Any]:
    """The verdict settings the latest run that recorded them was crawled with."""
    for run in reversed(runs):
        found = {
            key[len(SETTING_STAT) :]: value
            for key, value in run.stats.items()
            if key.startswith(SETTING_STAT)
        }
        if found:
            return found
    return {}


def terms(store: Store, ids: list[int]) -> dict[int, str]:
    """Stored term text of the given pages (pages without a term are left out)."""
    out: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        out.update({i: t for i, t in store.values("term", ids[start : start + 500]).items() if t})
    return out


def safe_url(url: str) -> str:
    """A database URL without its password: reports are shared."""
    return mask_password(url)


def _stats(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _field_names(template: str | None) -> list[str]:
    if not template:
        return []
    try:
        return [f["name"] for f in json.loads(template).get("fields", [])]
    except (ValueError, TypeError, KeyError, AttributeError):
        return []


#: Stored comparisons by page: (other page, channel, similarity), best first per channel.
Comparisons = dict[int, list[tuple[int, str, float]]]


@dataclass
class Similarities:
    """Similarities of compared pairs per channel, split into confirmed and rejected.

    ``complete`` says whether every compared candidate is here, or (for some or all pages)
    only each page's closest match, which is all a store written without comparison rows
    can tell; ``source`` says which, in words.
    """

    structure_accepted: list[float] = field(default_factory=list)
    structure_rejected: list[float] = field(default_factory=list)
    content_accepted: list[float] = field(default_factory=list)
    content_rejected: list[float] = field(default_factory=list)
    complete: bool = False
    source: str = "each page's closest match"

    def add(self, channel: str, value: float, accepted: bool) -> None:
        content = channel == "content"
        if accepted:
            (self.content_accepted if content else self.structure_accepted).append(value)
        else:
            (self.content_rejected if content else self.structure_rejected).append(value)

    def as_json(self, settings: dict[str, Any]) -> dict[str, Any]:
        """What the histograms show: counts per channel, the thresholds, and completeness."""
        theta, _template, content_theta = thresholds(settings)
        return {
            "complete": self.complete,
            "source": self.source,
            "structure": {
                "compared": len(self.structure_accepted) + len(self.structure_rejected),
                "confirmed": len(self.structure_accepted),
                "threshold": theta,
            },
            "content": {
                "compared": len(self.content_accepted) + len(self.content_rejected),
                "confirmed": len(self.content_accepted),
                "threshold": content_theta,
            },
        }


def thresholds(settings: dict[str, Any]) -> tuple[float, float, float]:
    """(near-duplicate, template, content) thresholds of the settings, defaults filled in."""
    from visdup.config import defaults

    known = {**defaults(), **settings}
    return (
        float(known["VISDUP_SIMILARITY_THRESHOLD"]),
        float(known["VISDUP_TEMPLATE_THRESHOLD"]),
        float(known["VISDUP_CONTENT_THRESHOLD"]),
    )


def load_comparisons(store: Store) -> tuple[Comparisons | None, int]:
    """Every stored comparison by page, and how many pages with a closest match have none.

    None when the store predates the comparisons table. Pages stored before it (or with
    VISDUP_COMPARISONS_MAX at 0) have a closest match but no rows: the second number.
    """
    if not store.has_comparisons():
        return None, 0
    out: Comparisons = {}
    for r in store.comparison_rows():
        out.setdefault(r.page_id, []).append((r.other_id, r.channel, r.similarity))
    return out, store.pages_without_comparisons()


def similarities(
    pages: list[PageRow],
    settings: dict[str, Any],
    comparisons: Comparisons | None = None,
    missing: int = 0,
) -> Similarities:
    """Every stored comparison, split at the settings' thresholds; each page without any
    stored comparison counts its closest match (from the verdict columns) instead.

    Confirmed means at or above the channel's threshold (the near-duplicate threshold for
    structure), as the settings say (the defaults where the crawl recorded none).
    """
    theta, _template, content_theta = thresholds(settings)
    out = Similarities()
    if comparisons is None:
        out.source = (
            "each page's closest match: the store predates visdup_comparisons, where crawls "
            "keep every candidate compared (report --threshold θ replays the analysis and "
            "shows every one)"
        )
    elif missing:
        out.source = (
            f"every candidate compared, except {missing} pages stored without comparisons "
            "(their closest match only)"
        )
    else:
        out.complete = True
        out.source = "every candidate compared (the best VISDUP_COMPARISONS_MAX of each page)"
    cut = {"structure": theta, "content": content_theta}
    for p in pages:
        rows = comparisons.get(p.id) if comparisons else None
        if rows:
            for _other, channel, sim in rows:
                out.add(channel, sim, sim >= cut.get(channel, theta))
            continue
        if out.complete:  # compared only as the other page (stored before its original)
            continue
        if p.kind != "exact" and p.similarity is not None:
            out.add("structure", p.similarity, p.similarity >= theta)
        if p.content_similarity is not None:
            out.add("content", p.content_similarity, p.content_similarity >= content_theta)
    return out


def closest_matches(pages: list[PageRow], settings: dict[str, Any]) -> Similarities:
    """Each page's closest stored match, from the verdict columns (no rejected candidates)."""
    return similarities(pages, settings)
