"""The URLs a crawl met that gave no HTML page, as an auditor reads them: broken links, server
errors, redirects, other content and URLs robots.txt forbade, each with the page linking there.

A URL stored since as a page (a 503 that answered on the next crawl) is no longer listed: the
store says what the site answers now; a redirect stays listed (a store written before pages
were kept under their final URL holds the page under the URL linked to). A store made before
visdup kept these rows has none, and the report says so instead of showing an empty list as if
the site had no broken link.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from visdup.storage.responses import KINDS

if TYPE_CHECKING:
    from visdup.storage.store import Store

#: Each kind in an auditor's words, the most serious first (the order of KINDS).
KIND_WORDS = {
    "client_error": "broken (4xx)",
    "server_error": "server error (5xx)",
    "failed": "no answer",
    "redirect": "redirect (3xx)",
    "not_html": "not an HTML page",
    "robots": "blocked by robots.txt",
    "other": "other answer",
}

#: Kinds that are errors of the site: a link to them is broken.
BROKEN = ("client_error", "server_error", "failed")

#: What the report says where the store keeps no responses.
NOT_RECORDED = (
    "this store was written by a visdup that did not record redirects, 4xx/5xx answers, other "
    "content or URLs robots.txt forbade: crawl the site again to list them"
)


@dataclass(frozen=True)
class ResponseRow:
    """One URL that gave no HTML page."""

    url: str
    kind: str
    status: int | None = None
    target: str | None = None
    content_type: str | None = None
    referer: str | None = None
    reason: str | None = None

    def answer(self) -> str:
        """What the URL answered, in words: ``404``, ``301 → /new.html``, ``application/pdf``."""
        if self.kind == "redirect":
            return f"{self.status} → {self.target}" if self.target else str(self.status)
        if self.kind == "not_html":
            kind = (self.content_type or "no Content-Type").split(";")[0].strip()
            return f"{self.status} {kind}"
        if self.status is not None:
            return str(self.status)
        return self.reason or ""

    def as_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "kind": self.kind,
            "status": self.status,
            "target": self.target,
            "content_type": self.content_type,
            "linked_from": self.referer,
            "reason": self.reason,
        }


@dataclass
class Responses:
    """The responses section's rows, most serious kind first, then by URL."""

    rows: list[ResponseRow] = field(default_factory=list)
    #: Whether the store records responses at all (False: made before it did).
    recorded: bool = True

    def counts(self) -> dict[str, int]:
        found = Counter(r.kind for r in self.rows)
        return {k: found[k] for k in KINDS if found[k]}

    def broken(self) -> list[ResponseRow]:
        return [r for r in self.rows if r.kind in BROKEN]

    def as_json(self) -> dict[str, Any]:
        if not self.recorded:
            return {"recorded": False, "note": NOT_RECORDED}
        return {"counts": self.counts(), "urls": [r.as_json() for r in self.rows]}


def load_responses(store: Store, page_urls: set[str]) -> Responses:
    """The store's responses, less the errors of URLs stored since as pages."""
    if not store.has_responses():
        return Responses(recorded=False)
    rank = {k: i for i, k in enumerate(KINDS)}
    rows = [
        ResponseRow(r.url, r.kind, r.status, r.target, r.content_type, r.referer, r.reason)
        for r in store.response_rows()
        if r.kind == "redirect" or r.url not in page_urls
    ]
    rows.sort(key=lambda r: (rank.get(r.kind, len(rank)), r.url))
    return Responses(rows)


def summary_line(section: dict[str, Any]) -> str:
    """One line of :meth:`Responses.as_json`: ``broken (4xx) 1, redirect (3xx) 1, ...``, or
    why there is none."""
    if not section.get("recorded", True):
        return NOT_RECORDED
    counts = section.get("counts") or {}
    if not counts:
        return "every URL the crawl met answered with an HTML page"
    return ", ".join(f"{KIND_WORDS.get(k, k)} {n}" for k, n in counts.items())
