"""One line of setup: ``ADDONS = {"visdup.Addon": 100}``.

The add-on only fills in what the project left unset: every value goes in at add-on
priority (below the project's, ``-s`` and the spider's), and components are added with
Scrapy's ``setdefault_in_component_priority_dict``, so a project that lists a visdup
component, at another priority or as ``None`` to switch it off, keeps its own choice.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.utils.misc import load_object

from visdup.config import SCRAPY_DEFAULTS, SCRAPY_DEFAULTS_ON, check, defaults, options
from visdup.errors import ConfigError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

PIPELINES = {
    "visdup.pipelines.TermPipeline": 200,
    "visdup.pipelines.ClusterPipeline": 220,
    "visdup.pipelines.ContentPipeline": 250,
    "visdup.pipelines.LabelPipeline": 300,
}
SPIDER_MIDDLEWARES = {
    "visdup.middlewares.NoFollowDuplicatesMiddleware": 950,
    "visdup.middlewares.RecordsMiddleware": 960,
}
#: Before robots.txt (100): a stored page costs no request at all. Redirects are seen before
#: RedirectMiddleware (600) follows them, other answers after RetryMiddleware's (550) last try.
DOWNLOADER_MIDDLEWARES = {
    "visdup.frontier.SkipStoredMiddleware": 50,
    "visdup.responses.ResponsesMiddleware": 540,
    "visdup.responses.RedirectsMiddleware": 650,
}
#: The crawl's wiring (first: the components find it), crawl progress and the verdict settings
#: recorded in the run's stats for the report, and the process's long-lived objects kept out of
#: Python's cycle collector while it crawls.
EXTENSIONS = {
    "visdup.context.CrawlContext": 0,
    "visdup.progress.Progress": 500,
    "visdup.collector.Collector": 600,
}
#: The shared Redis frontier, when VISDUP_FRONTIER_URL is set (a project's own SCHEDULER wins).
SCHEDULER = "visdup.scheduler.FrontierScheduler"


class Addon:
    """Installs visdup's defaults, pipelines and spider middlewares into a Scrapy project."""

    def __init__(self, crawler: Crawler | None = None):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Addon:
        """The add-on is made as Scrapy begins to apply the crawl's settings: the crawl's
        worker processes and label process start here (:mod:`visdup.runtime.early`), so they
        import what they need while Scrapy builds the crawl's engine and components."""
        addon = cls(crawler)
        addon._start_processes(crawler.settings)
        return addon

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in {**defaults(), **SCRAPY_DEFAULTS}.items():
            # set() keeps a value of higher priority: the project's, -s, the spider's
            settings.set(name, value, priority="addon")
        try:
            enabled = check("VISDUP_ENABLED", settings.get("VISDUP_ENABLED"))
        except ConfigError:
            enabled = True  # the components refuse the bad value when the crawl opens
        if not enabled:
            return
        for name, value in SCRAPY_DEFAULTS_ON.items():
            settings.set(name, value, priority="addon")
        if settings.get("VISDUP_FRONTIER_URL"):
            settings.set("SCHEDULER", SCHEDULER, priority="addon")
            if settings.get("SCHEDULER") not in (SCHEDULER, load_object(SCHEDULER)):
                logger.warning(
                    "visdup: VISDUP_FRONTIER_URL is set but the project's SCHEDULER %s is kept: "
                    "this process does not share the frontier",
                    settings.get("SCHEDULER"),
                )
        for setting, components in (
            ("ITEM_PIPELINES", PIPELINES),
            ("SPIDER_MIDDLEWARES", SPIDER_MIDDLEWARES),
            ("DOWNLOADER_MIDDLEWARES", DOWNLOADER_MIDDLEWARES),
            ("EXTENSIONS", EXTENSIONS),
        ):
            for path, priority in components.items():
                settings.setdefault_in_component_priority_dict(setting, load_object(path), priority)

    def _start_processes(self, settings: BaseSettings) -> None:
        """Start the crawl's processes from its settings as they stand (the project's, the
        spider's, ``-s``; visdup's defaults for the rest). Visdup switched off, or a setting
        that does not check, starts nothing here; the components refuse a bad value when the
        crawl opens."""
        if self.crawler is None:
            return
        from visdup.runtime.early import start_early

        try:
            opts = options(settings)
            if opts.enabled:
                start_early(self.crawler, opts)
        except ConfigError:
            return
