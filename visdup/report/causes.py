"""Why a copy's URL exists: the causes an auditor fixes, read from the two URLs alone.

A copy that only differs from its original by tracking parameters is fixed in one place
(the links that add them, or a canonical), a print copy in another: naming the cause turns a
list of pairs into a handful of fixes. The cause is read from the URLs, never from the pages,
so it is the same whatever order the crawl met them in.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

TRACKING = "tracking parameters"
SESSION = "session id"
PRINT = "print copy"
SLASH = "trailing slash"
CASE = "letter case"
ORDER = "parameter order"
INDEX = "index file"
PARAMETERS = "other parameters"
PROTOCOL = "protocol or host"
ELSEWHERE = "another path"

#: Every cause, in the order the report lists them.
CAUSES = (TRACKING, SESSION, PRINT, SLASH, CASE, ORDER, INDEX, PARAMETERS, PROTOCOL, ELSEWHERE)

_TRACKING = re.compile(
    r"^(utm_[a-z]+|gclid|fbclid|msclkid|dclid|yclid|mc_[ce]id|_ga|_gl|ref|source|campaign)$", re.I
)
_SESSION = re.compile(r"^(jsessionid|phpsessid|sid|sessionid|session_id|aspsessionid\w*|s)$", re.I)
_PRINT = re.compile(r"(^|[/_.-])print([/_.-]|$)|[?&](print|format|view)=print", re.I)
_INDEX = re.compile(r"/(index|default)\.(html?|php|aspx?)$", re.I)


@lru_cache(maxsize=1 << 16)
def duplicate_cause(url: str, original: str) -> str:
    """The cause of a copy's URL next to its original's (one of :data:`CAUSES`).

    Cached: each section of a report (groups, roll-up, table, overview) asks for the same pairs.
    """
    a, b = urlsplit(original), urlsplit(url)
    if (a.scheme, a.netloc.lower()) != (b.scheme, b.netloc.lower()):
        return PROTOCOL
    path_a, path_b = _session_free(a.path), _session_free(b.path)
    if path_b != b.path and path_a == path_b:
        return SESSION
    qa, qb = parse_qsl(a.query, keep_blank_values=True), parse_qsl(b.query, keep_blank_values=True)
    if path_a == path_b and qa != qb:
        return _query_cause(qa, qb)
    if path_a == path_b:
        return ELSEWHERE
    if _PRINT.search(b.path + "?" + b.query) and not _PRINT.search(a.path + "?" + a.query):
        return PRINT
    if path_a.rstrip("/") == path_b.rstrip("/"):
        return SLASH
    if path_a.lower() == path_b.lower():
        return CASE
    if _INDEX.sub("/", path_a) == _INDEX.sub("/", path_b):
        return INDEX
    return ELSEWHERE


def _session_free(path: str) -> str:
    """The path without a ``;jsessionid=…`` style parameter."""
    return re.sub(r";[a-z_]*sess[a-z_]*id=[^/;?]*", "", path, flags=re.I)


def _query_cause(qa: list[tuple[str, str]], qb: list[tuple[str, str]]) -> str:
    if sorted(qa) == sorted(qb):
        return ORDER
    added = {k for k, _ in qb} ^ {k for k, _ in qa}
    if sorted(set(qa)) == sorted(set(qb)):
        return ORDER
    if added and all(_SESSION.match(k) for k in added):
        return SESSION
    if added and all(_TRACKING.match(k) for k in added):
        return TRACKING
    if any(k.lower() == "print" or _PRINT.search(f"?{k}={v}") for k, v in qb):
        return PRINT
    return PARAMETERS
