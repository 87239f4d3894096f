"""A page's text: invisible nodes, block weights and the main content (seed 001), then its layered
text fingerprint (seed 002).
"""
