"""Low-content pages: a page with far fewer words than the pages of its template.

A tag page with no posts, a product with no description: the template is there, the content
is not. An absolute word count flags every short page type (listings, contact pages) along
with them; measured against its own template's pages, a page is low-content when its visible
words are under :data:`SHARE` of the median of its template's other pages (copies left out,
templates of at least :data:`MIN_PAGES` pages); a copy is not flagged again, its original is.
The words are those a reader sees
(:mod:`visdup.content`), counted from the stored bodies of the first :data:`MAX_PAGES` pages
in URL order, which bounds the time a report takes. The same read notes the pages whose
``<meta name="robots">`` says ``noindex``: the pages table's indexability says so.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from visdup.content.main import extract
from visdup.report.data import StoreData
from visdup.verdicts import DUPLICATE_VERDICTS

#: A page under this share of its template's median visible words is low-content.
SHARE = 0.6
#: Templates with fewer pages than this (copies left out) have no median to go by.
MIN_PAGES = 3
#: Pages whose words are counted (URL order): two reads and a parse each.
MAX_PAGES = 2000

#: How the measure is named wherever a page is flagged.
MEASURE = (
    f"visible words under {SHARE:.0%} of the median of its template's pages "
    f"(templates of {MIN_PAGES} pages or more)"
)


#: A robots meta tag that keeps the page out of the index (either attribute order).
_NOINDEX = re.compile(
    rb"<meta\b[^>]*\bname\s*=\s*[\"']?(?:robots|googlebot)\b[^>]*\bcontent\s*=\s*[\"'][^\"']*noindex"
    rb"|<meta\b[^>]*\bcontent\s*=\s*[\"'][^\"']*noindex[^>]*\bname\s*=\s*[\"']?(?:robots|googlebot)\b",
    re.I,
)


@dataclass
class Words:
    #: Visible words by page id (pages with a stored body among the first MAX_PAGES).
    counts: dict[int, int]
    #: Low-content pages: page id -> its template's median.
    low: dict[int, float]
    #: Whether bodies were there to count (a store without them flags nothing).
    measured: bool
    #: Whether pages past MAX_PAGES were left uncounted.
    capped: bool
    #: Pages whose robots meta tag says noindex (among those read).
    noindex: set[int] = field(default_factory=set)


def low_content(data: StoreData) -> Words:
    if data.bodies is None:
        return Words({}, {}, measured=False, capped=False)
    pages = sorted(data.pages, key=lambda p: (p.url, p.id))
    ids = [p.id for p in pages[:MAX_PAGES]]
    counts: dict[int, int] = {}
    noindex: set[int] = set()
    for start in range(0, len(ids), 200):
        for page_id, body in data.bodies(ids[start : start + 200]).items():
            if body:
                counts[page_id] = len(extract(body).page_text.split())
                if _NOINDEX.search(body[:65536]):
                    noindex.add(page_id)
    by_template: dict[int, list[int]] = defaultdict(list)
    for p in pages:
        if p.id in counts and p.cluster_id is not None and p.verdict not in DUPLICATE_VERDICTS:
            by_template[p.cluster_id].append(counts[p.id])
    medians = {
        t: statistics.median(words) for t, words in by_template.items() if len(words) >= MIN_PAGES
    }
    low = {
        p.id: medians[p.cluster_id]
        for p in pages
        if p.id in counts
        and p.verdict not in DUPLICATE_VERDICTS  # a copy is its group's problem, said there
        and p.cluster_id in medians
        and counts[p.id] < SHARE * medians[p.cluster_id]
    }
    return Words(counts, low, bool(counts), len(pages) > MAX_PAGES, noindex)
