"""What a crawl found, for people: summaries, URL patterns, per-page table, HTML report."""
