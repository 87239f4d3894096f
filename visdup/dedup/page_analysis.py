"""What one page's analysis found (:class:`PageAnalysis`), and how it crosses processes.

An analysis is immutable and made once, where the page was parsed: an analysis worker process,
or the crawl's own. On its way to the labelling it may pass through a process that only
forwards it, so its large parts (the term, the content print, the template input) are pickled
apart, as one blob that only the process reading them unpickles.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from visdup.content.textprint import ContentPrint
from visdup.page.links import PageLinks
from visdup.storage.body import pack_body
from visdup.structure.term import Term
from visdup.templates.signature import TemplateInput

if TYPE_CHECKING:
    from visdup.storage.store import PageRecord


@dataclass(frozen=True, slots=True)
class PageAnalysis:
    """Everything visdup learns from one page's bytes, before it meets any other page."""

    url: str
    body_hash: str | None = None
    #: Why the page is unusable (empty, binary, not HTML, no term), else None.
    problem: str | None = None
    #: The charset the page was read in.
    encoding: str | None = None
    #: The parser dropped part of the page (nested deeper than its limit, or too large).
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
    #: The bytes gave no document at all (empty, binary, not HTML, unparseable): ``problem``
    #: says which.
    unread: bool = False

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
