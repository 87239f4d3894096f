"""Every visdup setting with its default, alphabetised, one comment each.

The add-on installs them at add-on priority, so a project's settings or ``-s`` override them;
components read them through ``visdup.context.setting``, which falls back to these defaults
when a component is used without the add-on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from visdup.errors import ConfigError

#: How much lower the analysis worker processes run than the crawl (their ``nice`` increment;
#: 0: the same priority). The crawl's own process (Scrapy, one thread) and the label process
#: each do their part of every page one page after another; the workers are many and wait
#: their turn: when the cores are full, the serial two go first and no page waits for them.
#: The bench crawl of the Python manual on 2 cores: 5 of 5 alternating pairs faster with 5
#: than with 0 (1-4 % more pages a second, 2.8 % on average), at the same CPU a page.
VISDUP_ANALYSIS_NICE = 5

#: Worker processes that analyse pages, and build templates when labelling stays in the crawl's
#: process (0: threads of the crawl process; -1: one per core the crawl may use, at most 4,
#: none on one core). Analysis is mostly Python
#: (main content, text prints, signatures): processes let it use cores the GIL keeps it from,
#: and leave the crawl's own process to Scrapy (and the labelling to VISDUP_LABEL_PROCESS).
#: bench/bench_crawl.py on the Python manual, 2 cores: on/off 0.26 with threads, 0.33 with 1
#: process, 0.41 with 2; 0.53 with 2 and the label process.
VISDUP_ANALYSIS_PROCESSES = -1

#: Most candidates confirmed with the exact measure per page and channel, best possible first
#: (ranked by a cheap bound); the TED work budget bounds their cost. Measured with
#: bench/bench_recall.py: 8 or 16 lost same-template pages, 64 found all the candidates held.
VISDUP_CANDIDATES = 64

#: Cap on pages labelled into one structural duplicate group before its further members are
#: dropped (0: no cap). Keeps endless calendars and faceted listings from eating a crawl.
VISDUP_CLUSTER_CAP = 0

#: Sort every page into a template cluster while the crawl runs (seed 003).
VISDUP_CLUSTER_ENABLED = True

#: Representatives per cluster of the whole-DOM clusterer (visdup.templates.cluster, kept for
#: comparison in bench/bench_cluster.py); the crawl's clusters are layout signatures.
VISDUP_CLUSTER_REPRESENTATIVES = 4

#: Layout-signature similarity (Simple Tree Matching on two page skeletons, 2·STM/(n1+n2)) at
#: or above which two signatures are one template. Chosen on the PostgreSQL manual and the test
#: site, checked on the Python manual and warpcore (README, "Template signatures").
VISDUP_CLUSTER_THRESHOLD = 0.75

#: Candidates kept per page and channel in visdup_comparisons (the best first; 0: none): every
#: pair measured by tree edit distance or text prints, confirmed or rejected, so that
#: ``visdup report`` draws the full similarity histogram and replays ``--threshold`` from them.
#: About 40 bytes a row on SQLite, index included (README, "Site audit report").
VISDUP_COMPARISONS_MAX = 16

#: Find each page's main content and compare it too (seeds 001/002): without it a verdict rests
#: on structure alone, and every page of one template looks like a duplicate.
VISDUP_CONTENT_ENABLED = True

#: Fewest long sentences a page's main content needs to take part in the content channel: a
#: listing whose main text is one shared intro sentence says nothing about repeated content.
VISDUP_CONTENT_MIN_SENTENCES = 3

#: Share of long sentences (or paragraphs) two pages must have in common to carry the same
#: content; identical document fingerprints always do.
VISDUP_CONTENT_THRESHOLD = 0.80

#: The crawl's snapshot (visdup.drift): a new name fetches every page again, a known one
#: continues ("": the last unfinished snapshot of the start URLs' sites, else HOSTS-YYYY-MM-DD).
#: Also the name of the crawl several processes share through VISDUP_FRONTIER_URL ("": the
#: start URLs' origins, so processes started with the same URLs join the same crawl).
VISDUP_CRAWL_ID = ""

#: SQLAlchemy URL of the store: SQLite by default, ``postgresql+psycopg://...`` for several
#: processes writing at once.
VISDUP_DATABASE_URL = "sqlite:///visdup.sqlite3"

#: Compute the visual term on the de-noised tree (invisible and fixed nodes removed).
VISDUP_DENOISE_TERM = False

#: Keep each crawl as a snapshot (per page its template, fit and body hash; per template the
#: aggregates of a sample) and compare it with the previous one when it ends (visdup.drift).
VISDUP_DRIFT_ENABLED = True

#: Pages per template whose fields and fit are measured at the end of a snapshot (the same
#: URLs in every snapshot: the smallest URL digests); the end-of-crawl cost is about 1 ms each.
#: With 12, a field that 10 of 12 book pages had and 4 of 12 other books had was "emptied".
VISDUP_DRIFT_SAMPLE = 30

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

#: Seconds a request popped from the shared frontier stays leased to its process; the process
#: renews it every third of that while it lives, so a dead process's requests return this long
#: after its last renewal.
VISDUP_FRONTIER_LEASE = 60.0

#: Redis URL (``redis://HOST:PORT/DB``) of a frontier shared by several crawl processes
#: (visdup.scheduler; "": each process keeps Scrapy's own scheduler).
VISDUP_FRONTIER_URL = ""

#: Hamming radius of the SimHash prefilter. Measured on a real documentation site, 95 % of
#: pages have a same-template page within 6 bits and no page of another generator within 8;
#: each extra bit adds band tables (k=6: 28, k=8: 45), memory and lookup time.
VISDUP_HAMMING_K = 6

#: Layout of the shared SimHash band table on PostgreSQL (visdup.index.sql): "bands" (k + 1
#: single blocks up to k=3: 16-bit keys at k=3) or "pairs" (k + 2 blocks, a key per pair of
#: them: 25-26-bit keys at k=3, 10 indexed columns instead of 4). Both find every fingerprint
#: within k. Measured at k=3 and 10M rows with bench/bench_index.py --pg-layouts: a lookup
#: read 2.6 rows in 1.6 ms with pairs, 611 rows in 9.8 ms with bands, for 3.2 GiB more index
#: and 3x the time per inserted row (README, "The index at 10M pages"). From k=4 on, bands
#: already key on pairs of blocks: both give the same layout. Every process of a store must
#: use the same layout and k.
VISDUP_INDEX_LAYOUT = "bands"

#: Most distinct stored fingerprints an index lookup compares; past it, the nearest of those
#: compared are returned (a template with thousands of near-identical pages stays cheap).
VISDUP_INDEX_MAX_CANDIDATES = 2000

#: With analysis in worker processes, label pages in a process of their own too (the store,
#: the indexes and the template clusters live there): the crawl's process is left to Scrapy,
#: 22.3 against 18.1 ms CPU per page with visdup off (33.7 labelling there; Python manual).
#: False labels in the crawl's process. No effect when analysis runs in threads.
VISDUP_LABEL_PROCESS = True

#: Links the site spider reads from one page (0: all); a page with a million links is a crawl
#: trap. The stat visdup/links_over_page_cap counts the links left unread.
VISDUP_MAX_LINKS_PER_PAGE = 5000

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

#: Most DP cells one tree edit distance may fill (``distance.dp_cells``, counted before it
#: runs); larger pairs are skipped (stat ``visdup/ted_skipped``). The C kernel fills about
#: 300 million cells a second: 50 million is ~0.15 s, far above any real page pair measured.
VISDUP_TED_MAX_CELLS = 50_000_000

#: Most DP cells the confirmations of one page may fill together, across its channels'
#: candidates and the catch-up at commit: bounds a page's confirmation to ~0.3 s.
VISDUP_TED_PAGE_CELLS = 100_000_000

#: Pages the site spider follows per URL pattern (``/calendar/N/N/``, ``/shop?color=*&page=*``;
#: 0: no budget): an endless calendar or faceted listing stops there, with a warning and the
#: stat visdup/links_over_budget. Raise it for sites with more pages of one pattern.
VISDUP_TEMPLATE_BUDGET = 5000

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

#: Defaults the add-on puts under Scrapy's own settings when visdup is on (at add-on priority).
#: Scrapy gives every response ``CONCURRENT_ITEMS`` asyncio tasks (100 by default) and keeps
#: them, done or not, until the response's last item leaves the item pipelines. A page item
#: spends milliseconds in visdup's, so hundreds of responses wait there at once (up to
#: ``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` of them) with 100 tasks each: a crawl's process then
#: spends a fifth of its CPU in garbage collection. Eight still take a page's links while its
#: page item is in the pipelines; a project that yields many items per response and wants
#: more of them at once sets its own.
SCRAPY_DEFAULTS_ON = {"CONCURRENT_ITEMS": 8}


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})
POLICIES = ("label", "drop", "nofollow", "drop_nofollow")
INDEX_LAYOUTS = ("bands", "pairs")  # visdup.index.base.LAYOUTS, without importing the index


def defaults() -> dict[str, object]:
    """Every VISDUP_ setting with its documented default."""
    return {name: value for name, value in globals().items() if name.startswith("VISDUP_")}


def flag(value: object) -> bool:
    """A boolean from a setting given as bool, int or text ("1", "true", "yes", "on")."""
    if isinstance(value, str):
        return value.strip().lower() in _TRUE
    return bool(value)


# ------------------------------------------------------------------------ typed, validated view


def _bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ConfigError(f"{name} must be true or false, not {value!r}")


def _number(name: str, value: object, kind: type, lo: float | None, hi: float | None) -> Any:
    try:
        if isinstance(value, bool):
            raise ValueError
        number = kind(value.strip() if isinstance(value, str) else value)  # type: ignore[operator]
    except (TypeError, ValueError):
        what = "a whole number" if kind is int else "a number"
        raise ConfigError(f"{name} must be {what}, not {value!r}") from None
    if kind is float and number != number:  # NaN passes every comparison
        raise ConfigError(f"{name} must be a number, not {value!r}")
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        bounds = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
        raise ConfigError(f"{name} must be {bounds}, not {value!r}")
    return number


#: Type and allowed range of each setting: (kind, low, high); kinds bool, int, float, str, dict,
#: or a tuple of allowed words (str with low 0 may be empty). A setting missing here is accepted
#: as given.
SPECS: dict[str, tuple[Any, float | None, float | None]] = {
    "VISDUP_CANDIDATES": (int, 1, 1000),
    "VISDUP_ANALYSIS_NICE": (int, 0, 19),
    "VISDUP_ANALYSIS_PROCESSES": (int, -1, 256),
    "VISDUP_CLUSTER_CAP": (int, 0, None),
    "VISDUP_CLUSTER_ENABLED": (bool, None, None),
    "VISDUP_CLUSTER_REPRESENTATIVES": (int, 1, 100),
    "VISDUP_CLUSTER_THRESHOLD": (float, 0.0, 1.0),
    "VISDUP_COMPARISONS_MAX": (int, 0, 1000),
    "VISDUP_CONTENT_ENABLED": (bool, None, None),
    "VISDUP_CONTENT_MIN_SENTENCES": (int, 1, None),
    "VISDUP_CONTENT_THRESHOLD": (float, 0.0, 1.0),
    "VISDUP_CRAWL_ID": (str, 0, None),
    "VISDUP_DATABASE_URL": (str, None, None),
    "VISDUP_DENOISE_TERM": (bool, None, None),
    "VISDUP_DRIFT_ENABLED": (bool, None, None),
    "VISDUP_DRIFT_SAMPLE": (int, 1, 1000),
    "VISDUP_DUPLICATE_POLICY": (POLICIES, None, None),
    "VISDUP_ENABLED": (bool, None, None),
    "VISDUP_EXTRACT_ITEMS": (bool, None, None),
    "VISDUP_EXTRACT_MIN_FIT": (float, 0.0, 1.0),
    "VISDUP_FRONTIER_LEASE": (float, 1.0, None),
    "VISDUP_FRONTIER_URL": (str, 0, None),
    "VISDUP_HAMMING_K": (int, 0, 16),
    "VISDUP_INDEX_LAYOUT": (INDEX_LAYOUTS, None, None),
    "VISDUP_INDEX_MAX_CANDIDATES": (int, 0, None),
    "VISDUP_LABEL_PROCESS": (bool, None, None),
    "VISDUP_MAX_LINKS_PER_PAGE": (int, 0, None),
    "VISDUP_MAX_TERM_NODES": (int, 1, None),
    "VISDUP_NOFOLLOW_WAIT": (float, 0.0, None),
    "VISDUP_RESUME": (bool, None, None),
    "VISDUP_SIMILARITY_THRESHOLD": (float, 0.0, 1.0),
    "VISDUP_STORE_BODY": (bool, None, None),
    "VISDUP_TEMPLATE_BUDGET": (int, 0, None),
    "VISDUP_TED_MAX_CELLS": (int, 1, None),
    "VISDUP_TED_PAGE_CELLS": (int, 1, None),
    "VISDUP_TEMPLATE_MAX_PAGES": (int, 1, None),
    "VISDUP_TEMPLATE_MIN_PAGES": (int, 1, None),
    "VISDUP_TEMPLATE_THRESHOLD": (float, 0.0, 1.0),
    "VISDUP_VISUAL_CLASSES": (dict, None, None),
}

_VISUAL_CLASS_NAMES = frozenset({"grp", "row", "col", "text"})


def check(name: str, value: object) -> Any:
    """``value`` as the type ``name`` takes; ConfigError (one clear line) when it cannot be."""
    kind, lo, hi = SPECS.get(name, (None, None, None))
    if kind is None:
        return value
    if kind is bool:
        return _bool(name, value)
    if kind in (int, float):
        return _number(name, value, kind, lo, hi)
    if isinstance(kind, tuple):
        word = str(value).strip().lower()
        if word not in kind:
            raise ConfigError(f"{name} must be one of {', '.join(kind)}, not {value!r}")
        return word
    if kind is dict:
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except ValueError:
                raise ConfigError(f"{name} must be a JSON object, not {value!r}") from None
        if not isinstance(value, Mapping):
            raise ConfigError(f"{name} must be a mapping, not {value!r}")
        if name == "VISDUP_VISUAL_CLASSES":
            for tag, cls in value.items():
                if cls is not None and cls not in _VISUAL_CLASS_NAMES:
                    raise ConfigError(
                        f"{name}: {tag!r} maps to {cls!r}; use grp, row, col, text or None"
                    )
        return dict(value)
    if not isinstance(value, str) or (lo != 0 and not value.strip()):
        what = "a text" if lo == 0 else "a non-empty text"
        raise ConfigError(f"{name} must be {what}, not {value!r}")
    return value.strip()


def _raw(source: Any, name: str) -> Any:
    """A setting's value from Scrapy settings, a mapping or a callable (None when absent)."""
    if callable(source) and not isinstance(source, Mapping):
        return source(name)
    getter = getattr(source, "get", None)
    return getter(name) if getter is not None else None


def resolve(source: Any = None) -> dict[str, Any]:
    """Every VISDUP_ setting, typed and checked: the project's value, else the default.

    ``source`` is Scrapy ``Settings``, a plain mapping, or a ``name -> value`` callable.
    Raises :class:`ConfigError` naming the first bad setting.
    """
    values: dict[str, Any] = {}
    for name, default in defaults().items():
        value = None if source is None else _raw(source, name)
        values[name] = check(name, default if value is None else value)
    if values["VISDUP_TEMPLATE_MIN_PAGES"] > values["VISDUP_TEMPLATE_MAX_PAGES"]:
        raise ConfigError(
            "VISDUP_TEMPLATE_MIN_PAGES must not exceed VISDUP_TEMPLATE_MAX_PAGES "
            f"({values['VISDUP_TEMPLATE_MIN_PAGES']} > {values['VISDUP_TEMPLATE_MAX_PAGES']})"
        )
    return values
