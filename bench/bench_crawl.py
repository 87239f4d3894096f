"""Crawl the Python 3.11 and PostgreSQL 15 manuals on 127.0.0.1 with visdup on and off.

    python bench/bench_crawl.py [--rounds 1] [--which python,postgres] [--modes off,all]
                                [--cores N] [--db postgresql+psycopg://postgres@127.0.0.1/postgres]

``--which readability`` crawls Readability's 130 pages instead (one page of each of as many
news sites, blogs and shops, with their own styles), from an index page that links them all,
one level deep (``DEPTH_LIMIT=1``: their own links lead to no page here).

Prints pages/s for each run (and how much of its time came after the spider closed: the
templates' last builds, the snapshot's aggregates, the processes' end) and the on/off ratio
(goal >= 0.9), CPU per page (all threads
of the crawl process, its analysis worker processes and its label process: cores do not hide
cost; then the crawl's own process, with the seconds it spent collecting garbage, and the
label process apart, and the label process's serial work: its pages one after another,
without the template builds beside them, and what is left, the analysis workers'), the context
switches a page of all those processes (and how many were preemptions: more CPU-bound processes
than cores take turns, and each turn costs the caches) and peak memory
against the bare crawl (goal <= 2x; with worker processes, the crawl's peak plus the largest
child's). Last, for each run, what each process would allow with a core of its own: an
estimate from CPU per page (the crawl's process between the spider's opening and closing, the
label process's serial work, the analysis shared by the workers) against the bare crawl's
process, not a measurement; and what the whole crawl's CPU per page would allow with every
core of the machine busy from start to end (the bare crawl keeps one busy): where that is
below the goal, only less CPU per page reaches it.
``--modes ...,procs`` adds a run with VISDUP_ANALYSIS_PROCESSES=2, ``procs1`` one with 1;
``unfrozen`` one with VISDUP_GC_FREEZE = False (the crawl's process collecting as Python has it);
``off8`` a bare crawl with the ``CONCURRENT_ITEMS`` the add-on sets (8, against Scrapy's
100): the add-on's runs are then compared with it too, which leaves out what that setting
alone saves Scrapy.
``scrapy`` a bare crawl by Scrapy's own ``CrawlSpider`` and ``LinkExtractor``, as its
documentation writes a whole-site crawl (every link of every page yielded, the duplicate
filter dropping the repeats; visdup's site spider asks for each URL once): the add-on's runs
are then compared with it too. ``scrapyall`` is that same spider as a project adds visdup to
it: its rule's callback yields ``Page.from_response(response)`` and the add-on is on with its
defaults; against ``scrapy`` it is the add-on's own on / off for a spider a Scrapy user
writes.
``--cores N`` runs everything (the server, the crawls and every process they start) on the
first N of the cores this process may use, as ``taskset`` would: one machine then gives the
pace on 2, 4 or all of its cores, the figures comparable run to run. ``--db`` stores each
crawl in a PostgreSQL database of its own on that server (made and dropped around the crawl)
instead of a SQLite file; the server's own CPU is not counted.
visdup's bytecode is compiled first, as an installed package has it (an editable checkout
under PYTHONDONTWRITEBYTECODE has none, and its processes would compile every module as they
start). Every run uses the same server and settings; only VISDUP_ settings differ (and the
``CONCURRENT_ITEMS`` the add-on sets when visdup is on). Each crawl runs in its own process.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import SHARED, debian_docs, new_store_url
from visdup.demo.server import serve

#: The argument that makes a crawl Scrapy's own ``CrawlSpider`` with a ``LinkExtractor``.
PLAIN = "--plain-scrapy"
#: The argument that makes that spider yield a ``Page`` item for each response.
PAGES = "--plain-pages"

CRAWL = (
    f"PLAIN = {PLAIN!r}\nPAGES = {PAGES!r}\n"
    + """
import gc, json, resource, sys, time
collecting = {"s": 0.0, "at": 0.0}
def count_gc(phase, info):  # the crawl's process collecting garbage (its thread's CPU)
    if phase == "start":
        collecting["at"] = time.thread_time()
    else:
        collecting["s"] += time.thread_time() - collecting["at"]
gc.callbacks.append(count_gc)
from scrapy.crawler import AsyncCrawlerProcess
from visdup.cli.crawl import crawl_settings
from visdup.spiders.site import SiteSpider
import argparse
plain = PLAIN in sys.argv
pages = PAGES in sys.argv
if pages:
    sys.argv.remove(PAGES)
if plain:  # Scrapy's own whole-site crawl: every link of every page yielded
    sys.argv.remove(PLAIN)
    from urllib.parse import urlsplit
    from scrapy.linkextractors import LinkExtractor
    from scrapy.spiders import CrawlSpider, Rule
    from visdup.items import Page
    class PlainSpider(CrawlSpider):
        name = "plain"
        rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)
        def parse_page(self, response):  # a project's own page item, as the README shows
            if pages:
                yield Page.from_response(response)
args = argparse.Namespace(db=sys.argv[1], set=sys.argv[3:], any_domain=False)
settings = crawl_settings(args)
settings.update({"LOG_LEVEL": "WARNING", "ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 32,
                 "CONCURRENT_REQUESTS_PER_DOMAIN": 32, "HTTPCACHE_ENABLED": False})
process = AsyncCrawlerProcess(settings)
crawler = process.create_crawler(PlainSpider if plain else SiteSpider)
from scrapy import signals
marks = {}
def opened(spider): marks["opened"] = time.process_time()
def closed(spider, reason):  # before visdup's end
    marks["closed"] = time.process_time()
    marks["closed_at"] = time.perf_counter()
crawler.signals.connect(opened, signal=signals.spider_opened)
crawler.signals.connect(closed, signal=signals.spider_closed)
if plain:
    starts = sys.argv[2].split(",")
    process.crawl(crawler, start_urls=starts,
                  allowed_domains=sorted({urlsplit(u).hostname for u in starts}))
else:
    process.crawl(crawler, url=sys.argv[2])
t0 = time.perf_counter()
process.start()
ended = time.perf_counter()
elapsed = ended - t0
stats = crawler.stats.get_stats()
ru = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # analysis worker processes, when any
print(json.dumps({"elapsed": elapsed,
                  "end_wait": ended - marks.get("closed_at", ended),
                  "cpu": ru.ru_utime + ru.ru_stime + kids.ru_utime + kids.ru_stime,
                  "cpu_main": ru.ru_utime + ru.ru_stime,
                  "cpu_crawling": marks.get("closed", 0) - marks.get("opened", 0),
                  "gc": collecting["s"],
                  "workers": stats.get("visdup/analysis/processes", 0),
                  "peak_mb": ru.ru_maxrss / 1024 + kids.ru_maxrss / 1024,
                  "peak_main_mb": ru.ru_maxrss / 1024,
                  "switches": ru.ru_nvcsw + ru.ru_nivcsw + kids.ru_nvcsw + kids.ru_nivcsw,
                  "preempted": ru.ru_nivcsw + kids.ru_nivcsw,
                  "responses": stats.get("response_received_count", 0),
                  "items": stats.get("item_scraped_count", 0) + stats.get("item_dropped_count", 0),
                  "visdup_pages": stats.get("visdup/pages", 0),
                  "duplicates": stats.get("visdup/duplicates", 0),
                  "ted_calls": stats.get("visdup/ted_calls", 0),
                  "label_cpu": stats.get("visdup/label_process/cpu_ms", 0) / 1000,
                  "label_serial": stats.get("visdup/label_process/serial_cpu_ms", 0) / 1000}))
"""
)


MODES = {
    "visdup off": ["VISDUP_ENABLED=False"],
    # the bare crawl with the item concurrency the add-on sets: Scrapy's own share of its gain
    "visdup off, CONCURRENT_ITEMS 8": ["VISDUP_ENABLED=False", "CONCURRENT_ITEMS=8"],
    "structure only": ["VISDUP_CONTENT_ENABLED=False", "VISDUP_CLUSTER_ENABLED=False"],
    "structure + content": ["VISDUP_CLUSTER_ENABLED=False"],
    "all (default)": [],
    "all, 1 analysis process": ["VISDUP_ANALYSIS_PROCESSES=1"],
    "all, 2 analysis processes": ["VISDUP_ANALYSIS_PROCESSES=2"],
    # the crawl's process with Python's collector as it has it (nothing frozen)
    "all, nothing frozen": ["VISDUP_GC_FREEZE=False"],
    # a whole-site crawl as Scrapy's documentation writes it, without visdup's spider
    "Scrapy's CrawlSpider": ["VISDUP_ENABLED=False", PLAIN],
    # the same spider as a project adds visdup to it: a page item from each response, the
    # add-on on with its defaults (against the mode above, the add-on's own on / off)
    "Scrapy's CrawlSpider, visdup on": [PLAIN, PAGES],
}
#: Short names for --modes.
SHORT = {"off": "visdup off", "structure": "structure only", "content": "structure + content"}
SHORT["all"] = "all (default)"
SHORT["procs"] = "all, 2 analysis processes"
SHORT["procs1"] = "all, 1 analysis process"
SHORT["unfrozen"] = "all, nothing frozen"
SHORT["off8"] = "visdup off, CONCURRENT_ITEMS 8"
SHORT["scrapy"] = "Scrapy's CrawlSpider"
SHORT["scrapyall"] = "Scrapy's CrawlSpider, visdup on"


def crawl(db: str, url: str, *settings: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CRAWL, db, url, *settings],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def workers_cpu(res: dict) -> float:
    """CPU seconds of the analysis worker processes: the children's, less the label process's."""
    return max(0.0, res["cpu"] - res["cpu_main"] - res["label_cpu"])


def readability_site(into: Path) -> Path:
    """A folder that serves Readability's pages as one site: each page at ``/pNNN.html``, and
    ``/index.html`` linking them all."""
    pages = sorted((SHARED / "readability-pages" / "pages").glob("*/source.html"))
    if not pages:
        raise SystemExit("../shared/data/readability-pages is absent")
    into.mkdir(parents=True)
    links = []
    for n, page in enumerate(pages):
        (into / f"p{n:03d}.html").write_bytes(page.read_bytes())
        links.append(f'<li><a href="p{n:03d}.html">{page.parent.name}</a></li>')
    index = (
        "<html><head><title>Pages</title></head><body><ul>" + "".join(links) + "</ul></body></html>"
    )
    (into / "index.html").write_text(index, encoding="utf-8")
    return into


def compile_bytecode() -> None:
    """visdup's modules compiled as pip compiles an installed wheel (``make bytecode`` does
    it too): with PYTHONDONTWRITEBYTECODE an editable checkout has no bytecode, and every
    crawl's processes would compile the sources as they start, which no user's crawl pays."""
    package = Path(__file__).resolve().parent.parent / "visdup"
    if not compileall.compile_dir(str(package), quiet=1):
        raise SystemExit(f"cannot compile {package}")


def pin_cores(count: int) -> None:
    """This process, and every thread and process it starts from now on, on the first
    ``count`` cores it may use (Linux: the affinity of the calling thread, which new threads
    and child processes inherit)."""
    if not hasattr(os, "sched_setaffinity"):
        raise SystemExit("--cores needs os.sched_setaffinity (Linux)")
    allowed = sorted(os.sched_getaffinity(0))
    if not 0 < count <= len(allowed):
        raise SystemExit(f"--cores {count}: this process may use {len(allowed)} cores")
    os.sched_setaffinity(0, allowed[:count])
    print(f"pinned to cores {allowed[:count]} of {len(allowed)}", flush=True)


def main() -> None:
    compile_bytecode()
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--which", default="python,postgres")
    ap.add_argument("--modes", default="off,structure,content,all")
    ap.add_argument("--cores", type=int, default=0, help="run on the first N cores (0: all)")
    ap.add_argument("--db", default=None, help="a PostgreSQL server's URL (default: SQLite)")
    args = ap.parse_args()
    if args.cores:
        pin_cores(args.cores)  # before the server's thread and the crawls start
    modes = {SHORT[m]: MODES[SHORT[m]] for m in ["off", *args.modes.split(",")]}
    which = args.which.split(",")
    extra: list[str] = []
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        if which == ["readability"]:
            common = readability_site(Path(tmp) / "site")
            extra = ["DEPTH_LIMIT=1"]
            server = stack.enter_context(serve(common))
            urls = server.url_for("/index.html")
        else:
            roots = {w: debian_docs(w) for w in which}
            common = Path(*Path(next(iter(roots.values()))).parts[:-2])  # .../usr/share/doc
            server = stack.enter_context(serve(common))
            urls = ",".join(
                server.url_for("/" + str(root.relative_to(common)) + "/index.html")
                for root in roots.values()
            )
        results: dict[str, list[dict]] = {name: [] for name in modes}
        for r in range(args.rounds):
            for mode, settings in modes.items():
                if args.db is None:
                    db = f"sqlite:///{tmp}/{r}-{len(results[mode])}-{abs(hash(mode))}.sqlite3"
                    res = crawl(db, urls, *settings, *extra)
                else:
                    with new_store_url(args.db) as db:
                        res = crawl(db, urls, *settings, *extra)
                res["pages_per_s"] = res["responses"] / res["elapsed"]
                results[mode].append(res)
                print(
                    f"round {r} {mode:<28}: {res['responses']} responses in "
                    f"{res['elapsed']:.1f} s = {res['pages_per_s']:.1f} pages/s "
                    f"({res['end_wait']:.2f} s of it after the spider closed), "
                    f"{res['cpu'] / max(1, res['responses']) * 1e3:.1f} ms CPU per page "
                    f"({res['cpu_main'] / max(1, res['responses']) * 1e3:.1f} in the crawl's "
                    f"process, {res['gc']:.2f} s of it collecting garbage"
                    + (
                        f", {res['label_cpu'] / max(1, res['responses']) * 1e3:.1f} in the"
                        " label process, "
                        f"{res['label_serial'] / max(1, res['responses']) * 1e3:.1f}"
                        " of it its serial work, "
                        f"{workers_cpu(res) / max(1, res['responses']) * 1e3:.1f}"
                        " in the analysis workers"
                        if res["label_cpu"]
                        else ""
                    )
                    + "), "
                    f"{res['switches'] / max(1, res['responses']):.0f} context switches a page "
                    f"({res['preempted'] / max(1, res['responses']):.0f} of them preemptions), "
                    f"peak {res['peak_mb']:.0f} MB"
                    + (
                        f" ({res['peak_main_mb']:.0f} the crawl's process)"
                        if res["peak_mb"] > res["peak_main_mb"] + 1
                        else ""
                    )
                    + (
                        f"  ({res['visdup_pages']} labelled, {res['duplicates']} duplicates, "
                        f"{res['ted_calls']} TED calls)"
                        if res["visdup_pages"]
                        else ""
                    ),
                    flush=True,
                )
        bares = [m for m in ("visdup off", SHORT["off8"], SHORT["scrapy"]) if m in modes]
        measured = [m for m in modes if m not in bares]
        if args.rounds > 1:
            # the machine's pace drifts between runs: each round's own ratio, off and on run
            # back to back, and their median, read steadier than the best of each mode
            for bare_mode in bares:
                for mode in measured:
                    ratios = sorted(
                        on["pages_per_s"] / off["pages_per_s"]
                        for on, off in zip(results[mode], results[bare_mode], strict=True)
                    )
                    print(
                        f"per round {mode} / {bare_mode.removeprefix('visdup ')}: "
                        + ", ".join(f"{r:.2f}" for r in ratios)
                        + f"; median {statistics.median(ratios):.2f}"
                    )
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        cores = cores or 1
        # What each process would allow with a core of its own (an estimate from CPU per page,
        # not a measurement): the crawl's process while it crawls, the label process's serial
        # work, the analysis shared by its workers, each against the bare crawl's process.
        for bare_mode in bares:
            for mode in measured:
                for on, off in zip(results[mode], results[bare_mode], strict=True):
                    n = max(1, on["responses"])
                    bare = off["cpu_crawling"] / max(1, off["responses"])
                    own = on["cpu_crawling"] / n
                    label = on["label_serial"] / n
                    workers = on["workers"]
                    analysis = workers_cpu(on) / n / max(1, workers)
                    parts = {"the crawl's process": own, "the label process's serial work": label}
                    if workers:
                        parts[f"the analysis over {workers} workers"] = analysis
                    slowest = max(parts, key=parts.__getitem__)
                    print(
                        f"{mode}, a core for each process (estimate): "
                        + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in parts.items())
                        + f" ms per page against the bare crawl's process {bare * 1e3:.1f}"
                        f" ({bare_mode.removeprefix('visdup ')}):"
                        f" on / off <= {bare / parts[slowest]:.2f} ({slowest})"
                    )
                    # the other limit: all the crawl's CPU shared by the cores its processes can
                    # fill (one each: the crawl's, the label process, the workers), every one of
                    # them busy from start to end; the bare crawl keeps one busy
                    whole = on["cpu"] / n
                    bare_whole = off["cpu"] / max(1, off["responses"])
                    busy = min(cores, workers + 2)
                    print(
                        f"{mode}, {busy} of {cores} cores busy throughout (estimate): the"
                        f" whole crawl's {whole * 1e3:.1f} ms CPU per page against the bare"
                        f" crawl's {bare_whole * 1e3:.1f}: on / off <="
                        f" {busy * bare_whole / whole:.2f}"
                    )
        best = {m: max(x["pages_per_s"] for x in v) for m, v in results.items()}
        peak = {m: min(x["peak_mb"] for x in v) for m, v in results.items()}
        for bare_mode in bares:
            base = best[bare_mode]
            for mode in measured:
                print(
                    f"pages/s {mode} / {bare_mode.removeprefix('visdup ')}: {best[mode]:.1f} /"
                    f" {base:.1f} = {best[mode] / base:.2f};"
                    f" peak memory {peak[mode] / peak[bare_mode]:.2f}x"
                )
        print("goals (add-on on / off): throughput >= 0.9, peak memory <= 2x")


if __name__ == "__main__":
    time.sleep(0)
    main()
