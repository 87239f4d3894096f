"""What crosses between the crawl's process and its labelling: a page's facts and the answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from visdup.templates.assign import Assignment


@dataclass(slots=True)
class PageJob:
    """What labelling reads of a page item, besides its analysis (it crosses to the label
    process; the names are the item's, so the snapshot reads either)."""

    url: str
    final_url: str | None = None
    status: int | None = None
    depth: int | None = None
    referer: str | None = None
    content_type: str | None = None
    encoding: str | None = None
    links: list[str] = field(default_factory=list)
    body: bytes | None = None
    cluster: int | None = None
    fit: float | None = None

    #: The fetch's own facts, as the store's page record names them.
    FETCH = ("final_url", "status", "depth", "referer", "content_type", "encoding", "links")

    @classmethod
    def of(cls, item: Any, body: bytes | None) -> PageJob:
        """The job of a page item (``body``: what the store is to keep, or None)."""
        fields = {name: getattr(item, name) for name in cls.FETCH}
        fields["links"] = list(fields["links"])
        return cls(url=item.url, body=body, cluster=item.cluster, fit=item.fit, **fields)

    def fetch(self) -> dict[str, Any]:
        facts = {name: getattr(self, name) for name in self.FETCH}
        facts["links"] = list(facts["links"])
        return facts


@dataclass(slots=True)
class Outcome:
    """What labelling tells the crawl of a page."""

    #: The new page row; None when the URL was stored before (its stored labels follow).
    page_id: int | None
    problem: str | None = None
    truncated: bool = False
    verdict: str | None = None
    kind: str | None = None
    similarity: float | None = None
    duplicate_of: int | None = None
    #: Pages in the page's group when it joined it (only with VISDUP_CLUSTER_CAP).
    group_size: int | None = None
    #: Its template cluster, when the call placed it there too (``label(place=True)``).
    assignment: Assignment | None = None
