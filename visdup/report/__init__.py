"""What a crawl found, for people: summaries, URL patterns, the per-page table and the HTML report.
"""
