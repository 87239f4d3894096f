"""The content channel: what a reader sees, the page's main content, its text fingerprints.

css → visibility (what is never seen) → blocks (paragraphs) → weights → main (the article,
its title) → textprint (layered fingerprints of seed 002).
"""

from visdup.content.main import MainContent, extract, main_content
from visdup.content.titles import page_title
from visdup.content.visibility import remove_invisible

__all__ = ["MainContent", "extract", "main_content", "page_title", "remove_invisible"]
