"""Which pages a template is built from, and which page stands for a template: read from the
pages alone.

A crawl meets its pages in an order that changes from run to run (concurrency, retries), the
same site served again may answer on another host or port, and a batch command takes its
files in whatever order they are given. So that the same pages give the same templates, the
same fields in the same order and the same representatives:

- a page's rank (:func:`sample_rank`) is a digest of its path and query with tracking
  parameters and session ids removed, not of its scheme, host or port;
- copies of one page (``/a.html``, ``/a.html;jsessionid=…``, ``/a.html?utm_source=…``: one
  cleaned URL) hold one place in a sample, their cleanest spelling's: byte-identical pages
  counted twice hide how fields vary and crowd distinct pages out;
- a template's sample is the ``size`` distinct pages of smallest rank (:func:`choose_sample`
  for a whole set, :func:`keep_in_sample` one page at a time: the same pages either way), and
  it is generalised from one page of it chosen by what the pages hold (:func:`starting_page`);
- a cluster's representative is its cleanest page (:func:`cleanest`), in the store's
  canonical URL form, so that a report finds it among the stored pages.

Keys that are not URLs (page files) are taken as they are.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, TypeVar
from urllib.parse import urlsplit

from visdup.storage.urls import canonical_url
from visdup.verdicts import original_rank, tracking_param, without_session

#: A page's place in a sample: (rank, cleaned URL, tracked, length, canonical URL). Copies
#: share the first two; the rest puts the cleanest of them first.
SampleOrder = tuple[int, str, int, int, str]

#: A sample entry: a tuple whose first item is its page's :data:`SampleOrder`.
Entry = TypeVar("Entry", bound=tuple[Any, ...])

_DEFAULT_PORTS = {"http": 80, "https": 443}


@lru_cache(maxsize=65536)
def cleaned(url: str) -> tuple[str, str]:
    """(site, path and query) of a URL in canonical form, without tracking parameters or a
    session id in the path; the site is the host and any port not the scheme's own, so an
    ``http`` and an ``https`` copy are one page. A key that is no URL: ("", the key)."""
    if "://" not in url:
        return "", url
    parts = urlsplit(canonical_url(url))
    path = without_session(parts.path) or "/"
    query = "&".join(
        item
        for item in parts.query.split("&")
        if item and not tracking_param(item.split("=", 1)[0])
    )
    site = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme.lower()):
        site = f"{site}:{port}"
    return site, path + (f"?{query}" if query else "")


def sample_rank(url: str) -> int:
    """A page's rank in its template's sample: a digest of its cleaned path and query, the
    same in every process, order, snapshot and on any host or port (the crawl's template
    samples, the batch commands' and the drift samples use it)."""
    digest = hashlib.blake2b(cleaned(url)[1].encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def cleanliness(url: str) -> tuple[int, int, str]:
    """How clean a spelling of a page is, cleanest first: without tracking parameters or a
    session id, then the shortest path and query, then the canonical URL's order (the order
    :func:`visdup.verdicts.original_rank` gives a duplicate group's pages)."""
    _named, tracked, length, canonical = original_rank(canonical_url(url), False)
    return tracked, length, canonical


@lru_cache(maxsize=65536)
def sample_order(url: str) -> SampleOrder:
    """A page's :data:`SampleOrder`."""
    site, rest = cleaned(url)
    return (sample_rank(url), f"{site}{rest}", *cleanliness(url))


def cleanest(urls: Iterable[str]) -> str:
    """The cleanest of ``urls`` (:func:`cleanliness`), in canonical form."""
    return min(map(cleanliness, urls))[2]


def choose_sample(entries: Iterable[Entry], size: int) -> list[Entry]:
    """The sample of ``entries``: per page (its copies as one), its cleanest entry; of
    those, the ``size`` of smallest rank, smallest first."""
    best: dict[tuple[int, str], Entry] = {}
    for entry in entries:
        order = entry[0]
        page = order[0], order[1]
        held = best.get(page)
        if held is None or order < held[0]:
            best[page] = entry
    return sorted(best.values(), key=_order)[: max(0, size)]


def admits(sample: Sequence[tuple[Any, ...]], order: SampleOrder, size: int) -> bool:
    """Whether a page of this :data:`SampleOrder` belongs in ``sample`` (as
    :func:`choose_sample` leaves it): in place of a copy it is cleaner than, or among the
    ``size`` pages of smallest rank. Asked before the page's entry is made (its tree packed)."""
    for held in sample:
        if held[0][:2] == order[:2]:
            return bool(order < held[0])
    return len(sample) < size or bool(sample and order < sample[-1][0])


def keep_in_sample(sample: list[Entry], entry: Entry, size: int) -> bool:
    """Put ``entry`` in ``sample`` if it belongs there (:func:`admits`); whether it went in.

    Pages taken one at a time leave the sample that :func:`choose_sample` gives for them
    all: a copy of a page that left the sample ranks as that page did, below every page kept.
    """
    order = entry[0]
    if not admits(sample, order, size):
        return False
    for i, held in enumerate(sample):
        if held[0][:2] == order[:2]:
            sample[i] = entry  # a cleaner copy: the same place
            return True
    bisect.insort(sample, entry, key=_order)
    del sample[size:]
    return True


def starting_page(pages: Sequence[tuple[int, int]], core: int | None) -> int | None:
    """Which page of a sample (``pages``: each one's signature key and node count, in sample
    order) a template is generalised from: of those with the cluster's most common signature
    (``core``), the median by size (the lower one of two, the earlier on a tie); None when
    none has it.

    A template holds only the nodes of the page it starts from, and pages of one signature
    still differ by a row or a list's length: the smallest page lacks rows most pages have
    (a book without a Publisher row left its template without the publisher field), the
    largest carries what few have. The median minimises the summed difference in size to
    the others, the part of their tree distance that sizes alone bound: the medoid, as far
    as it can be told without STM.
    """
    held = sorted((nodes, i) for i, (key, nodes) in enumerate(pages) if key == core)
    return held[(len(held) - 1) // 2][1] if held else None


def _order(entry: tuple[Any, ...]) -> Any:
    return entry[0]
