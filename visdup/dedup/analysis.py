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

The result, :class:`~visdup.dedup.page_analysis.PageAnalysis`, is immutable. The crawl's
pipelines, ``visdup dups`` and batch jobs all call :func:`analyse`, so a page gets the same
fingerprints whichever way it arrives.

Beside this module: :mod:`~visdup.dedup.reading` (bytes → a parsed page, in the charset a
browser would read), :mod:`~visdup.dedup.steps` (each step on the tree) and
:mod:`~visdup.dedup.page_analysis` (the result, and how it crosses processes). Their public
names are importable from here.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from visdup.config import options
from visdup.content.textprint import ContentPrint
from visdup.dedup.page_analysis import PageAnalysis
from visdup.dedup.reading import CHARSET_SNIFF, declared_charset, document
from visdup.dedup.steps import (
    canonical_url,
    clean,
    content_step,
    layout_step,
    links_step,
    main_step,
    template_input,
    template_step,
)
from visdup.errors import InputError
from visdup.page.links import PageLinks
from visdup.page.parse import Document, elements_over
from visdup.storage.body import pack_body
from visdup.structure.fingerprint import shape_simhash, term_simhash
from visdup.structure.term import document_term
from visdup.templates.signature import Layout, TemplateInput
from visdup.templates.stm import FlatTree, PackedTree

__all__ = [
    "CHARSET_SNIFF",
    "MAX_ELEMENTS",
    "OUT_OF_MEMORY",
    "PARENT_CHECK",
    "AnalysisOptions",
    "PageAnalysis",
    "analyse",
    "analyse_bytes",
    "body_digest",
    "canonical_url",
    "clean",
    "declared_charset",
    "document",
    "template_input",
    "thin_limit",
    "worker_started",
]

logger = logging.getLogger(__name__)

#: Elements a page may have and still be analysed (VISDUP_MAX_ELEMENTS's default).
MAX_ELEMENTS = 500_000
#: The problem of a page whose analysis ran out of the worker's memory (its first word, like
#: the element cap's, names the stat ``visdup/problems/oversized``).
OUT_OF_MEMORY = "oversized: out of memory (VISDUP_ANALYSIS_MEMORY_MB)"


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
    #: Pages with more elements get no analysis (VISDUP_MAX_ELEMENTS; 0: no cap).
    max_elements: int = MAX_ELEMENTS

    @classmethod
    def from_settings(
        cls, settings: Any, *, content: bool = True, template: bool = True
    ) -> AnalysisOptions:
        """From VISDUP_ settings (:class:`~visdup.config.Options`, or what
        :func:`visdup.config.options` reads them from); ``content``/``template`` say whether
        a step is wired."""
        opts = options(settings)
        return cls(
            classes=opts.visual_classes or None,
            denoise_term=opts.denoise_term,
            content=content and opts.content_enabled,
            template=template and opts.cluster_enabled,
            thin_below=thin_limit(opts.content_min_sentences),
            keep_body=opts.store_body,
            max_elements=opts.max_elements,
        )


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
    over = elements_over(body, options.max_elements)
    if over is not None:
        problem = f"oversized: about {over} elements, more than VISDUP_MAX_ELEMENTS"
        return _refused(url, body_hash, problem, options)
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
        truncated=doc.truncated,
        replacement_ratio=doc.replacement_ratio,
    )
    if doc.root is None:
        return replace(base, problem=doc.problem or "no document", unread=True)
    page_url = final_url or url
    cleans = options.denoise_term or options.template or options.content
    # before <head> goes: where the page is cleaned, read in the same walk as its title
    canonical = None if cleans else canonical_url(doc, page_url)
    links = links_step(doc, url, options.links)  # before invisible nodes go
    title: str | None = None
    if options.denoise_term:
        clean(doc, page_url)
        title = doc.title
    try:
        _raw, term = document_term(doc, options.classes)
    except InputError as exc:
        return _no_term(base, doc, str(exc), links)
    except MemoryError:
        raise  # the page's, not the term's: the caller says so (analyse_bytes)
    except Exception as exc:
        logger.exception("visdup: cannot build the term of %s", url)
        return _no_term(base, doc, f"term failed: {exc}", links)
    template = None
    content = None
    if options.template or options.content:
        title, content, template = _cleaned_steps(doc, url, page_url, options)
    if cleans:
        canonical = doc.canonical
    shape_simhash(term)  # kept on the term: the labelling, one serial process, reads it
    return replace(
        base,
        truncated=doc.truncated,  # the term's walk marks a response's tree it finds cut short
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


def _cleaned_steps(
    doc: Document, url: str, page_url: str, options: AnalysisOptions
) -> tuple[str | None, ContentPrint | None, TemplateInput | None]:
    """The steps on the page without its invisible nodes: the template step's tree, main
    content and its print, the layout signature; the page's title as they leave it."""
    clean(doc, page_url)  # from here on the tree has no invisible nodes
    title = doc.title
    tree = template_step(doc, url) if options.template else None
    layouts: list[Layout] = []
    found = main_step(doc, url, layouts if tree is not None else None)
    content = None
    if options.content and found is not None:
        title, content = content_step(found, url, options.thin_below)
    template = layout_step(doc, found, layouts, tree, url) if tree is not None else None
    return title, content, template


#: Seconds between a worker process's looks at whether its crawl is still alive.
PARENT_CHECK = 1.0


def worker_started(parent: int, nice: int = 0, memory_mb: int = 0) -> None:
    """Initialiser of an analysis worker process: it ends when the crawl that started it is
    gone. A crawl killed outright (SIGKILL, the OOM killer) never stops its workers, and
    they would wait for work forever. ``nice``: how much lower than the crawl it runs
    (VISDUP_ANALYSIS_NICE), where the system lets a process lower its own priority.
    ``memory_mb``: the address space it may take (VISDUP_ANALYSIS_MEMORY_MB, 0: no limit), so
    that a page cannot take it, and the machine, past a known size: an allocation past it
    fails with MemoryError, which costs that page its analysis (:func:`analyse_bytes`), not
    the worker.

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
    if memory_mb > 0:
        limit_memory(memory_mb * 1024 * 1024)
    gc.freeze()


def limit_memory(size: int) -> None:
    """This process's address space limited to ``size`` bytes (its soft ``RLIMIT_AS``; never
    above the hard limit), where the system has the limit."""
    try:
        import resource  # not on Windows

        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            size = min(size, hard)
        resource.setrlimit(resource.RLIMIT_AS, (size, hard))
    except (ImportError, AttributeError, ValueError, OSError) as exc:
        logger.warning("visdup: the analysis worker's memory is not limited: %s", exc)


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

    A page whose analysis needs more memory than the worker may take (its ``RLIMIT_AS``) is
    returned with the problem :data:`OUT_OF_MEMORY`: the analysis's objects are gone once
    the error has unwound it, and the worker takes the next page.
    """
    try:
        return _analysed_bytes(body, url, final_url, content_type, encoding, options)
    except MemoryError:
        pass  # out of the handler first: its traceback holds the analysis's frames and tree
    gc.collect()
    return _refused(url, body_digest(body), OUT_OF_MEMORY, options)


def _analysed_bytes(
    body: bytes,
    url: str,
    final_url: str | None,
    content_type: str | None,
    encoding: str | None,
    options: AnalysisOptions,
) -> PageAnalysis:
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


def _refused(
    url: str, body_hash: str | None, problem: str, options: AnalysisOptions
) -> PageAnalysis:
    """A page too big to analyse: its problem, and no links (an empty list, so that its spider
    does not parse it in the crawl's process for them either)."""
    links = PageLinks(()) if options.links is not None else None
    return PageAnalysis(url=url, body_hash=body_hash, problem=problem, links=links)


def _no_term(
    base: PageAnalysis, doc: Document, problem: str, links: PageLinks | None
) -> PageAnalysis:
    """A page whose term could not be built: why, and what its parse said of it."""
    return replace(base, problem=problem, truncated=doc.truncated, notes=_notes(doc), links=links)


def _notes(doc: Document) -> tuple[tuple[str, str], ...]:
    return tuple(
        ("charset" if note.startswith("charset") else "truncated", note) for note in doc.notes
    )
