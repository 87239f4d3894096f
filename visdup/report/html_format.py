"""How the HTML report writes a value: a URL (and when it is a link), a number, a time.

Every value goes through :mod:`visdup.report.markup`; a URL becomes a link only when it is
http(s), so that nothing a crawled page wrote can run in the report.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from urllib.parse import urlsplit

from visdup.report.markup import Safe, tag


def shortener(origin: str) -> Callable[[str], str]:
    """A URL as shown: from its path on when it is on ``origin`` (said once, at the top)."""
    size = len(origin)

    def short(url: str) -> str:
        if origin and url.startswith(origin) and url[size : size + 1] in ("/", "?", ""):
            return url[size:] or "/"
        return url

    return short


def link(url: str | None, short: Callable[[str], str] = str, cls: str | None = "url") -> Safe:
    """A URL as text, and as a link only when it is http(s): no javascript: or data: links.

    Links open a new tab (``<base target>``), which browsers give no opener; the page sends no
    referrer (its ``referrer`` policy). ``cls``: the link's class (None where a table's CSS
    sets its type: thousands of rows add up).
    """
    if not url:
        return Safe("")
    if urlsplit(url).scheme in {"http", "https"}:
        return tag("a", {"href": url, "class": cls}, short(url))
    return tag("span", {"class": "url"}, url)


def num(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def duration(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "unfinished" if start is not None else ""
    seconds = (end - start).total_seconds()
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def moment(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else ""
