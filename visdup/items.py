"""The item a crawl hands to visdup's pipelines: one fetched HTML page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from visdup.page.fetch import Fetch

if TYPE_CHECKING:
    from scrapy.http import Response

    from visdup.dedup.analysis import PageAnalysis


class Record(dict):
    """One row of the dataset a template yields: ``url``, ``cluster``, ``fits``, then fields.

    Feed exports write these when told to (``FEEDS = {"data.jsonl": {"format": "jsonlines",
    "item_classes": ["visdup.items.Record"]}}``) while the crawl runs.
    """


class _Carried:
    """What a page carries between the pipelines and never exports: feeds write the labels,
    not the bytes (the store keeps bodies), the parsed tree or the analysis. Declared outside
    the dataclass, these are attributes, not item fields, so no feed has their (empty) columns.
    """

    #: The response's bytes.
    body: bytes = b""
    #: The response's parsed tree, so the page is parsed once; cleared once it is analysed.
    tree: Any = None
    #: The page's one analysis (visdup.dedup.analysis.PageAnalysis), set by the first visdup
    #: pipeline and read by the others.
    analysis: PageAnalysis | None = None


@dataclass
class Page(Fetch, _Carried):
    """One HTML response: its fetch (:class:`visdup.page.fetch.Fetch`: ``url``, ``final_url``,
    ``status``, ``depth``, ``referer``, ``content_type``, ``encoding``, ``links``), then what
    the pipelines learn of it (``page_id``, ``verdict`` ..)."""

    page_id: int | None = None
    #: Store id of the page this one copies (its first twin, or its group's original).
    duplicate_of: int | None = None
    similarity: float | None = None
    kind: str | None = None
    verdict: str | None = None
    cluster: int | None = None
    #: How closely the page matches its template cluster's layout (1.0: the same skeleton);
    #: None until the cluster has a template.
    fit: float | None = None
    problem: str | None = None

    @classmethod
    def from_response(cls, response: Response, links: list[str] | None = None) -> Page:
        """Build a page item from any spider's response (reusing its selector if parsed).

        A page reached through a redirect is the page at its final URL: whichever way the crawl
        came to it first (the redirect, or a link straight to it), it is stored under one URL,
        and the redirect is a response of its own (:mod:`visdup.responses`)."""
        url = response.url
        referer = response.request.headers.get("Referer") if response.request else None
        content_type = response.headers.get("Content-Type")
        tree = None
        encoding = getattr(response, "encoding", None)
        # a tree the spider parsed already is reused; none is parsed here, in the reactor's
        # thread: the analysis parses the bytes off it (in a worker process, no tree crosses).
        # Scrapy has no public "was this response parsed?": ``response.selector`` parses it.
        # The private attribute is read with a default, so a Scrapy without it only parses
        # once more (the tested range is pinned in pyproject.toml).
        selector = getattr(response, "_cached_selector", None) if response.body else None
        if selector is not None:
            try:
                tree = selector.root
            except Exception:
                tree = None
        page = cls(
            url=url,
            final_url=response.url,
            status=response.status,
            depth=int(response.meta.get("depth", 0)) if response.request else 0,
            referer=referer.decode("latin-1") if referer else None,
            content_type=content_type.decode("latin-1") if content_type else None,
            encoding=encoding,
            links=list(links or []),
        )
        page.body = response.body
        page.tree = tree
        return page
