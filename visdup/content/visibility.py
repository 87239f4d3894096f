"""Remove what a reader never sees: never-rendered elements, hidden and floating layers.

Seed 001's first step. Never-rendered elements (scripts, styles, the head, widgets, the
``hidden`` attribute, closed dialogs) go first; then the page's own style rules and inline
styles are resolved (:mod:`visdup.content.css`) and what they hide goes, unless it holds most
of the page's prose (a script reveals it on load). The compiled scan
(``visdup._native._dom.invisible_scan``) finds the never-rendered elements and the styles
without building a Python object per element; the Python scan is its reference.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import lxml.etree

from visdup._native import kernel
from visdup.content.blocks import char_count
from visdup.content.css import Cascade, apply_sheets, declarations, is_hiding, visually_hidden
from visdup.content.titles import TITLE_ELEMENTS, page_title
from visdup.page.dom import at_paths, events, outermost

logger = logging.getLogger(__name__)

_kernel = kernel("_dom")

#: Elements that are never rendered, or rendered as widgets rather than text.
NEVER_RENDERED = frozenset(
    {
        "script", "style", "template", "noscript", "head", "meta", "link", "base", "title",
        "svg", "canvas", "iframe", "object", "embed", "audio", "video", "map", "input",
        "button", "select", "textarea", "option", "datalist",
    }
)  # fmt: skip

#: A CSS-hidden element holding this share of the page's prose (and at least
#: REVEAL_MIN_CHARS characters) is taken to be revealed by a script on load, and kept: a
#: page whose article sits in a `display:none` tab that a script opens is still read.
REVEAL_SHARE = 0.5
REVEAL_MIN_CHARS = 500

_NEVER_SET = set(NEVER_RENDERED)  # the compiled scan takes a plain set


def remove_element(el: Any) -> None:
    """Remove an element but keep its tail, which is the parent's visible text."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    if tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


def remove_invisible(
    root: Any, named: tuple[str, ...] = (), before: Callable[[list[Any]], None] | None = None
) -> int:
    """Remove in place what is never seen or floats over the page; return how many went.

    Inline styles and the page's own <style> rules both count. Hidden by CSS but holding
    most of the page's prose means scripts reveal it on load: such an element stays.
    `aria-hidden="true"` alone keeps an element (icons, but also visible duplicates
    of real text); combined with a visually-hidden style it is seen by nobody and goes.
    The count is of outermost elements removed: what sat inside them is not counted.

    ``before`` is given, before anything goes, what ``root.iter(*named)`` yields (the page's
    title and its meta elements: the compiled scan finds them as it walks, and the page is
    not walked again for them).
    """
    if root is None:
        return 0
    scanned = None
    if _kernel is not None and getattr(_kernel, "DOM_WALK", False):
        scanned = _kernel.invisible_scan(root, _NEVER_SET, named)
    if before is not None:
        before(list(at_paths(root, scanned[3]) if scanned else root.iter(*named)))
    # an inline style that declares nothing able to hide (most: colours, sizes) leaves its
    # element out of the cascade, as it changes nothing there: no proxy is made for it
    if scanned is None:
        removed, sheets, styled = _scan_invisible(root)
        inline = [(el, decls) for el, style in styled if style and (decls := declarations(style))]
        del styled
    else:
        outer_paths, raw_sheets, styles = scanned[:3]
        sheets = []
        for text, media in raw_sheets:
            media = (media or "all").lower()
            if "screen" in media or "all" in media:
                sheets.append(text)
        hiding = [
            (path, decls) for path, style in styles if style and (decls := declarations(style))
        ]
        # Paths name elements of the tree as it was: resolve them all before removing.
        outermost = list(at_paths(root, outer_paths))
        found = at_paths(root, [path for path, _ in hiding])
        inline = list(zip(found, [decls for _, decls in hiding], strict=True))
        for el in outermost:
            remove_element(el)
        removed = len(outermost)
    cascade = Cascade()
    if sheets:
        apply_sheets(root, sheets, cascade)
    for el, decls in inline:
        cascade.add(el, decls, (1, 0, 0, 0, 0))
    del inline
    try:
        return _remove_hidden(root, cascade, removed)
    finally:
        release(cascade.values)


def titled_and_cleaned(root: Any) -> str | None:
    """The page's own title (:func:`visdup.content.titles.page_title`, read before its
    ``<head>`` goes), and the page without what is never seen (:func:`remove_invisible`):
    the title's elements are found in the scan's walk."""
    return read_and_cleaned(root)[0]


def read_and_cleaned(root: Any, also: tuple[str, ...] = ()) -> tuple[str | None, list[Any]]:
    """:func:`titled_and_cleaned`, with the elements named ``also`` as they stood before
    anything went (in document order), found in the same walk."""
    read: list[tuple[str | None, list[Any]]] = []

    def before(elements: list[Any]) -> None:
        title = page_title(root, [el for el in elements if el.tag not in also])
        read.append((title, [el for el in elements if el.tag in also]))

    remove_invisible(root, (*TITLE_ELEMENTS, *also), before)
    return read[0] if read else (None, [])


def release(elements: dict[Any, Any]) -> None:
    """Drop a dict's element proxies deepest first.

    When lxml frees an element's Python proxy it walks up the tree to the nearest ancestor
    that still has one. A dict frees its keys in insertion (document) order, parents first:
    on a chain 100,000 deep that is 5e9 steps. A list frees from its end, so emptying the
    dict into a list in document order frees children before their parents, in O(n).
    """
    keys = list(elements)
    elements.clear()
    del keys


def _scan_invisible(root: Any) -> tuple[int, list[str], list[tuple[Any, str | None]]]:
    """remove_invisible's scan in Python: never-rendered elements go; sheets, inline styles."""
    never: set[Any] = set()
    sheets: list[str] = []
    # Held until the end: the later walks then reuse these element proxies rather than
    # building new ones through lxml.html's Python class lookup.
    everything = list(root.iter())
    for el in everything:
        tag = el.tag
        if not isinstance(tag, str):
            never.add(el)  # comments and processing instructions
            continue
        tag = tag.lower()
        if tag == "style" and el.text:
            media = (el.get("media") or "all").lower()
            if "screen" in media or "all" in media:
                sheets.append(el.text)
        if (
            tag in NEVER_RENDERED
            or el.get("hidden") is not None
            or (tag == "dialog" and el.get("open") is None)
        ):
            never.add(el)
    removed = _remove_outermost(root, never)
    inline = [(el, el.get("style")) for el in root.iter(lxml.etree.Element)]
    return removed, sheets, inline


def _remove_outermost(root: Any, doomed: set[Any]) -> int:
    """Remove the doomed elements, skipping those inside one already going (no depth scans)."""
    found = None
    if _kernel is not None and getattr(_kernel, "DOM_WALK", False):
        found = _kernel.outermost_of(root, list(doomed))
    if found is None:
        found = outermost(root, doomed.__contains__)
    for el in found:
        remove_element(el)
    return len(found)


def _own_sizes(root: Any, elements: list[Any]) -> tuple[int, list[int]]:
    """:func:`_own_text_len` of ``root`` and of each element (0 for one not under it): from
    the compiled walk, which makes no proxy for the elements not asked about."""
    if _kernel is not None and getattr(_kernel, "DOM_WALK", False):
        got = _kernel.own_text_sizes(root, elements)
        if got is not None:
            return got  # type: ignore[no-any-return]
    sizes = _own_text_len(root)
    try:
        return sizes.get(root, 0), [sizes.get(el, 0) for el in elements]
    finally:
        release(sizes)


def _own_text_len(root: Any) -> dict[Any, int]:
    """Non-link visible characters per element (for the scripted-reveal guard)."""
    sizes: dict[Any, int] = {}
    stack: list[list[Any]] = []
    link_depth = 0
    for start, el in events(root):
        if start:
            if el.tag == "a":
                link_depth += 1
            n = 0 if link_depth else char_count(el.text)
            stack.append([el, n])
        else:
            node, n = stack.pop()
            sizes[node] = n
            if node.tag == "a":
                link_depth -= 1
            if stack:
                stack[-1][1] += n + (0 if link_depth else char_count(node.tail))
    return sizes


def _remove_hidden(root: Any, cascade: Cascade, removed: int) -> int:
    """Remove what the resolved styles hide, unless it holds most of the page's prose."""
    hidden: list[Any] = []
    for el in cascade.values:
        if el.tag in {"html", "body"}:
            continue
        decls = cascade.resolved(el)
        if is_hiding(decls) or (
            el.get("aria-hidden", "").lower() == "true" and visually_hidden(decls)
        ):
            hidden.append(el)
    if not hidden:
        return removed
    whole, sizes = _own_sizes(root, hidden)
    page_text = max(whole, 1)
    doomed: set[Any] = set()
    for el, size in zip(hidden, sizes, strict=True):
        if size >= REVEAL_SHARE * page_text and size >= REVEAL_MIN_CHARS:
            logger.debug("Keeping hidden <%s>: it holds most of the page's text", el.tag)
            continue
        doomed.add(el)
    return removed + _remove_outermost(root, doomed)
