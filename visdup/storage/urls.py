"""URLs as the store handles them: page and link URLs in one canonical form, and database URLs
shown without their password.

A page is stored once and a link is looked up against stored pages, so both must be written the
same way: ``/a.html#top`` and ``/a.html`` are one page, and so are ``?b=2&a=1`` and ``?a=1&b=2``.
Without one form a resumed crawl fetched 65 pages it already had (9,793 of 10,334 stored links
carried a ``#fragment``).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url


@lru_cache(maxsize=65536)
def canonical_url(url: str) -> str:
    """w3lib's canonical form without the fragment; names that are not URLs (files) unchanged.

    Cached: a site's pages link to the same menus, so most links were canonicalised before.
    """
    if "://" not in url:
        return url
    try:
        return canonicalize_url(url, keep_fragments=False)
    except (ValueError, UnicodeError):
        return url.split("#", 1)[0]


def origin(url: str) -> str:
    """``scheme://host:port`` of a URL, the port always written (a crawl's scope is per port)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + (f":{port}" if port is not None else "")


def crawl_key(start_urls: Iterable[str], spider: str) -> str:
    """The crawl a run belongs to: its start URLs' origins, else its spider's name.

    Resume continues the crawl of the same sites only: two crawls of different sites (or of
    two ports of one host) into one store keep their frontiers apart.
    """
    origins = sorted({origin(url) for url in start_urls if "://" in url})
    return " ".join(origins)[:500] if origins else f"spider:{spider}"


#: Query parameters that carry a secret in libpq-style URLs (``?password=...``).
_SECRET_PARAMS = frozenset({"password", "passwd", "sslpassword"})


def mask_password(url: str) -> str:
    """A database URL without its password, for messages and logs (``user:***@host``)."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        return "<unparsable database URL>" if "@" in text else text
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        user = credentials.split(":", 1)[0]
        netloc = f"{user}:***@{host}" if ":" in credentials else netloc
    query = "&".join(
        f"{key}=***" if key.lower() in _SECRET_PARAMS else f"{key}{sep}{value}"
        for key, sep, value in (item.partition("=") for item in parts.query.split("&") if item)
    )
    if netloc == parts.netloc and query == parts.query:
        return text
    rebuilt = f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
    return rebuilt + (f"#{parts.fragment}" if parts.fragment else "")
