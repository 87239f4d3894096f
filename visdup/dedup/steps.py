"""The steps :func:`~visdup.dedup.analysis.analyse` runs on a page's tree, one by one.

Each step that can fail on a hostile page catches its own failure and logs it: the page then
lacks that one result (its links, its layout, its main content), never the others.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin

from visdup.content import main_content
from visdup.content.main import MainContent
from visdup.content.textprint import ContentPrint, content_print
from visdup.content.visibility import read_and_cleaned
from visdup.page.links import PageLinks, read_links
from visdup.page.parse import Document
from visdup.templates.signature import Layout, TemplateInput, page_layout_of
from visdup.templates.stm import FlatTree, dom_tree

# A step that fails is the page's analysis failing in part: logged as the analysis.
logger = logging.getLogger("visdup.dedup.analysis")


def canonical_url(doc: Document, base: str) -> str | None:
    """The page's ``<link rel="canonical">``, absolute: what the site says the original is."""
    if doc.root is None:
        return None
    return _canonical(doc.root.iter("link"), base)


def _canonical(links: Iterable[Any], base: str) -> str | None:
    """:func:`canonical_url` from the page's ``<link>`` elements, in document order."""
    for link in links:
        href = (link.get("href") or "").strip()
        if href and "canonical" in (link.get("rel") or "").lower().split():
            return urljoin(base, href)
    return None


def clean(doc: Document, base: str | None = None) -> None:
    """Remove what a reader never sees, once per page, keeping the title it had and, given
    the page's ``base`` URL, its canonical link (:attr:`Document.canonical`): the elements
    both are read from are named by the invisible-node scan as it walks the page."""
    if doc.denoised or doc.root is None:
        return
    doc.title, links = read_and_cleaned(doc.root, ("link",) if base is not None else ())
    if base is not None:
        doc.canonical = _canonical(links, base)
    doc.denoised = True


def template_input(doc: Document) -> FlatTree | None:
    """What the template step reads of a page: its DOM tree without invisible nodes.

    The one place that decides it; it runs after :func:`clean` and before main content prunes.
    """
    tree = dom_tree(doc.root, denoise=False)
    return tree if tree.nodes else None


def template_step(doc: Document, url: str) -> FlatTree | None:
    try:
        return template_input(doc)
    except Exception:
        logger.exception("visdup: cannot read the layout of %s", url)
        return None


def links_step(doc: Document, url: str, cap: int | None) -> PageLinks | None:
    """The page's links, each once, when its spider asks for them (None: it reads them
    itself)."""
    if cap is None:
        return None
    try:
        return read_links(doc.root, cap).distinct()
    except Exception:
        logger.exception("visdup: cannot read the links of %s", url)
        return None


def main_step(doc: Document, url: str, layouts: list[Layout] | None) -> MainContent | None:
    """Main content (seed 001). It prunes inside the content; the layout signature (when
    ``layouts`` is given) is read from the whole page before that."""

    def chosen(node: Any) -> None:
        if layouts is not None:
            layouts.append(page_layout_of(doc.root, node, url))

    try:
        return main_content(doc.root, cleaned=True, title=doc.title, chosen=chosen)
    except Exception:
        logger.exception("visdup: cannot extract the main content of %s", url)
        return None


def content_step(
    found: MainContent, url: str, thin_below: int | None = None
) -> tuple[str | None, ContentPrint | None]:
    """The main content's layered fingerprint (seed 002)."""
    try:
        printed = content_print(
            found.blocks,
            visible=found.page_text,
            url=url,
            thin_below=thin_below,
            listing=found.listing,
        )
        return found.title, printed
    except Exception:
        logger.exception("visdup: cannot fingerprint the main content of %s", url)
        return found.title, None


def layout_step(
    doc: Document, found: MainContent | None, layouts: list[Layout], tree: FlatTree, url: str
) -> TemplateInput | None:
    """The layout signature around the content region, with the DOM tree for templates."""
    try:
        text = found.text if found is not None else None
        if layouts:
            return TemplateInput(layouts[0], tree, text, doc.title)
        node = found.node if found else None
        return TemplateInput(page_layout_of(doc.root, node, url), tree, text, doc.title)
    except Exception:
        logger.exception("visdup: cannot read the layout of %s", url)
        return None
