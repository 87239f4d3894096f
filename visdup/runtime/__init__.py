"""The crawl's processes: analysis workers, the label process, and their early start."""
