"""A page's links as its tree has them: the hrefs a spider resolves and follows.

Read where the page is parsed anyway. With visdup's analysis in worker processes, the worker
reads them from the tree it parsed for the analysis, and the site spider only resolves them:
the crawl's process then parses no page at all (on the Python manual the parse for links was
a sixth of that process's CPU, the same work the worker does a moment later).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from visdup._native import kernel

_kernel = kernel("_dom")


@dataclass(frozen=True, slots=True)
class PageLinks:
    """The non-blank hrefs of a page's ``<a>`` and ``<area>`` elements, in document order."""

    hrefs: tuple[str, ...]
    #: Elements with an ``href`` attribute (blank ones included), counted only when the cap
    #: stopped the reading: how many links the page had past it. None: read whole.
    total: int | None = None


def read_links(root: Any, cap: int = 0) -> PageLinks:
    """The links of the tree ``root``: the first ``cap`` non-blank hrefs (0: every one).

    The compiled walk reads them without an lxml proxy per link element (a Python-manual
    page has hundreds); the loop below is the reference, and what a tree it refuses gets.
    """
    if _kernel is not None and _kernel.DOM_WALK:
        walked = _kernel.links_walk(root, cap)
        if walked is not None:
            found, total = walked
            return PageLinks(tuple(found), None if total == -1 else _total(root, total))
    hrefs: list[str] = []
    for element in root.iter("a", "area"):
        href = element.get("href")
        if not href or not href.strip():
            continue
        if cap and len(hrefs) >= cap:
            return PageLinks(tuple(hrefs), _total(root))
        hrefs.append(href)
    return PageLinks(tuple(hrefs))


def _total(root: Any, counted: int = -2) -> int:
    """Elements with an ``href`` (blank ones included): the page's links past the cap too
    (``counted``: the compiled walk's count, -2 when it could not count the document)."""
    if counted >= 0:
        return counted
    return int(root.xpath("count(//a[@href]|//area[@href])"))
