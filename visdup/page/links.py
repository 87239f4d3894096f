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

    def distinct(self) -> PageLinks:
        """Each link once, where first met: an href met again, or again with another fragment,
        leads where it led (the canonical form a spider follows drops the fragment), so a
        spider resolving these follows what it would follow from every href, in the same
        order. A page's menus and anchors repeat its links, most of them many times over, and
        a worker sends these to the crawl's process, which resolves each.

        A fragment is dropped as the site spider's resolver drops it (:func:`fragment_at`);
        an href that is only a fragment stays whole. A page read to its cap keeps every href
        read (how many were read is part of what its spider says)."""
        if self.total is not None:
            return self
        seen: set[str] = set()
        kept: list[str] = []
        for href in self.hrefs:
            cut = fragment_at(href)
            if cut > 0:
                href = href[:cut]
            if href not in seen:
                seen.add(href)
                kept.append(href)
        return PageLinks(tuple(kept))


def fragment_at(href: str) -> int:
    """Where the fragment of an href begins when the href without it is the same link (-1:
    none to drop): a ``#`` after a character that is neither a control nor a blank, which a
    URL parser would strip or keep as part of the link. The site spider resolves an href
    without it, and a worker sends each link once without it (:meth:`PageLinks.distinct`)."""
    cut = href.find("#")
    return cut if cut > 0 and href[cut - 1] > " " and not href[cut - 1].isspace() else -1


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
