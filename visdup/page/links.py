"""A page's links as its tree has them: the hrefs a spider resolves and follows.

Read where the page is parsed anyway. With visdup's analysis in worker processes, the worker
reads them from the tree it parsed for the analysis, and the site spider only resolves them:
the crawl's process then parses no page at all (on the Python manual the parse for links was
a sixth of that process's CPU, the same work the worker does a moment later).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PageLinks:
    """The non-blank hrefs of a page's ``<a>`` and ``<area>`` elements, in document order."""

    hrefs: tuple[str, ...]
    #: Elements with an ``href`` attribute (blank ones included), counted only when the cap
    #: stopped the reading: how many links the page had past it. None: read whole.
    total: int | None = None


def read_links(root: Any, cap: int = 0) -> PageLinks:
    """The links of the tree ``root``: the first ``cap`` non-blank hrefs (0: every one)."""
    hrefs: list[str] = []
    for element in root.iter("a", "area"):
        href = element.get("href")
        if not href or not href.strip():
            continue
        if cap and len(hrefs) >= cap:
            total = int(root.xpath("count(//a[@href]|//area[@href])"))
            return PageLinks(tuple(hrefs), total)
        hrefs.append(href)
    return PageLinks(tuple(hrefs))
