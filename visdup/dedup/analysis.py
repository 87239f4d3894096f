"""One page's analysis, the same for a crawl and for files: one value, computed once.

:func:`analyse` parses a page once (or reuses the tree a Scrapy response already parsed) and
runs every step on it in one fixed order, so no step can see what another removed:

1. the canonical link, the title and (for the site spider) the links, read before anything
   leaves the tree;
2. the visual term and its structural SimHash (on the tree as parsed);
3. invisible nodes removed (the one edit every later step wants);
4. the template step's DOM tree (:func:`template_input`), before main content prunes;
5. main content (it prunes inside the content only) and its layered text print;
6. the layout signature: the skeleton around the content region (template clusters).

The result, :class:`PageAnalysis`, is immutable. The crawl's pipelines, ``visdup dups`` and
batch jobs all call :func:`analyse`, so a page gets the same fingerprints whichever way it
arrives.
"""

from __future__ import annotations

import codecs
import copy
import gc
import hashlib
import logging
import os
import pickle
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from w3lib.encoding import html_body_declared_encoding, read_bom, resolve_encoding

from visdup.content import main_content, page_title, remove_invisible
from visdup.content.main import MainContent
from visdup.content.textprint import ContentPrint, content_print
from visdup.errors import InputError
from visdup.page.links import PageLinks, read_links
from visdup.page.parse import Document, decode, from_tree, parse_html, screen
from visdup.storage.body import pack_body
from visdup.structure.fingerprint import shape_simhash, term_simhash
from visdup.structure.term import Term, document_term
from visdup.templates.signature import Layout, TemplateInput, page_layout_of
from visdup.templates.stm import FlatTree, PackedTree, dom_tree

if TYPE_CHECKING:
    from visdup.storage.store import PageRecord

logger = logging.getLogger(__name__)

#: Bytes of a body read to tell which charset it declares and which one decodes it.
CHARSET_SNIFF = 65536


@dataclass(frozen=True, slots=True)
class AnalysisOptions:
    """What to compute for each page: the steps a crawl or a command has switched on."""

    #: Overrides of the tag → visual class table.
    classes: Mapping[str, str | None] | None = None
    #: Build the visual term on the tree without invisible nodes.
    denoise_term: bool = False
    #: Main content and its text print (the content channel).
    content: bool = True
    #: The template step's input (template clusters).
    template: bool = False
    #: Pages with at least this many long sentences get no visible-text key (the content
    #: channel compares them by their layers; only thinner ones need the key), which saves
    #: a second reading of the whole page's text; None: every page gets one.
    thin_below: int | None = None
    #: The store keeps bodies (VISDUP_STORE_BODY): a worker process packs the body it holds.
    keep_body: bool = False
    #: Read the page's links for its spider (:mod:`visdup.page.links`): the hrefs of its
    #: first this many link elements (0: all of them); None: no links.
    links: int | None = None

    @classmethod
    def from_settings(
        cls, values: Mapping[str, Any], *, content: bool = True, template: bool = True
    ) -> AnalysisOptions:
        """From resolved VISDUP_ settings; ``content``/``template`` say whether a step is wired."""
        return cls(
            classes=values.get("VISDUP_VISUAL_CLASSES") or None,
            denoise_term=bool(values.get("VISDUP_DENOISE_TERM")),
            content=content and bool(values.get("VISDUP_CONTENT_ENABLED")),
            template=template and bool(values.get("VISDUP_CLUSTER_ENABLED")),
            thin_below=thin_limit(values.get("VISDUP_CONTENT_MIN_SENTENCES")),
            keep_body=bool(values.get("VISDUP_STORE_BODY")),
        )


@dataclass(frozen=True, slots=True)
class PageAnalysis:
    """Everything visdup learns from one page's bytes, before it meets any other page."""

    url: str
    body_hash: str | None = None
    #: Why the page is unusable (empty, binary, not HTML, no term), else None.
    problem: str | None = None
    #: The charset the page was read in.
    encoding: str | None = None
    truncated: bool = False
    replacement_ratio: float = 0.0
    #: (kind, text): pages read other than declared ("charset") or not whole ("truncated").
    notes: tuple[tuple[str, str], ...] = ()
    canonical: str | None = None
    title: str | None = None
    term: Term | None = None
    simhash: int | None = None
    content: ContentPrint | None = field(default=None, repr=False)
    template_input: TemplateInput | None = field(default=None, repr=False)
    #: The page's links as its tree has them, when asked for (``AnalysisOptions.links``): the
    #: spider's, which no store record holds (:meth:`without_links`).
    links: PageLinks | None = field(default=None, repr=False)
    #: The body as the store keeps it, packed where the analysis ran (a worker process).
    packed_body: bytes | None = field(default=None, repr=False)
    #: The term and the content print as the store keeps them, written where the analysis
    #: ran: the labelling, one process for the whole crawl, only copies them.
    term_text: str | None = field(default=None, repr=False)
    content_json: str | None = field(default=None, repr=False)

    def record(self, *, keep_body: bool, body: bytes = b"", **fields: Any) -> PageRecord:
        """A fresh store record of this analysis; ``fields`` are the fetch's own (status...).

        ``body`` is packed here unless the analysis packed it already (``packed_body``).
        """
        # imported here: an analysis worker process never stores, and needs no SQLAlchemy
        from visdup.storage.store import PageRecord

        record = PageRecord(url=self.url, **fields)
        record.body_hash = self.body_hash
        record.body = None
        if keep_body:
            record.body = (
                self.packed_body if self.packed_body is not None else pack_body(body or None)
            )
        record.problem = self.problem
        record.encoding = self.encoding or record.encoding
        record.truncated = self.truncated
        record.replacement_ratio = round(self.replacement_ratio, 6)
        record.canonical = self.canonical
        record.title = self.title
        if self.term is not None:
            record.term = self.term_text if self.term_text is not None else str(self.term)
            record.term_size = self.term.size
            record.term_nodes = self.term.nodes
            record.simhash = self.simhash
        if self.content is not None and not (self.content.empty and not self.content.thin):
            record.content_print = (  # thin pages too: their text key
                self.content_json if self.content_json is not None else self.content.to_json()
            )
            if not self.content.empty:
                record.content_simhash = self.content.simhash
        return record

    @property
    def has_template_input(self) -> bool:
        """Whether the page can be placed in a template cluster (read without unpickling)."""
        return self.template_input is not None

    def without_links(self) -> PageAnalysis:
        """This analysis without its links: the spider took them, and the labelling, which
        the analysis goes on to, never reads them."""
        return self if self.links is None else replace(self, links=None)

    def __reduce__(self) -> tuple[Any, ...]:
        # The object parts cross as one blob that only the process reading them unpickles:
        # the crawl's process passes a worker's analysis on to the label process unopened.
        light = tuple(getattr(self, name) for name in _LIGHT)
        parts = tuple(getattr(self, name) for name in _PARTS)
        blob = (
            pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)
            if any(part is not None for part in parts)
            else None
        )
        return (_sealed, (light, tuple(part is not None for part in parts), blob))


#: The analysis's object parts (a term, a content print, a template input), in this order:
#: what :meth:`PageAnalysis.__reduce__` pickles apart.
_PARTS = ("term", "content", "template_input")
_LIGHT = tuple(name for name in PageAnalysis.__dataclass_fields__ if name not in _PARTS)


class _SealedAnalysis(PageAnalysis):
    """A :class:`PageAnalysis` unpickled with its object parts still pickled: they are
    unpickled when first read, and pickled on again as they came (no cost in a process that
    only forwards the analysis). Equal to the plain analysis of the same values."""

    __slots__ = ("_blob", "_parts", "_present")
    _blob: bytes | None
    _parts: list[Any] | None
    #: Which parts the blob holds (None once replace() gave the parts as values).
    _present: tuple[bool, bool, bool] | None

    def _opened(self) -> list[Any]:
        parts = getattr(self, "_parts", None)
        if parts is None:
            blob = getattr(self, "_blob", None)
            parts = list(pickle.loads(blob)) if blob is not None else [None, None, None]
            object.__setattr__(self, "_parts", parts)
        return parts

    def _set(self, index: int, value: Any) -> None:
        # only dataclasses.replace() builds one from values: its blob no longer holds them
        parts = self._opened()
        parts[index] = value
        object.__setattr__(self, "_blob", None)
        object.__setattr__(self, "_present", None)

    term = property(  # type: ignore[assignment]
        lambda self: self._opened()[0], lambda self, value: self._set(0, value)
    )
    content = property(  # type: ignore[assignment]
        lambda self: self._opened()[1], lambda self, value: self._set(1, value)
    )
    template_input = property(  # type: ignore[assignment]
        lambda self: self._opened()[2], lambda self, value: self._set(2, value)
    )

    @property
    def has_template_input(self) -> bool:
        present = getattr(self, "_present", None)
        return present[2] if present is not None else self.template_input is not None

    def __reduce__(self) -> tuple[Any, ...]:
        blob = getattr(self, "_blob", None)
        if blob is None and getattr(self, "_present", None) is None:
            return PageAnalysis.__reduce__(self)  # built by replace(): pickled anew
        light = tuple(getattr(self, name) for name in _LIGHT)
        return (_sealed, (light, self._present, blob))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PageAnalysis):
            return NotImplemented
        names = PageAnalysis.__dataclass_fields__
        return all(getattr(self, name) == getattr(other, name) for name in names)

    __hash__ = PageAnalysis.__hash__

    def without_links(self) -> PageAnalysis:
        present = getattr(self, "_present", None)
        if self.links is None or present is None:  # None: built by replace(), parts as values
            return PageAnalysis.without_links(self)
        light = tuple(None if name == "links" else getattr(self, name) for name in _LIGHT)
        return _sealed(light, present, self._blob)  # parts still unopened


def _sealed(
    light: tuple[Any, ...], present: tuple[bool, bool, bool], blob: bytes | None
) -> PageAnalysis:
    analysis = object.__new__(_SealedAnalysis)
    for name, value in zip(_LIGHT, light, strict=True):
        object.__setattr__(analysis, name, value)
    object.__setattr__(analysis, "_blob", blob)
    object.__setattr__(analysis, "_present", present)
    return analysis


def analyse(
    body: bytes,
    *,
    url: str,
    final_url: str | None = None,
    content_type: str | None = None,
    tree: Any = None,
    encoding: str | None = None,
    options: AnalysisOptions = AnalysisOptions(),
) -> PageAnalysis:
    """The page's analysis; ``tree``/``encoding``: what a Scrapy response already parsed.

    Never raises on a bad page: ``problem`` says why it is unusable. A tree given here is
    not modified (the analysis works on its own copy).
    """
    body_hash = body_digest(body)
    edits = options.template or options.content or options.denoise_term
    doc = document(
        body,
        content_type=content_type,
        url=final_url or url,
        tree=tree,
        encoding=encoding,
        copy_tree=edits,
    )
    base = PageAnalysis(
        url=url,
        body_hash=body_hash,
        encoding=doc.encoding or encoding,
        replacement_ratio=doc.replacement_ratio,
    )
    if doc.root is None:
        return replace(base, problem=doc.problem or "no document")
    canonical = canonical_url(doc, final_url or url)  # before <head> goes
    links = _links_step(doc, url, options.links)  # before invisible nodes go
    title: str | None = None
    if options.denoise_term:
        clean(doc)
        title = doc.title
    try:
        _raw, term = document_term(doc, options.classes)
    except InputError as exc:
        return replace(base, problem=str(exc), notes=_notes(doc), links=links)
    except Exception as exc:
        logger.exception("visdup: cannot build the term of %s", url)
        return replace(base, problem=f"term failed: {exc}", notes=_notes(doc), links=links)
    template = None
    content = None
    if options.template or options.content:
        clean(doc)  # from here on the tree has no invisible nodes
        title = doc.title
        tree = _template_step(doc, url) if options.template else None
        layouts: list[Layout] = []
        found = _main_step(doc, url, layouts if tree is not None else None)
        if options.content and found is not None:
            title, content = _content_step(found, url, options.thin_below)
        if tree is not None:
            template = _layout_step(doc, found, layouts, tree, url)
    shape_simhash(term)  # kept on the term: the labelling, one serial process, reads it
    return replace(
        base,
        truncated=doc.truncated,
        notes=_notes(doc),
        canonical=canonical,
        title=title,
        term=term,
        simhash=term_simhash(term),
        content=content,
        template_input=template,
        term_text=str(term),
        content_json=content.to_json() if content is not None else None,
        links=links,
    )


#: Seconds between a worker process's looks at whether its crawl is still alive.
PARENT_CHECK = 1.0


def worker_started(parent: int, nice: int = 0) -> None:
    """Initialiser of an analysis worker process: it ends when the crawl that started it is
    gone. A crawl killed outright (SIGKILL, the OOM killer) never stops its workers, and
    they would wait for work forever. ``nice``: how much lower than the crawl it runs
    (VISDUP_ANALYSIS_NICE), where the system lets a process lower its own priority.

    What the process imported is moved out of the collector's sight (``gc.freeze``): it
    lives as long as the process, and each full collection would walk all of it again (3-5 %
    of the analysis of a manual's pages, run alone). (Collecting less often, the youngest
    generation at 10,000 objects instead of 700, saved 3 % of an analysis run alone and
    nothing a crawl could measure: left at Python's own thresholds. A page's analysis pauses
    the collector instead: :func:`analyse_bytes`.)
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK)
        os._exit(0)

    threading.Thread(target=watch, name="visdup-parent-watch", daemon=True).start()
    if nice > 0:
        try:
            os.nice(nice)
        except (AttributeError, OSError) as exc:  # no os.nice (Windows), or not allowed
            logger.debug("visdup: the worker keeps its priority: %s", exc)
    gc.freeze()


def analyse_bytes(
    body: bytes,
    url: str,
    final_url: str | None,
    content_type: str | None,
    encoding: str | None,
    options: AnalysisOptions,
) -> PageAnalysis:
    """:func:`analyse` without a parsed tree: what a worker process runs (its arguments and
    result cross the process boundary by pickling).

    The template step's DOM tree goes back packed: the crawl's process keeps few of them and
    never needs their objects (:class:`visdup.templates.stm.PackedTree`). So does the body
    the store keeps (``options.keep_body``): compressed here, in parallel, it also crosses
    to the labelling smaller.

    The cycle collector waits while a page is analysed: the analysis makes no reference
    cycles, yet its thousands of live objects (paragraphs, keys, the template tree) set off
    about two collections a page of the Python manual that free nothing (3 % of its CPU).
    Its objects are freed by their reference counts as it returns, and a cycle made anyway
    is found by the first collection after the page.
    """
    with _collector_paused():
        result = analyse(
            body,
            url=url,
            final_url=final_url,
            content_type=content_type,
            encoding=encoding,
            options=options,
        )
        found = result.template_input
        if found is not None and isinstance(found.tree, FlatTree):
            tree = PackedTree.of(found.tree, compress=False)  # compressed where it is kept
            result = replace(result, template_input=replace(found, tree=tree))
        if options.keep_body and body:
            result = replace(result, packed_body=pack_body(body))
        return result


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off inside, where it was on."""
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def template_input(doc: Document) -> FlatTree | None:
    """What the template step reads of a page: its DOM tree without invisible nodes.

    The one place that decides it; it runs after :func:`clean` and before main content prunes.
    """
    tree = dom_tree(doc.root, denoise=False)
    return tree if tree.nodes else None


def _template_step(doc: Document, url: str) -> FlatTree | None:
    try:
        return template_input(doc)
    except Exception:
        logger.exception("visdup: cannot read the layout of %s", url)
        return None


def _links_step(doc: Document, url: str, cap: int | None) -> PageLinks | None:
    """The page's links, when its spider asks for them (None: it reads them itself)."""
    if cap is None:
        return None
    try:
        return read_links(doc.root, cap)
    except Exception:
        logger.exception("visdup: cannot read the links of %s", url)
        return None


def _main_step(doc: Document, url: str, layouts: list[Layout] | None) -> MainContent | None:
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


def _content_step(
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


def _layout_step(
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


def body_digest(body: bytes) -> str | None:
    """The page's body hash (byte-identical copies share it; None for an empty body)."""
    return hashlib.sha1(body).hexdigest() if body else None


def thin_limit(value: Any) -> int | None:
    """:attr:`AnalysisOptions.thin_below` from VISDUP_CONTENT_MIN_SENTENCES (None: no limit)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _notes(doc: Document) -> tuple[tuple[str, str], ...]:
    return tuple(
        ("charset" if note.startswith("charset") else "truncated", note) for note in doc.notes
    )


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


def canonical_url(doc: Document, base: str) -> str | None:
    """The page's ``<link rel="canonical">``, absolute: what the site says the original is."""
    if doc.root is None:
        return None
    for link in doc.root.iter("link"):
        href = (link.get("href") or "").strip()
        if href and "canonical" in (link.get("rel") or "").lower().split():
            return urljoin(base, href)
    return None


def clean(doc: Document) -> None:
    """Remove what a reader never sees, once per page, keeping the title it had."""
    if doc.denoised or doc.root is None:
        return
    doc.title = page_title(doc.root)
    remove_invisible(doc.root)
    doc.denoised = True
