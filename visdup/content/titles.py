"""What a page is called: its own title, without the site's banner.

A ``<title>`` usually joins the page's name and the site's ("os — … — Python 3.11
documentation"); a site banner may even sit in an ``<h1>`` that every page repeats.
"""

from __future__ import annotations

import re
from typing import Any

_SPACE = re.compile(r"\s+")


def page_title(root: Any) -> str | None:
    """The page's title: an <h1> the <title> contains, else og:title, <title>, the first <h1>."""
    og = root.xpath("//meta[@property='og:title' or @name='og:title']/@content")
    h1s = [_SPACE.sub(" ", h.text_content()).strip() for h in root.iter("h1")]
    h1s = [h for h in h1s if h]
    titles = root.xpath("//title")
    text = _SPACE.sub(" ", titles[0].text_content()).strip() if titles else ""
    for h in h1s:
        if text and h.lower() in text.lower():
            return h
    if og and og[0].strip():
        return _SPACE.sub(" ", og[0]).strip()
    if text:
        return text
    return h1s[0] if h1s else None
