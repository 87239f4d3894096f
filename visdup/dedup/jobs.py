"""What crosses between the crawl's process and its labelling: a page's facts and the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from visdup.errors import VisdupError
from visdup.page.fetch import Fetch, fetch_facts

if TYPE_CHECKING:
    from visdup.templates.assign import Assignment


@dataclass(slots=True)
class PageJob(Fetch):
    """What labelling reads of a page item, besides its analysis (it crosses to the label
    process): the fetch's facts, the body the store is to keep, and the template the page
    was placed in."""

    body: bytes | None = None
    cluster: int | None = None
    fit: float | None = None

    @classmethod
    def of(cls, item: Any, body: bytes | None) -> PageJob:
        """The job of a page item (``body``: what the store is to keep, or None)."""
        return cls(url=item.url, body=body, cluster=item.cluster, fit=item.fit, **fetch_facts(item))

    def fetch(self) -> dict[str, Any]:
        return self.fetch_facts()


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


class LabelFailed(VisdupError):
    """A page was placed in its template cluster, then its labelling failed: the placing is
    stored, and ``assignment`` carries what it gave (the cluster, the records it made)."""

    def __init__(self, message: str, assignment: Assignment):
        super().__init__(message)
        self.assignment = assignment
