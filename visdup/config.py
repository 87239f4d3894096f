"""Every visdup setting with its default, alphabetised, one comment each.

The add-on installs them at add-on priority, so a project's settings or ``-s`` override them;
components read them through ``visdup.context.setting``, which falls back to these defaults
when a component is used without the add-on.
"""

from __future__ import annotations

#: Largest number of nearest candidates confirmed with the tree edit distance per page.
VISDUP_CANDIDATES = 8

#: Cap on pages labelled into one structural duplicate group before its further members are
#: dropped (0: no cap). Keeps endless calendars and faceted listings from eating a crawl.
VISDUP_CLUSTER_CAP = 0

#: Sort every page into a template cluster while the crawl runs (seed 003).
VISDUP_CLUSTER_ENABLED = True

#: Representatives kept per cluster: a page is compared with at most this many per cluster,
#: however large the cluster grows.
VISDUP_CLUSTER_REPRESENTATIVES = 4

#: Simple Tree Matching similarity (1 - distance) at or above which a page joins a cluster.
#: Measured on a real documentation site: 0.6 keeps templates apart without splitting them.
VISDUP_CLUSTER_THRESHOLD = 0.60

#: Find each page's main content and compare it too (seeds 001/002): without it a verdict rests
#: on structure alone, and every page of one template looks like a duplicate.
VISDUP_CONTENT_ENABLED = True

#: Fewest long sentences a page's main content needs to take part in the content channel: a
#: listing whose main text is one shared intro sentence says nothing about repeated content.
VISDUP_CONTENT_MIN_SENTENCES = 3

#: Share of long sentences (or paragraphs) two pages must have in common to carry the same
#: content; identical document fingerprints always do.
VISDUP_CONTENT_THRESHOLD = 0.80

#: SQLAlchemy URL of the store: SQLite by default, ``postgresql+psycopg://...`` for several
#: processes writing at once.
VISDUP_DATABASE_URL = "sqlite:///visdup.sqlite3"

#: Compute the visual term on the de-noised tree (invisible and fixed nodes removed).
VISDUP_DENOISE_TERM = False

#: What happens to duplicates: "label" (store the label, keep everything), "drop" (DropItem),
#: "nofollow" (store, and do not follow the links found on duplicate pages), "drop_nofollow".
VISDUP_DUPLICATE_POLICY = "label"

#: Master switch: every visdup component raises NotConfigured when this is False.
VISDUP_ENABLED = True

#: Send each extracted record through the item pipelines as a visdup.items.Record, so feed
#: exports write the dataset while the crawl runs.
VISDUP_EXTRACT_ITEMS = False

#: Share of a template's required nodes a page must map to fit it (and yield a record).
VISDUP_EXTRACT_MIN_FIT = 0.95

#: Hamming radius of the SimHash prefilter. Measured on a real documentation site, 95 % of
#: pages have a same-template page within 6 bits and no page of another generator within 8;
#: each extra bit adds band tables (k=6: 28, k=8: 45), memory and lookup time.
VISDUP_HAMMING_K = 6

#: Most distinct stored fingerprints an index lookup compares; past it, the nearest of those
#: compared are returned (a template with thousands of near-identical pages stays cheap).
VISDUP_INDEX_MAX_CANDIDATES = 2000

#: Terms with more nodes than this are stored but not compared (the distance is quadratic).
VISDUP_MAX_TERM_NODES = 5000

#: Seconds the spider middleware waits for a page's verdict before letting its links through.
VISDUP_NOFOLLOW_WAIT = 30.0

#: Seed a crawl with the links stored by earlier runs that were never fetched (crash resume).
VISDUP_RESUME = True

#: Similarity (cmp, §1.7) at or above which a page is a structural near-duplicate.
VISDUP_SIMILARITY_THRESHOLD = 0.95

#: Keep each page's body (compressed) in the store so clusters can be re-extracted offline.
VISDUP_STORE_BODY = True

#: Pages a template is generalised against (a sample spread over the cluster).
VISDUP_TEMPLATE_MAX_PAGES = 40

#: Pages a cluster needs before its template is built and records flow.
VISDUP_TEMPLATE_MIN_PAGES = 5

#: Similarity at or above which two pages share a template (the verdict "same_template", and
#: the test that tells a duplicate from moved content). Lower than the near-duplicate
#: threshold: one template holds articles of very different lengths.
VISDUP_TEMPLATE_THRESHOLD = 0.80

#: Overrides of the HTML tag → visual class table, e.g. ``{"section": "row", "aside": None}``.
VISDUP_VISUAL_CLASSES: dict[str, str | None] = {}

#: Defaults the add-on puts under Scrapy's own settings (at add-on priority), for safety:
#: hostile pages (decompression bombs, endless bodies) must not take the crawl down.
SCRAPY_DEFAULTS = {
    "DOWNLOAD_MAXSIZE": 32 * 1024 * 1024,
    "DOWNLOAD_WARNSIZE": 8 * 1024 * 1024,
}


def defaults() -> dict[str, object]:
    return {name: value for name, value in globals().items() if name.startswith("VISDUP_")}


def flag(value: object) -> bool:
    """A boolean from a setting given as bool, int or text ("1", "true", "yes", "on")."""
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)
