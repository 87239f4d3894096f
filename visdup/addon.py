"""One line of setup: ``ADDONS = {"visdup.Addon": 100}``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from visdup.config import SCRAPY_DEFAULTS, defaults

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

PIPELINES = {
    "visdup.pipelines.TermPipeline": 200,
    "visdup.pipelines.ClusterPipeline": 220,
    "visdup.pipelines.ContentPipeline": 250,
    "visdup.pipelines.LabelPipeline": 300,
}
SPIDER_MIDDLEWARES = {"visdup.middlewares.NoFollowDuplicatesMiddleware": 950}
#: Crawl progress, and the verdict settings recorded in the run's stats for the report.
EXTENSIONS = {"visdup.progress.Progress": 500}


class Addon:
    """Installs visdup's defaults, pipelines and spider middleware into a Scrapy project."""

    def update_settings(self, settings: BaseSettings) -> None:
        for name, value in defaults().items():
            settings.set(name, value, priority="addon")
        for name, value in SCRAPY_DEFAULTS.items():
            settings.set(name, value, priority="addon")
        if not settings.getbool("VISDUP_ENABLED", True):
            return
        settings["ITEM_PIPELINES"].update(PIPELINES)
        settings["SPIDER_MIDDLEWARES"].update(SPIDER_MIDDLEWARES)
        settings["EXTENSIONS"].update(EXTENSIONS)
