"""The template names a page carries on its ``<body>``, and when two pages' names allow
them one template.

Content systems write the page's template there (WordPress ``single-post`` against
``archive date``, Magento ``catalog-product-view``, Shopify ``template-collection``,
Drupal ``page-node-type-article``), and it is often the only thing that tells two page
types apart: a WordPress post and a day archive of one post differ in 4 of ~50 skeleton
nodes. Two pages whose marks disagree are never linked, however alike their skeletons
(:func:`visdup.templates.layout.may_link`).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlsplit

from visdup.storage.urls import canonical_url
from visdup.templates.dom_walk import tag_name

#: Two pages' marks agree when they share this much of their union (Jaccard)...
MARKS_SHARE = 0.75
#: ... or differ in this many names at most beside a name both keep: one name in place of
#: another is a variant of one template (a shop's section, a post's format), more than that
#: another template. Marks that share no name at all (``article-page`` and ``product-page``, a
#: marked page and an unmarked one) name two templates: the page's whole name changed.
MARKS_SWAP = 2
#: Marks kept from one page at most (the first in sorted order).
MAX_MARKS = 32
_DIGIT = re.compile(r"\d")
#: Names a content system builds on one of the page's terms (WordPress and Ghost write a
#: post's tags and categories there, ``tag-election``, ``category-politics``): they name the
#: page's subject, one article having none and the next five; the template is the name
#: without the term (``tag``, ``category``, ``author`` on an archive), which stays.
_TERM_PREFIXES = ("tag-", "category-", "term-", "author-")
_SEGMENT_END = re.compile(r"\.[a-z0-9]{1,5}$")


def marks_agree(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two pages' marks allow them one template (:func:`body_marks`)."""
    if a == b:
        return True
    shared = len(a & b)
    return (shared > 0 and len(a ^ b) <= MARKS_SWAP) or shared >= MARKS_SHARE * len(a | b)


def body_marks(root: Any, url: str | None = None) -> frozenset[str]:
    """The template names a page carries on its ``<body>``: its class names, case-folded,
    without those that name the page itself.

    Names with a digit (``postid-73``, ``paged-2``), names of one of the page's terms
    (``tag-election``, :data:`_TERM_PREFIXES`), names outside ASCII (they read
    differently when a page is decoded without its charset), and names that end in the page's
    own segment of its URL path (:func:`_own_segment`: ``category-news`` on
    ``/category/news/``, ``product-blue-shirt`` on ``/blue-shirt.html``) name the page, not its
    template, and are left out.

    A content system names a page by its kind and then the page's slug, the last part of its
    path. A name built on a directory above the page (``shop-page`` on
    ``/shop/products/x.html``, ``listing-page`` on ``/blog/page/2.html``) names what the pages
    of that directory share, a section or a template, and is kept; so is a name that starts
    with the slug (``help-page`` on ``/help/``, as on ``/help/faq.html``).
    """
    if root is None:
        return frozenset()
    body = root
    if tag_name(root) == "html":
        body = next((c for c in root if tag_name(c) == "body"), None)
    if body is None or tag_name(body) != "body":
        return frozenset()
    names = {n.casefold() for n in (body.get("class") or "").split()}
    if not names:
        return frozenset()
    own = _own_segment(url) if url else ""
    kept = []
    for name in sorted(names):
        if len(name) > 64 or not name.isascii() or _DIGIT.search(name):
            continue  # ASCII only: a page decoded another way (no charset) has the same marks
        if name.startswith(_TERM_PREFIXES):
            continue
        if own and name.endswith("-" + own):
            continue
        kept.append(name)
        if len(kept) == MAX_MARKS:
            break  # a hostile page's thousands of names: the signature stays small
    return frozenset(kept)


def _own_segment(url: str) -> str:
    """The last segment of a URL's path, without its file extension: the page's slug, which a
    class name that names the page ends in ("": none, or a number, which names a page of a
    listing or a record's id and no class name is built on)."""
    try:  # the stored form: a crawl and `visdup cluster --db` read the same path
        path = unquote(urlsplit(canonical_url(url)).path).casefold()
    except ValueError:
        return ""
    last = next((part for part in reversed(path.split("/")) if part), "")
    last = _SEGMENT_END.sub("", last)
    return last if len(last) >= 2 and not last.isdigit() else ""
