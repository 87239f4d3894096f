"""The visual irreducible term of a page (Alpuente & Romero 2009; ALGORITHMS.md §1).

A page becomes an ordered tree over four visual classes (grp, row, col, text); runs of
repeated siblings are packed into one node with a repetition mark (hrz), and chains of
single children are folded (vrt). What is left, the irreducible term, describes the layout
a reader sees and ignores how many items a list happens to hold.

This module puts the steps together for a page; each has a module of its own beside it:
:mod:`~visdup.structure.classes` (the visual class of each element),
:mod:`~visdup.structure.translation` (an HTML tree as a raw term, every mark 1),
:mod:`~visdup.structure.compression` (hrz and vrt until nothing changes) and
:mod:`~visdup.structure.marked` (the term, flat in preorder, and its text form). Their public
names are importable from here.
"""

from __future__ import annotations

from collections.abc import Mapping

import lxml.etree

from visdup._native import kernel
from visdup.errors import InputError
from visdup.page.parse import HUGE_DEPTH_LIMIT, Document, from_tree, parse_html
from visdup.structure.classes import COL, GRP, REPLACED, ROW, TEXT, VISUAL_CLASSES
from visdup.structure.compression import compress, compress_python, equivalent, join
from visdup.structure.marked import MAX_MARK, Term, TermSyntaxError
from visdup.structure.translation import Translation, translate, translate_python

__all__ = [
    "COL",
    "GRP",
    "KERNEL",
    "MAX_MARK",
    "REPLACED",
    "ROW",
    "TEXT",
    "VISUAL_CLASSES",
    "Term",
    "TermSyntaxError",
    "Translation",
    "compress",
    "compress_python",
    "document_term",
    "equivalent",
    "join",
    "page_term",
    "translate",
    "translate_python",
]

#: Which implementation builds terms: "c" (visdup._native._term) or "python".
KERNEL = "c" if kernel("_term") is not None else "python"


def _document(html: str | bytes | Document | lxml.etree._Element, base_url: str | None) -> Document:
    if isinstance(html, Document):
        return html
    if isinstance(html, (str, bytes)):
        return parse_html(html, url=base_url)
    if isinstance(html, lxml.etree._ElementTree):
        return from_tree(html.getroot())
    if isinstance(html, lxml.etree._Element):
        return from_tree(html)
    raise TypeError(f"page_term takes str, bytes, a Document or an lxml tree, not {type(html)}")


def document_term(
    doc: Document, classes: Mapping[str, str | None] | None = None
) -> tuple[Term, Term]:
    """(raw term, irreducible term) of a parsed page; marks the Document truncated if so seen."""
    if doc.root is None or doc.problem:
        raise InputError(doc.problem or "no document")
    tr = translate(doc.root, classes)
    if tr.depth >= HUGE_DEPTH_LIMIT - 1 and not doc.truncated:
        doc.truncated = True
        doc.notes.append("parser limit reached: deep content was dropped")
    return tr.term, compress(tr.term)


def page_term(
    html: str | bytes | Document | lxml.etree._Element,
    *,
    base_url: str | None = None,
    classes: Mapping[str, str | None] | None = None,
) -> Term:
    """The irreducible term of a page given as text, bytes, a parsed Document or an lxml tree."""
    return document_term(_document(html, base_url), classes)[1]
