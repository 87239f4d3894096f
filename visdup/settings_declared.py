"""Every ``VISDUP_*`` setting, declared once (a field of :class:`Options`): name, type, default,
allowed values, meaning.

:mod:`visdup.config` derives the defaults, the checks and the reference page from these
declarations; this module holds the declarations alone, grouped by what they shape.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Setting:
    """One ``VISDUP_*`` setting: what it takes, what it is without a value, what it is for."""

    name: str
    #: bool, int, float, str or dict.
    kind: type
    default: Any
    #: The key of the group in ``GROUPS`` it is documented under (what it shapes).
    group: str
    #: One paragraph: what the setting does and why one would change it.
    doc: str
    #: Smallest and largest allowed value of an int or float (None: no bound).
    low: float | None = None
    high: float | None = None
    #: A str: the words it may be. A dict: the values its entries may map to (None too).
    choices: tuple[str, ...] | None = None
    #: A str: whether "" is allowed.
    empty: bool = False

    def allowed(self) -> str:
        """The allowed values in words, as the docs and error messages put them."""
        if self.kind is bool:
            return "true or false"
        if self.choices is not None and self.kind is str:
            return "one of " + ", ".join(f"`{c}`" for c in self.choices)
        if self.kind is dict:
            names = ", ".join(self.choices or ())
            return f"a mapping (or JSON object) of tag to {names} or None"
        if self.kind is str:
            return "any text" if self.empty else "a non-empty text"
        if self.low is not None and self.high is not None:
            return f"from {self.low} to {self.high}"
        if self.low is not None:
            return f"at least {self.low}"
        return "any"


#: The groups settings are documented under, in the order of the docs: (key, title, intro).
GROUPS: tuple[tuple[str, str, str], ...] = (
    (
        "crawl",
        "Crawl",
        "What the crawl fetches, follows and keeps, and what becomes of duplicates.",
    ),
    (
        "structure",
        "Structure",
        "How two pages' trees are compared: the visual term, the tree edit distance and its "
        "thresholds.",
    ),
    (
        "candidates",
        "Candidates",
        "Which stored pages a new page is compared with: the SimHash search and how many of its "
        "finds are measured exactly.",
    ),
    ("content", "Content", "The main-content channel: what counts as the same text."),
    (
        "templates",
        "Templates and records",
        "Template clusters built while the crawl runs, and the records extracted from them.",
    ),
    ("storage", "Storage", "Where pages, labels and indexes are kept, and what is kept."),
    ("report", "Report", "What the store keeps for `visdup report`."),
    ("drift", "Snapshots and drift", "Each crawl as a snapshot, compared with the previous one."),
    (
        "processes",
        "Processes",
        "How the work of a crawl is spread over the cores of one machine.",
    ),
    (
        "frontier",
        "Several processes, one crawl",
        "A frontier shared through Redis by crawl processes on one or more machines.",
    ),
)

POLICIES = ("label", "drop", "nofollow", "drop_nofollow")
INDEX_LAYOUTS = ("bands", "pairs")  # visdup.index.base.LAYOUTS, without importing the index
_VISUAL_CLASS_NAMES = ("grp", "row", "col", "text")


def declare(
    default: Any,
    group: str,
    doc: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: tuple[str, ...] | None = None,
    empty: bool = False,
) -> Any:
    """One setting's declaration, as a field of :class:`Options` (see :class:`Setting` for
    what each part means)."""
    meta = {
        "setting": {
            "group": group,
            "doc": doc,
            "low": low,
            "high": high,
            "choices": choices,
            "empty": empty,
        }
    }
    if isinstance(default, dict):
        kept = dict(default)
        return field(default_factory=lambda: dict(kept), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True, slots=True)
class Options:
    """Every ``VISDUP_*`` setting, each declared once, here: the field ``similarity_threshold``
    is the setting ``VISDUP_SIMILARITY_THRESHOLD``; its type, default, allowed values and meaning
    are the field's. Code past Scrapy's settings reads an instance (typed and checked, made by
    :func:`visdup.config.options`) rather than a dict of names."""

    # ---------------------------------------------------------------------------------- crawl
    enabled: bool = declare(
        True,
        "crawl",
        "Master switch: with False every visdup component raises NotConfigured and the project "
        "crawls as if visdup were not installed. Turn it off for one run (`-s VISDUP_ENABLED=0`) "
        "to measure or debug the bare crawl without taking the add-on out of the project.",
    )
    duplicate_policy: str = declare(
        "label",
        "crawl",
        "What happens to a page labelled `duplicate` or `moved`: `label` stores the label and "
        "keeps everything; `drop` raises DropItem, so the project's later pipelines and feeds "
        "never see it; `nofollow` stores it and does not follow the links found on it; "
        "`drop_nofollow` does both. Structural similarity alone never drops a page. `label` "
        "suits an audit, where every page belongs in the report; the nofollow policies save "
        "fetches on sites whose copies lead to more copies (print views, session URLs), at the "
        "price of an answer that depends on which pages were fetched.",
        choices=POLICIES,
    )
    nofollow_wait: float = declare(
        30.0,
        "crawl",
        "Seconds the spider middleware of the nofollow policies waits for a page's verdict "
        "before it lets the page's links through anyway. Raise it when labelling is slow (a "
        "loaded database, very large pages) and links of duplicates slip through; lower it when "
        "a late verdict should not hold back the links of the pages waiting for it.",
        low=0.0,
    )
    cluster_cap: int = declare(
        0,
        "crawl",
        "Most pages labelled into one structural duplicate group before its further members "
        "are dropped (0: no cap). Set it when one group of near-identical pages (an endless "
        "calendar, a faceted listing) would otherwise eat the crawl.",
        low=0,
    )
    max_links_per_page: int = declare(
        5000,
        "crawl",
        "Links the `site` spider reads from one page (0: all); the stat "
        "`visdup/links_over_page_cap` counts those left unread. A page with a million links is "
        "a crawl trap; raise it for sites whose index pages or sitemaps really link to more.",
        low=0,
    )
    template_budget: int = declare(
        5000,
        "crawl",
        "Pages the `site` spider follows per URL pattern (`/calendar/N/N/`, "
        "`/shop?color=*&page=*`; 0: no budget): an endless calendar or faceted listing stops "
        "there, with one warning per pattern and the stat `visdup/links_over_budget`. Raise it "
        "for sites with more real pages of one pattern (a catalogue of products under "
        "`/item/N`).",
        low=0,
    )
    resume: bool = declare(
        True,
        "crawl",
        "Continue from the store: pages earlier runs stored are not downloaded again, and the "
        "`site` spider starts from the links they stored but never fetched, so a crawl that "
        "was stopped or crashed goes on where it was. Turn it off to fetch every page again "
        "from the start URLs.",
    )
    # ------------------------------------------------------------------------------ structure
    similarity_threshold: float = declare(
        0.95,
        "structure",
        "Structural similarity (one minus the normalised tree edit distance of two visual "
        "terms) at or above which two pages are near-identical in structure. With "
        "VISDUP_CONTENT_ENABLED off, such a page is a `structural` duplicate; with it on, it is "
        "the structure two thin pages with the same text need to be `thin` duplicates. Lower "
        "it to count pages whose trees differ a little more (a changing sidebar) as copies; "
        "`visdup report --threshold` replays the crawl's comparisons at another value first.",
        low=0.0,
        high=1.0,
    )
    template_threshold: float = declare(
        0.80,
        "structure",
        "Structural similarity at or above which two pages share a layout: a page of new "
        "content is then `same_template`, and a copy of an original is `duplicate` rather than "
        "`moved`. Lower than the near-duplicate threshold, since one template holds articles "
        "of very different lengths; lower it for sites whose pages of one template differ "
        "more.",
        low=0.0,
        high=1.0,
    )
    max_term_nodes: int = declare(
        5000,
        "structure",
        "Visual terms with more nodes than this are stored but not compared, since the tree "
        "edit distance is quadratic in their size. Raise it for sites of very large pages that "
        "should be compared all the same, at the cost of time per page.",
        low=1,
    )
    ted_max_cells: int = declare(
        50_000_000,
        "structure",
        "Most dynamic-programming cells one tree edit distance may fill (counted before it "
        "runs, as if no subtree repeated another); larger pairs are skipped and counted in the "
        "stat `visdup/ted_skipped`. The C "
        "kernel fills about 300 million cells a second, so the default is about 0.15 s, far "
        "above any real page pair measured; lower it to bound the time of hostile pages.",
        low=1,
    )
    ted_page_cells: int = declare(
        100_000_000,
        "structure",
        "Most dynamic-programming cells the confirmations of one page may fill together, "
        "across its channels' candidates and the catch-up at commit: bounds a page's "
        "confirmation to about 0.3 s. Lower it when pages with many near candidates slow the "
        "crawl; raise it when such pages are left unconfirmed.",
        low=1,
    )
    denoise_term: bool = declare(
        False,
        "structure",
        "Build the visual term from the de-noised tree (invisible and fixed nodes removed) "
        "rather than the whole page. Turn it on for sites whose hidden menus or overlays differ "
        "from page to page and hide what the pages' visible structure shares.",
    )
    visual_classes: dict[str, str | None] = declare(  # noqa: RUF009 (declare makes a field)
        {},
        "structure",
        'Overrides of the HTML tag to visual class table, e.g. `{"section": "row", "aside": '
        "None}` (None: the tag adds no node of its own). Change it for sites whose markup uses "
        "a tag for another purpose than the table assumes.",
        choices=_VISUAL_CLASS_NAMES,
    )
    # ----------------------------------------------------------------------------- candidates
    hamming_k: int = declare(
        6,
        "candidates",
        "Hamming radius of the SimHash search for candidates. On a real documentation site, "
        "95 % of pages have a same-template page within 6 bits and no page of another "
        "generator within 8; each extra bit adds band tables (k=6: 28, k=8: 45), memory and "
        "lookup time. Every process of a store must use the same value.",
        low=0,
        high=16,
    )
    index_max_candidates: int = declare(
        2000,
        "candidates",
        "Most distinct stored fingerprints one index lookup compares (0: all); past it, the "
        "nearest of those compared are returned, so a template with thousands of "
        "near-identical pages stays cheap. Raise it if pages of such templates miss their "
        "copies.",
        low=0,
    )
    candidates: int = declare(
        64,
        "candidates",
        "Most candidates confirmed with the exact measure per page and channel, best possible "
        "first (ranked by a cheap bound); the work budget bounds their cost. With 8 or 16, "
        "bench/bench_recall.py lost same-template pages; with 64 it found every candidate the "
        "index held. Lower it to trade recall for time per page.",
        low=1,
        high=1000,
    )
    # -------------------------------------------------------------------------------- content
    content_enabled: bool = declare(
        True,
        "content",
        "Find each page's main content and compare it too. Without it a verdict rests on "
        "structure alone, and every page of one template looks like a duplicate: turn it off "
        "only for sites whose pages differ by structure, or to compare with a structure-only "
        "run.",
    )
    content_threshold: float = declare(
        0.80,
        "content",
        "Share of long sentences (or paragraphs) two pages must have in common to carry the "
        "same content; identical document fingerprints always do. Lower it to count pages "
        "that were edited more as copies; `visdup report --content-threshold` replays the "
        "crawl's comparisons at another value first.",
        low=0.0,
        high=1.0,
    )
    content_min_sentences: int = declare(
        3,
        "content",
        "Fewest long sentences a page's main content needs to take part in the content "
        "channel: a listing whose main text is one shared intro sentence says nothing about "
        "repeated content. Thinner pages are compared by their whole visible text instead. A "
        "store kept across crawls should keep the same value, since pages stored under a "
        "lower one carry no key to be compared by.",
        low=1,
    )
    # ------------------------------------------------------------------------------ templates
    cluster_enabled: bool = declare(
        True,
        "templates",
        "Sort every page into a template cluster while the crawl runs (layout signatures), "
        "which the report, the records and drift alarms need. Turn it off to save its time "
        "when only duplicates matter.",
    )
    cluster_threshold: float = declare(
        0.75,
        "templates",
        "Layout-signature similarity (Simple Tree Matching on two page skeletons, "
        "2·STM/(n1+n2)) at or above which two signatures are one template. Chosen on the "
        "PostgreSQL manual and the test site, checked on the Python manual and warpcore; raise "
        "it to split templates that differ in a block or two, lower it to merge them.",
        low=0.0,
        high=1.0,
    )
    cluster_representatives: int = declare(
        4,
        "templates",
        "Representatives per cluster of the whole-DOM clusterer (visdup.templates.cluster), "
        "kept for comparison in bench/bench_cluster.py; the crawl's clusters are layout "
        "signatures and do not read it.",
        low=1,
        high=100,
    )
    template_min_pages: int = declare(
        5,
        "templates",
        "Pages a cluster needs before its template is built and its records flow; at most "
        "VISDUP_TEMPLATE_MAX_PAGES. Raise it when templates built from few pages take "
        "page-specific nodes for required ones; lower it for sites with small templates.",
        low=1,
    )
    template_max_pages: int = declare(
        40,
        "templates",
        "Pages a template is generalised against (a sample spread over the cluster). More "
        "pages make a template that fits more of its cluster, at the cost of the time to "
        "build it.",
        low=1,
    )
    extract_items: bool = declare(
        False,
        "templates",
        "Send each extracted record through the item pipelines as a visdup.items.Record, so "
        "feed exports write the dataset while the crawl runs (`visdup extract` writes it "
        "from the store afterwards either way).",
    )
    extract_min_fit: float = declare(
        0.95,
        "templates",
        "Share of a template's required nodes a page must map to fit it and yield a record. "
        "Lower it to get records from pages that stray from their template, at the risk of "
        "fields filled from the wrong place.",
        low=0.0,
        high=1.0,
    )
    # -------------------------------------------------------------------------------- storage
    database_url: str = declare(
        "sqlite:///visdup.sqlite3",
        "storage",
        "SQLAlchemy URL of the store. SQLite suits one process; use "
        "`postgresql+psycopg://...` for several processes writing at once (a shared frontier "
        "requires it).",
    )
    store_body: bool = declare(
        True,
        "storage",
        "Keep each page's body (compressed) in the store, so clusters can be re-extracted and "
        "pages re-analysed offline. Turn it off to keep the store small when nothing will be "
        "re-read.",
    )
    store_outage_timeout: float = declare(
        300.0,
        "storage",
        "Seconds a crawl waits for a store that went away (a database that stopped answering, "
        "a full disk) before it stops: meanwhile it takes no new page and tries each waiting "
        "page's transaction again, so no page is lost to a short outage. When it stops, the "
        "pages it could not store are left for the next run of the same crawl (0: stop at "
        "once).",
        low=0.0,
    )
    index_layout: str = declare(
        "bands",
        "storage",
        "Layout of the shared SimHash band table on PostgreSQL: `bands` (k + 1 single blocks "
        "up to k=3) or `pairs` (k + 2 blocks, a key per pair of them). Both find every "
        "fingerprint within k. At k=3 and 10M rows a lookup read 2.6 rows in 1.6 ms with "
        "`pairs` against 611 rows in 9.8 ms with `bands`, for 3.2 GiB more index and three "
        "times the time per inserted row: choose `pairs` for tables of millions of pages. From "
        "k=4 on both give the same layout. Every process of a store must use the same layout.",
        choices=INDEX_LAYOUTS,
    )
    # --------------------------------------------------------------------------------- report
    comparisons_max: int = declare(
        16,
        "report",
        "Candidates kept per page and channel in visdup_comparisons, best first (0: none): "
        "every pair measured, confirmed or rejected, so that `visdup report` draws the full "
        "similarity histogram and replays `--threshold` from them. About 40 bytes a row on "
        "SQLite, index included; set 0 to save that space when the report's histograms are "
        "not needed.",
        low=0,
        high=1000,
    )
    # ---------------------------------------------------------------------------------- drift
    drift_enabled: bool = declare(
        True,
        "drift",
        "Keep each crawl as a snapshot (per page its template, fit and body hash; per template "
        "the aggregates of a sample) and compare it with the previous one when it ends, for "
        "`visdup drift`. Turn it off for one-off crawls that will not be compared.",
    )
    drift_sample: int = declare(
        30,
        "drift",
        "Pages per template whose fields and fit are measured at the end of a snapshot (the "
        "same URLs in every snapshot); each costs about 1 ms. Fewer pages make alarms noisier: "
        "with 12, a field that 10 of 12 pages had and 4 of 12 later had was reported emptied.",
        low=1,
        high=1000,
    )
    crawl_id: str = declare(
        "",
        "drift",
        'The crawl\'s snapshot: a new name fetches every page again, a known one continues (""'
        ": the last unfinished snapshot of the start URLs' sites, else HOSTS-YYYY-MM-DD). Also "
        'the name of the crawl several processes share through VISDUP_FRONTIER_URL ("": the '
        "start URLs' origins, so processes started with the same URLs join the same crawl). "
        "Name it to keep two crawls of the same sites apart.",
        empty=True,
    )
    # ------------------------------------------------------------------------------ processes
    analysis_processes: int = declare(
        -1,
        "processes",
        "Worker processes that analyse pages, and build templates when labelling stays in the "
        "crawl's process (-1: one per core the crawl may use, at most 4, none on one core; 0: "
        "threads of the crawl's process). Analysis is mostly Python, so processes use the "
        "cores the GIL keeps it from; a worker that dies costs no page. On the Python manual "
        "and 2 cores, the crawl ran at 0.26 of its bare speed with threads, 0.41 with 2 "
        "processes, 0.53 with 2 and the label process. Set it to bound the cores a crawl takes.",
        low=-1,
        high=256,
    )
    analysis_nice: int = declare(
        5,
        "processes",
        "How much lower the analysis worker processes run than the crawl (their `nice` "
        "increment; 0: the same priority). The crawl's own process and the label process take "
        "the pages one after another while the workers are many: when the cores are full, the "
        "serial two go first and no page waits for them (1-4 % more pages a second on 2 "
        "cores). Set 0 when the machine runs other work the workers should not yield to.",
        low=0,
        high=19,
    )
    max_elements: int = declare(
        500_000,
        "processes",
        "Elements a page may have and still be analysed (0: no cap), counted from its start "
        "tags before it is parsed. A page over it is stored with a problem and no analysis "
        "(stat `visdup/pages_over_element_cap`): each element costs the analysis about 500 "
        "bytes, and a 30 MB page of ten million `<p>` took a worker to 4.4 GB. The Python "
        "manual's pages have 2,000 on average; raise it for single-page books and specifications.",
        low=0,
    )
    analysis_memory_mb: int = declare(
        1024,
        "processes",
        "Address space, in MiB, each analysis worker process may take (its `RLIMIT_AS`; 0: no "
        "limit). A page whose analysis needs more is stored with the problem `oversized: out of "
        "memory` (stat `visdup/analysis/out_of_memory`) and the worker goes on; an idle worker "
        "takes about 110 MiB, a page at `VISDUP_MAX_ELEMENTS` about 600. Only where the system "
        "has the limit (Linux, the BSDs, macOS).",
        low=0,
    )
    label_process: bool = declare(
        True,
        "processes",
        "With analysis in worker processes, label pages in a process of their own too (the "
        "store, the indexes and the template clusters live there), leaving the crawl's process "
        "to Scrapy; one that dies is started again. False labels in the crawl's process. No "
        "effect when analysis runs in threads.",
    )
    gc_freeze: bool = declare(
        True,
        "processes",
        "Move what the crawl's process holds as the spider opens (modules, classes, Scrapy's "
        "and visdup's components) out of Python's cycle collector until it closes "
        "(`gc.freeze`, then `gc.unfreeze`): each full collection of the crawl walked all of it "
        "again. False leaves the collector as the process has it.",
    )
    # ------------------------------------------------------------------------------- frontier
    frontier_url: str = declare(
        "",
        "frontier",
        "Redis URL (`redis://HOST:PORT/DB`) of a frontier shared by several crawl processes, "
        'which then split one crawl between them ("": each process keeps Scrapy\'s own '
        "scheduler). Their store must be PostgreSQL.",
        empty=True,
    )
    frontier_lease: float = declare(
        60.0,
        "frontier",
        "Seconds a request popped from the shared frontier stays leased to its process; the "
        "process renews it every third of that while it lives, so a dead process's requests "
        "return this long after its last renewal. Lower it to hand a dead process's requests "
        "back sooner, raise it for processes that stall for long.",
        low=1.0,
    )


def _kind(annotation: object) -> type:
    return {"bool": bool, "int": int, "float": float, "str": str}.get(str(annotation), dict)


def _default(f: Any) -> Any:
    return f.default_factory() if f.default is MISSING else f.default


#: The declarations as records, in the order they are declared (and documented).
SETTINGS: tuple[Setting, ...] = tuple(
    Setting(
        "VISDUP_" + f.name.upper(),
        _kind(f.type),
        _default(f),
        **f.metadata["setting"],
    )
    for f in fields(Options)
)

#: Environment variables (not Scrapy settings) visdup reads, with their meaning.
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    (
        "VISDUP_PURE_PYTHON",
        "`1` (or true, yes, on): use the pure-Python versions of the C kernels (tree edit "
        "distance, term, text, Simple Tree Matching), for debugging or where no compiler is "
        "available. Read once, when the kernels are first imported.",
    ),
)

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
