"""Python's cycle collector in the crawl's process, as a Scrapy extension.

What the process holds as the spider opens (its modules and classes, Scrapy's engine and
components, visdup's) lives as long as the crawl, and every full collection of the crawl walks
all of it again: the few full collections of a crawl cost the crawl's process more than all
its other collections together (``docs/performance.md``, "The crawl's own collector"). So it is
moved out of the collector's sight as the spider opens (``gc.freeze``) and given back as the
spider closes (``gc.unfreeze``): a cycle among those objects that became garbage meanwhile is
then collected as usual. Objects made during the crawl are collected as before.

A process that froze objects of its own before the first crawl opened keeps them frozen: the
extension then freezes too, and never unfreezes. Several crawls in one process freeze once,
and unfreeze when the last of them closes.
"""

from __future__ import annotations

import gc
import logging
import threading
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from visdup import config

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

_lock = threading.Lock()
#: Open crawls of this process that froze, and whether the first found objects frozen already.
_state = {"open": 0, "theirs": False}


class Collector:
    """Freezes what the process holds as a spider opens; unfreezes it as the spider closes."""

    def __init__(self) -> None:
        self._frozen = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Collector:
        settings = crawler.settings
        if not config.read(settings, "VISDUP_ENABLED") or not config.read(
            settings, "VISDUP_GC_FREEZE"
        ):
            raise NotConfigured
        ext = cls()
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Any) -> None:
        if self._frozen:
            return
        self._frozen = True
        with _lock:
            if _state["open"] == 0:
                _state["theirs"] = gc.get_freeze_count() > 0
                gc.freeze()
                frozen = gc.get_freeze_count()
                logger.debug("visdup: %d objects out of the collector's sight", frozen)
            _state["open"] += 1

    def spider_closed(self, spider: Any) -> None:
        if not self._frozen:
            return
        self._frozen = False
        with _lock:
            _state["open"] -= 1
            if _state["open"] == 0 and not _state["theirs"]:
                gc.unfreeze()
