"""A page cannot take the crawl's processes past a known size.

A 30 MB page of ten million ``<p>`` (under the 32 MiB download limit) once took one analysis
worker to 4.4 GB. The crawl runs here as ``visdup crawl`` in a process of its own, and the
resident memory of that process and all its descendants (the analysis workers, the label
process) is summed every 50 ms from /proc: Scrapy's memory extension sees only the crawl's
own process.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import lxml.etree
import pytest

from tests.crawling import article, listing, write_site
from visdup.dedup.analysis import OUT_OF_MEMORY
from visdup.demo.server import serve
from visdup.page.parse import elements_over

#: The bound the whole process tree stays under while it crawls the huge page.
TREE_BOUND = 1_500_000_000
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _children() -> dict[int, list[int]]:
    """Each live process's children, from /proc."""
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(name))
    return tree


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants, summed."""
    children = _children()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        try:
            resident = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        total += resident * PAGE_SIZE
    return total


class TreeSampler:
    """The peak of :func:`tree_rss` over a process's life, sampled every 50 ms."""

    def __init__(self, process: subprocess.Popen[str]):
        self.process = process
        self.peak = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self.process.poll() is None:
            self.peak = max(self.peak, tree_rss(self.process.pid))
            time.sleep(0.05)

    def join(self) -> int:
        self._thread.join()
        return self.peak


def huge_site(root: Path, count: int = 10_000_000) -> Path:
    """An index, three ordinary pages, ``/huge.html`` and ``/huge2.html``: ``count`` empty
    ``<p>`` each (30 MB), and ``/wide.html`` (linked from nowhere): 400,000 elements (16 MB),
    under the cap."""
    links = [("/huge.html", "huge"), ("/huge2.html", "huge 2")]
    pages = {"index.html": listing("Home", links + [(f"/a{i}.html", f"A{i}") for i in range(3)])}
    for i in range(3):
        pages[f"a{i}.html"] = article(
            f"Article {i}", [f"Sentence {j} of article {i}, long enough." for j in range(5)], []
        )
    write_site(root, pages)
    huge = b"<p>" * count
    (root / "huge.html").write_bytes(huge)
    (root / "huge2.html").write_bytes(huge)
    rows = "".join(
        f"<div><p>Sentence number {i} with a few words.</p></div>" for i in range(200_000)
    )
    (root / "wide.html").write_text(f"<html><body>{rows}</body></html>")
    return root


ORDINARY = ("", "index.html", "a0.html", "a1.html", "a2.html")


def crawl_tree(
    urls: list[str], db: Path, *settings: str
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``visdup crawl`` of ``urls`` into ``db``: its result and its process tree's peak RSS."""
    args = [sys.executable, "-m", "visdup", "crawl", *urls, "--db", f"sqlite:///{db}"]
    for setting in settings:
        args += ["-s", setting]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = TreeSampler(process)
    try:
        out, err = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    peak = sampler.join()
    return subprocess.CompletedProcess(args, process.returncode, out, err), peak


@pytest.fixture
def huge(tmp_path) -> Iterator[str]:
    with serve(huge_site(tmp_path / "site")) as handle:
        yield handle.url_for("/")


def stored(db: Path) -> dict[str, str | None]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT url, problem FROM visdup_pages").fetchall()
    return {url.rsplit("/", 1)[1]: problem for url, problem in rows}


def test_the_element_count_before_parsing_is_the_parsed_trees():
    """Comments, a doctype, end tags and a processing instruction are not counted; a body
    under twice the cap is not scanned."""
    rows = "".join(f"<tr><td>{i}</td><td><a href='/{i}'>x</a></td></tr>" for i in range(2000))
    page = "<!DOCTYPE html><html><head><title>t</title><?pi x?></head><body><!-- c -->"
    page += f"<table>{rows}</table></body></html>"
    parsed = sum(1 for _ in lxml.etree.fromstring(page, lxml.etree.HTMLParser()).iter("*"))
    assert parsed == 5 + 4 * 2000  # html head title body table, and a row's tr td td a
    assert elements_over(page, 100) == elements_over(page.encode(), 100) == parsed
    for body in (page, page.encode()):  # at the cap and just under it; past every ``<``
        assert elements_over(body, parsed) is None
        assert elements_over(body, parsed - 1) == parsed
        assert elements_over(body, page.count("<")) is None
    assert elements_over(page, len(page) // 2) is None
    assert elements_over(page, 0) is None


def stat(log: str, name: str) -> int | None:
    """A stat from the crawl's closing dump in its log."""
    found = re.search(rf"'{re.escape(name)}': (\d+)", log)
    return int(found[1]) if found else None


def test_pages_of_ten_million_elements_keep_the_process_tree_bounded(huge, tmp_path):
    """Two pages over the element cap at once: neither is parsed, in a worker or in the
    crawl's process (for its links); each is stored with its problem."""
    result, peak = crawl_tree([huge], tmp_path / "v.db")
    print(f"peak summed RSS of the crawl's process tree: {peak / 1e6:.0f} MB")
    assert result.returncode == 0, result.stderr[-3000:]
    pages = stored(tmp_path / "v.db")
    assert set(pages) == {*ORDINARY, "huge.html", "huge2.html"}
    for name in ("huge.html", "huge2.html"):
        assert pages[name] == "oversized: about 10000000 elements, more than VISDUP_MAX_ELEMENTS"
    assert all(pages[name] is None for name in ORDINARY)
    assert stat(result.stderr, "visdup/pages_over_element_cap") == 2
    assert stat(result.stderr, "visdup/problems/oversized") == 2
    assert peak < TREE_BOUND, f"{peak / 1e6:.0f} MB"


def test_a_page_past_the_workers_memory_is_a_problem_not_a_dead_worker(huge, tmp_path):
    """A page under the element cap whose analysis needs more memory than a worker may take:
    stored with its problem, and the worker that ran out takes the next pages."""
    urls = [huge + name for name in ("wide.html", "a0.html", "a1.html", "a2.html")]
    result, _peak = crawl_tree(
        urls,
        tmp_path / "v.db",
        "VISDUP_ANALYSIS_MEMORY_MB=250",
        "VISDUP_ANALYSIS_PROCESSES=1",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    pages = stored(tmp_path / "v.db")
    assert pages["wide.html"] == OUT_OF_MEMORY
    assert all(pages[name] is None for name in ("a0.html", "a1.html", "a2.html"))
    assert stat(result.stderr, "visdup/analysis/out_of_memory") == 1
    assert stat(result.stderr, "visdup/analysis/restarts") is None, "no worker died"


def test_an_analysis_worker_imports_nothing_heavy():
    """What a worker imports lives in the address space VISDUP_ANALYSIS_MEMORY_MB bounds:
    numpy alone reserves more than a hundred megabytes of it, and a store or a reactor has no
    work there."""
    heavy = ("numpy", "sqlalchemy", "scrapy", "twisted")
    assert _loaded("visdup.dedup.analysis, visdup.runtime.workers", heavy) == []


def _loaded(modules: str, heavy: tuple[str, ...]) -> list[str]:
    """Which of ``heavy`` a fresh interpreter holds once it has imported ``modules``."""
    code = (
        f"import sys, json, {modules}\n"
        f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_crawls_process_loads_no_labelling():
    """With a label process (the default), the crawl's process never labels: the labelling,
    its indexes and numpy are a tenth of a second before its spider opens, and tens of
    megabytes, that only the label process needs."""
    modules = (
        "scrapy.crawler, visdup.addon, visdup.pipelines, visdup.context, visdup.middlewares, "
        "visdup.scheduler, visdup.spiders.site, visdup.cli.crawl, visdup.runtime.labeller, "
        "visdup.runtime.label_process"
    )
    heavy = ("numpy", "visdup.dedup.labelling", "visdup.dedup.label", "visdup.index")
    assert _loaded(modules, heavy) == []
