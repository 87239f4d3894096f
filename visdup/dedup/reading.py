"""A page's bytes read as a browser would: the charset it declares, and the parsed page.

A Scrapy response has already parsed its page, in the charset it chose; that tree is reused
unless the page declares another charset its body is really in. Each analysis gets a tree of
its own, which it may edit (:func:`document`).
"""

from __future__ import annotations

import codecs
import copy
from typing import Any

from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding

from visdup.page.parse import Document, decode, from_tree, parse_html, screen

#: Bytes of a body read to tell which charset it declares and which one decodes it.
CHARSET_SNIFF = 65536


def _codec(name: str | None) -> str | None:
    """A charset name in one spelling (``UTF8``, ``utf_8`` → ``utf-8``; ``latin1`` → cp1252)."""
    if not name:
        return None
    resolved = resolve_encoding(name.strip().strip("\"'")) or name
    try:
        return codecs.lookup(resolved).name
    except LookupError:
        return None


def declared_charset(body: bytes, content_type: str | None) -> str | None:
    """The charset a page declares (BOM, HTTP header, then ``<meta>``), or None."""
    bom, _mark = read_bom(body[:4])
    if bom:
        return _codec(bom)
    if content_type and "charset=" in content_type.lower():
        raw = content_type.lower().split("charset=", 1)[1].split(";")[0]
        if (found := _codec(raw)) is not None:
            return found
    return _codec(html_body_declared_encoding(body[:CHARSET_SNIFF]))


def document(
    body: bytes,
    *,
    content_type: str | None = None,
    url: str | None = None,
    tree: Any = None,
    encoding: str | None = None,
    copy_tree: bool = True,
) -> Document:
    """Bytes → a parsed page this analysis owns, parsed at most once.

    A response's tree (``tree``, decoded as ``encoding``) is reused unless the
    page declared a charset and the body is in another one (a lying header, mostly UTF-8
    served as Latin-1): then the bytes are decoded as a browser would and parsed again, with
    a note. A page that declares nothing keeps the response's reading (Scrapy tries UTF-8,
    then cp1252), so it is parsed once and noted never. The response's tree belongs to the
    spider, which may still read it: with ``copy_tree`` (for steps that edit the tree) the
    document holds a copy, which costs about half a parse.
    """
    if tree is None:  # parse_html screens the bytes itself; undeclared, read as the response was
        doc = parse_html(body, content_type=content_type, url=url, fallback_encoding=encoding)
        _note_charset(doc, declared_charset(body, content_type) if doc.encoding else None)
        return doc
    problem = screen(body, content_type)
    if problem:
        return Document(None, problem=problem)
    read_as = _codec(encoding)
    declared = declared_charset(body, content_type)
    if declared is None or read_as in {"utf-8", "ascii"}:
        return from_tree(copy.deepcopy(tree) if copy_tree else tree, encoding=encoding)
    browser = _codec(decode(body[:CHARSET_SNIFF], content_type)[0])
    if browser == read_as:
        return from_tree(copy.deepcopy(tree) if copy_tree else tree, encoding=encoding)
    doc = parse_html(body, content_type=content_type, url=url)
    _note_charset(doc, declared)
    return doc


def _note_charset(doc: Document, declared: str | None) -> None:
    """Note a page whose declared charset is not the one its body was read in."""
    if declared is not None and doc.encoding and _codec(doc.encoding) != declared:
        doc.notes.append(f"charset declared as {declared}, the body is {doc.encoding}")
