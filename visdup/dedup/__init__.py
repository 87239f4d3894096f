"""One analysis per page, the channels that find its near-duplicates, and the labeller that decides
and stores its verdict.
"""
