"""Crawl progress as a Scrapy extension: pages, duplicates, templates and rate while it runs.

On a terminal one line on stderr is rewritten in place a few times a second; anywhere else
(a log file, a pipe, a CI job) an INFO line is logged every ``LOGSTATS_INTERVAL`` seconds, as
Scrapy's own LogStats does. When the spider opens it also records the settings that shape
verdicts as ``visdup/settings/<NAME>`` stats, which the run's row keeps, so a report says what
the verdicts were computed with.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import IO, TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from visdup import config
from visdup.report.data import SETTING_STAT, VERDICT_SETTINGS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Seconds between two rewrites of the terminal line.
TERMINAL_INTERVAL = 0.5


class Progress:
    """Shows how far a crawl has got; records its verdict settings in the run's stats."""

    def __init__(self, crawler: Crawler, stream: IO[str] | None = None):
        self.crawler = crawler
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = (
            TERMINAL_INTERVAL if self.live else crawler.settings.getfloat("LOGSTATS_INTERVAL", 60.0)
        )
        self.task: Any = None
        self.started = time.monotonic()
        self._width = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Progress:
        if not config.read(crawler.settings, "VISDUP_ENABLED"):
            raise NotConfigured
        ext = cls(crawler)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Any) -> None:
        from visdup.config import defaults

        known = defaults()
        for name in VERDICT_SETTINGS:
            value = self.crawler.settings.get(name, known.get(name))
            if value is not None:
                self.crawler.stats.set_value(SETTING_STAT + name, value)
        self.started = time.monotonic()
        if self.interval > 0:
            from scrapy.utils.asyncio import create_looping_call

            self.task = create_looping_call(self.show)
            self.task.start(self.interval, now=False)

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
        if self.live:
            self.show()
            self.stream.write("\n")
            self.stream.flush()

    def line(self) -> str:
        stats = self.crawler.stats
        pages = int(stats.get_value("visdup/pages", 0) or 0)
        duplicates = int(stats.get_value("visdup/duplicates", 0) or 0)
        templates = int(stats.get_value("visdup/clusters", 0) or 0)
        elapsed = max(time.monotonic() - self.started, 1e-6)
        return (
            f"visdup: {pages} pages, {duplicates} duplicates, {templates} templates, "
            f"{pages / elapsed:.1f} pages/s, {elapsed:.0f} s"
        )

    def show(self) -> None:
        text = self.line()
        if self.live:
            pad = " " * max(0, self._width - len(text))
            self.stream.write("\r" + text + pad)
            self.stream.flush()
            self._width = len(text)
        else:
            logger.info("%s", text)
