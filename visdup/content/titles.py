"""What a page is called: its own title, without the site's banner.

A ``<title>`` usually joins the page's name and the site's ("os — … — Python 3.11
documentation"), and a site banner may even sit in an ``<h1>`` that every page repeats (a
Sphinx manual gave "Django 3.2.25 documentation" for 300 of 300 pages). One page alone is
read by :func:`page_title`; during a crawl :class:`SiteTitles` learns, per site, the title
prefixes and suffixes its pages share and takes them off.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import lxml.etree

if TYPE_CHECKING:
    from visdup.storage.store import Store

_SPACE = re.compile(r"\s+")
#: An element's text with its descendants' (lxml.html's ``text_content()``, for any element:
#: the analysis parses with lxml.etree's parser).
_text_of = lxml.etree.XPath("string()", smart_strings=False)
#: What joins a page's name and its site's in a <title>: spaced dashes, bars, bullets...
_SEPARATOR = re.compile(r"\s+(?:[|\u2014\u2013\-\u00b7\u2022\u00bb\u00ab/:]|::)\s+")
#: Permalink marks documentation generators put after a heading's text (Sphinx's ¶).
_ANCHOR_MARKS = " \u00b6\u00a7#\U0001f517"


def clean_heading(text: str) -> str:
    return _SPACE.sub(" ", text).strip().rstrip(_ANCHOR_MARKS).strip()


def split_title(title: str) -> list[str]:
    """The parts of a <title> between separators ("a — b | c" → [a, b, c])."""
    return [p for p in (s.strip() for s in _SEPARATOR.split(title)) if p]


#: The elements a page's title is read from (:func:`page_title`).
TITLE_ELEMENTS = ("meta", "title", "h1")


def page_title(root: Any, elements: Iterable[Any] | None = None) -> str | None:
    """The page's own title, from the page alone.

    An <h1> the <title> contains, else og:title, <title>, the first <h1>. When the <title>
    contains several <h1>s, a site banner is among them: it is a link home, or it is only
    the title's first or last part where another is more. When the one <h1> it contains is
    a link home and one end of a title of several parts (a Sphinx manual's source-code pages:
    "django.db.models — Django 3.2.25 documentation" under an <h1> "Django 3.2.25
    documentation"), the title's other parts are the page's.
    """
    og: list[str] = []
    first_title: Any = None
    h1s: list[tuple[str, bool]] = []
    home: set[str] = set()
    # one walk of the tree for the three (``elements``: what it yields, found by another)
    if elements is None:
        elements = root.iter(*TITLE_ELEMENTS)
    for el in elements:
        tag = el.tag
        if tag == "h1":
            heading = clean_heading(_text_of(el))
            if heading:
                linked = sum(len(_text_of(a).strip()) for a in el.iter("a"))
                h1s.append((heading, linked > len(heading) / 2))
                if linked > len(heading) / 2 and any(
                    _links_home(a.get("href")) for a in el.iter("a")
                ):
                    home.add(heading)
        elif tag == "title":
            if first_title is None:
                first_title = el
        elif "og:title" in (el.get("property"), el.get("name")):
            content = el.get("content")
            if content is not None:
                og.append(content)
    text = _SPACE.sub(" ", _text_of(first_title)).strip() if first_title is not None else ""
    inside = [(h, linked) for h, linked in h1s if text and h.lower() in text.lower()]
    if len(inside) > 1:
        parts = [p.lower() for p in split_title(text)]
        ranked = sorted(inside, key=lambda c: (c[1], c[0].lower() in parts[-1:]))
        return ranked[0][0]
    if inside:
        heading = inside[0][0]
        parts = split_title(text)
        if heading in home and len(parts) > 1:
            ends = [p.lower() for p in (parts[0], parts[-1])]
            if heading.lower() == ends[1]:
                return _own_part(text, parts[:-1])
            if heading.lower() == ends[0]:
                return _own_part(text, parts[1:])
        return heading
    if og and og[0].strip():
        return _SPACE.sub(" ", og[0]).strip()
    if text:
        return text
    return h1s[0][0] if h1s else None


class SiteTitles:
    """Title prefixes and suffixes a site's pages share, learned as its pages arrive.

    A part that opens or closes the titles of at least AFFIX_SHARE of a site's pages (and
    of MIN_PAGES) is the site's, not the page's, and is taken off; a title that most pages
    share whole (BANNER_SHARE) is a banner and gives way to the page's first heading.
    Learned as pages come, the affixes a page loses depend on the pages before it: those
    stored before an affix was trusted keep it, and a share trusted early may not hold by
    the end. Stored titles are remembered (:meth:`remember`) and set again at the crawl's
    end by what the whole crawl saw (:meth:`stale`): the same whatever the crawl's order.
    Thread-safe.
    """

    #: Pages of a site (and pages carrying an affix) seen before its affixes are trusted.
    MIN_PAGES = 5
    #: Share of a site's pages that must carry a title part at one end for it to be the
    #: site's: on the Python manual most titles come from the page's <h1>, and the 9 % that
    #: fall back to <title> all end in "Python 3.11.2 documentation".
    AFFIX_SHARE = 0.05
    #: Share of a site's pages with one same whole title for it to be a banner.
    BANNER_SHARE = 0.5
    #: Titles remembered for the end, at most (pages past it keep what they were given).
    REMEMBER = 100_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pages: Counter[str] = Counter()
        self._first: Counter[tuple[str, str]] = Counter()
        self._last: Counter[tuple[str, str]] = Counter()
        self._whole: Counter[tuple[str, str]] = Counter()
        #: (page id, site, title as read, title as stored) of pages whose titles have parts.
        self._kept: list[tuple[int, str, str, str | None]] = []

    def own(self, url: str, title: str | None, heading: str | None = None) -> str | None:
        """Record the page's title and return its own part (``heading`` when none is left)."""
        site = _site(url)
        parts = split_title(title) if title else []
        with self._lock:
            self._pages[site] += 1
            if parts:
                self._whole[site, title.lower()] += 1  # type: ignore[union-attr]
                if len(parts) > 1:
                    self._first[site, parts[0].lower()] += 1
                    self._last[site, parts[-1].lower()] += 1
            return self._strip(site, title, parts, heading)

    def _strip(
        self, site: str, title: str | None, parts: list[str], heading: str | None
    ) -> str | None:
        """``title`` without the affixes trusted now (call under the lock)."""
        n = self._pages[site]
        if n < self.MIN_PAGES or not parts:
            return title or heading
        need = max(self.MIN_PAGES, self.AFFIX_SHARE * n)
        if len(parts) == 1 and self._whole[site, parts[0].lower()] >= self.BANNER_SHARE * n:
            return heading or title  # the site's name alone, on most of its pages
        if len(parts) > 1 and self._last[site, parts[-1].lower()] >= need:
            parts = parts[:-1]
        if len(parts) > 1 and self._first[site, parts[0].lower()] >= need:
            parts = parts[1:]
        own = _own_part(title, parts)  # type: ignore[arg-type]
        return own or heading or title

    def final(self, url: str, title: str | None) -> str | None:
        """``title``'s own part by every title seen so far (once all are seen: by the whole
        set, whatever its order)."""
        if not title:
            return title
        with self._lock:
            return self._strip(_site(url), title, split_title(title), None)

    def remember(self, page_id: int, url: str, title: str | None, stored: str | None) -> None:
        """A stored page's ``title`` as read and as :meth:`own` gave it (``stored``), kept for
        :meth:`stale` when it has parts an affix could be."""
        if not title or len(split_title(title)) < 2:
            return
        with self._lock:
            if len(self._kept) < self.REMEMBER:
                self._kept.append((page_id, _site(url), title, stored))

    def stale(self) -> dict[int, str | None]:
        """Page id → its own title by what the whole crawl saw, for the remembered pages
        whose stored title differs: those seen before an affix was trusted, and those seen
        while one was that the site's later pages no longer bear out."""
        with self._lock:
            kept, self._kept = self._kept, []
            out: dict[int, str | None] = {}
            for page_id, site, title, stored in kept:
                now = self._strip(site, title, split_title(title), None)
                if now != stored:
                    out[page_id] = now
            return out


def retitle(store: Store, titles: SiteTitles, count: Callable[[str, int], None]) -> None:
    """Store again the titles that the affixes of the whole set change (:meth:`SiteTitles.stale`):
    those given before the site's affixes were known as they are at the end."""
    retitled = titles.stale()
    if retitled:
        store.update_pages({page_id: {"title": t} for page_id, t in retitled.items()})
        count("visdup/titles_retitled", len(retitled))


_INDEX_PAGES = [["index.html"], ["index.htm"], ["index.php"]]


def _links_home(href: str | None) -> bool:
    """Whether a link leads to a site's (or a manual's) front page: ``/``, ``../index.html``."""
    href = (href or "").strip()
    if not href or href.startswith(("#", "?")):
        return False  # the page itself (a permalink mark)
    segments = [s for s in urlsplit(href).path.split("/") if s not in ("", ".", "..")]
    return not segments or [s.lower() for s in segments] in _INDEX_PAGES


def _site(url: str) -> str:
    return urlsplit(url).netloc.lower()


def _own_part(title: str, parts: list[str]) -> str:
    """The span of ``title`` from its first to its last kept part, separators kept."""
    if not parts:
        return ""
    start = title.find(parts[0])
    end = title.rfind(parts[-1])
    if start < 0 or end < 0 or end < start:
        return " ".join(parts)
    return title[start : end + len(parts[-1])].strip()
