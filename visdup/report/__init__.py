"""What a crawl found, for people: summaries, URL patterns, per-page table, HTML report."""

#: Rows of the HTML report's pages table (``report --rows``); ``--pages FILE`` has them all.
#: Here, not in :mod:`visdup.report.html`, so the command line reads it without the renderer.
MAX_ROWS = 500
