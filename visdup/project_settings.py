"""Settings of the project that ships with visdup (``scrapy crawl site`` in this checkout)."""

from __future__ import annotations

BOT_NAME = "visdup"
SPIDER_MODULES = ["visdup.spiders"]
NEWSPIDER_MODULE = "visdup.spiders"
ADDONS = {"visdup.Addon": 100}
ROBOTSTXT_OBEY = True
TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
CONCURRENT_REQUESTS_PER_DOMAIN = 16
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
