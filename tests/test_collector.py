"""The crawl's process and Python's cycle collector: what the process holds as the spider
opens is out of the collector's sight while it crawls, and back in it once it closes."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from scrapy import signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.crawling import article, crawl_settings
from tests.sites import serve_routes
from visdup.collector import Collector
from visdup.spiders.site import SiteSpider


@pytest.fixture(autouse=True)
def _nothing_frozen():
    """Each test starts and leaves the process with no frozen objects."""
    gc.unfreeze()
    yield
    assert gc.get_freeze_count() == 0, "a test left objects frozen"


def _site(path: str, _query: Any) -> tuple[int, str] | None:
    pages = {f"/p{i}.html": f"Page {i}" for i in range(6)}
    if path == "/":
        links = list(pages)
        return 200, article("Home", ["An index of the pages of this site."], links)
    if path in pages:
        words = [f"{pages[path]} says a thing of its own, in its own words, at some length."] * 3
        return 200, article(pages[path], words, ["/"])
    return None


async def _frozen_while_crawling(tmp_path: Any, **settings: Any) -> list[int]:
    """The collector's frozen objects counted as each response comes in."""
    seen: list[int] = []
    db = f"sqlite:///{tmp_path / 'v.sqlite3'}"
    with serve_routes(_site) as base:
        crawler = get_crawler(SiteSpider, crawl_settings(db, LOG_LEVEL="WARNING", **settings))

        def count(**_kw: Any) -> None:  # held here: signals keep weak references
            seen.append(gc.get_freeze_count())

        crawler.signals.connect(count, signal=signals.response_received)
        await crawler.crawl_async(url=base + "/")
    assert crawler.stats.get_value("visdup/pages") == 7
    return seen


@deferred_f_from_coro_f
async def test_a_crawl_freezes_what_its_process_holds_and_gives_it_back(tmp_path):
    seen = await _frozen_while_crawling(tmp_path)
    assert len(seen) >= 7
    assert min(seen) > 10_000  # the modules and components alive as the spider opened
    assert gc.get_freeze_count() == 0  # unfrozen as the spider closed


@deferred_f_from_coro_f
async def test_visdup_gc_freeze_false_leaves_the_collector_alone(tmp_path):
    seen = await _frozen_while_crawling(tmp_path, VISDUP_GC_FREEZE=False)
    assert len(seen) >= 7 and set(seen) == {0}


def test_crawls_of_one_process_freeze_once_and_unfreeze_after_the_last():
    one, two = Collector(), Collector()
    one.spider_opened(None)
    frozen = gc.get_freeze_count()
    assert frozen > 0
    two.spider_opened(None)
    one.spider_closed(None)
    assert gc.get_freeze_count() >= frozen  # the second crawl still runs
    one.spider_closed(None)  # a second close of one crawl changes nothing
    assert gc.get_freeze_count() >= frozen
    two.spider_closed(None)
    assert gc.get_freeze_count() == 0


def test_objects_the_process_froze_itself_stay_frozen():
    gc.freeze()
    theirs = gc.get_freeze_count()
    crawl = Collector()
    crawl.spider_opened(None)
    crawl.spider_closed(None)
    assert gc.get_freeze_count() >= theirs
    gc.unfreeze()
