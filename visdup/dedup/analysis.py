"""One page's analysis, the same for a crawl and for files: parse → term → main content.

The pipelines and ``visdup dups`` both call these, so a page gets the same fingerprints
whichever way it arrives.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from visdup.errors import InputError
from visdup.page.parse import Document
from visdup.storage.store import PageRecord, pack_body
from visdup.structure.fingerprint import term_simhash
from visdup.structure.term import Term, document_term

if TYPE_CHECKING:
    from visdup.content.textprint import ContentPrint

logger = logging.getLogger(__name__)


def new_record(url: str, body: bytes, *, keep_body: bool = True, **fields: object) -> PageRecord:
    record = PageRecord(url=url, **fields)  # type: ignore[arg-type]
    record.body_hash = hashlib.sha1(body).hexdigest() if body else None
    record.body = pack_body(body) if keep_body and body else None
    return record


def canonical_url(doc: Document, base: str) -> str | None:
    """The page's ``<link rel="canonical">``, absolute: what the site says the original is."""
    if doc.root is None:
        return None
    for link in doc.root.iter("link"):
        href = (link.get("href") or "").strip()
        if href and "canonical" in (link.get("rel") or "").lower().split():
            return urljoin(base, href)
    return None


def analyse_structure(
    doc: Document,
    record: PageRecord,
    *,
    classes: Mapping[str, str | None] | None = None,
    denoise: bool = False,
) -> Term | None:
    """Fill the record's structural fields; None (and ``record.problem``) for an unusable page."""
    record.encoding = record.encoding or doc.encoding
    record.replacement_ratio = round(doc.replacement_ratio, 6)
    record.canonical = canonical_url(doc, record.final_url or record.url)  # before <head> goes
    if denoise:
        clean(doc)
    try:
        _raw, term = document_term(doc, classes)
    except InputError as exc:
        record.problem = str(exc)
        return None
    except Exception as exc:
        logger.exception("visdup: cannot build the term of %s", record.url)
        record.problem = f"term failed: {exc}"
        return None
    record.truncated = doc.truncated
    record.term = str(term)
    record.term_size = term.size
    record.term_nodes = term.nodes
    record.simhash = term_simhash(term)
    return term


def clean(doc: Document) -> None:
    """Remove what a reader never sees, once per page, keeping the title it had."""
    if doc.denoised or doc.root is None:
        return
    from visdup.content.denoise import page_title, remove_invisible

    doc.title = page_title(doc.root)
    remove_invisible(doc.root)
    doc.denoised = True


def analyse_content(doc: Document, record: PageRecord) -> ContentPrint | None:
    """Main content (seed 001) and its layered fingerprint (seed 002); modifies the tree."""
    from visdup.content.denoise import main_content
    from visdup.content.textprint import content_print

    if doc.root is None:
        return None
    try:
        clean(doc)
        content = main_content(doc.root, cleaned=True, title=doc.title)
        cp = content_print(content.blocks)
    except Exception:
        logger.exception("visdup: cannot extract the main content of %s", record.url)
        return None
    record.title = content.title
    if not cp.empty:
        record.content_print = cp.to_json()
        record.content_simhash = cp.simhash
    return cp
