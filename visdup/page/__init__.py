"""Fetch → parse: bytes into a parsed document (charset, limits, honest problems), and local files
as pages.
"""
