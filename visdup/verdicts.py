"""The one vocabulary of verdicts and kinds, and which page of a group is its original.

Every page gets one **verdict**; a page whose verdict is a duplicate verdict (``duplicate``,
``moved``) also gets a **kind**, the evidence that made it one, and ``duplicate_of``, its
group's original, whose verdict is ``original``. Other pages carry neither. Stats
(``visdup/verdict/<verdict>``, ``visdup/duplicates/<kind>``), items, the store's rows and the
report all use these words.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

from w3lib.url import canonicalize_url

#: The page a group of copies points to: the one to keep (indexable, canonical).
ORIGINAL = "original"
#: Same content in the same layout, or a byte-identical copy.
DUPLICATE = "duplicate"
#: Same content in another layout (print version, syndicated copy).
MOVED = "moved"
#: New content in a known layout: no copy, but another page of its template.
SAME_TEMPLATE = "same_template"
#: No copy and no other page of its layout.
NOVEL = "novel"
VERDICTS = (ORIGINAL, DUPLICATE, MOVED, SAME_TEMPLATE, NOVEL)
#: The verdicts the duplicate policy acts on (drop, do not follow); structure alone never.
DUPLICATE_VERDICTS = frozenset({DUPLICATE, MOVED})

#: A byte-identical copy.
EXACT = "exact"
#: The same main content (layered text fingerprints, seed 002).
CONTENT = "content"
#: Near-identical structure when the structure channel decides alone (content channel off).
STRUCTURAL = "structural"
#: Too little text for the content channel: the same normalised visible text and
#: near-identical structure (login walls, soft 404s, empty result pages).
THIN = "thin"
KINDS = (EXACT, CONTENT, STRUCTURAL, THIN)


def is_duplicate(verdict: str | None) -> bool:
    return verdict in DUPLICATE_VERDICTS


#: Query parameters that track a visit or a session rather than name a page.
TRACKING_PARAMS = frozenset(
    {
        "fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "yclid", "igshid", "ref",
        "ref_src", "referrer", "sid", "session", "sessionid", "session_id",
        "phpsessid", "jsessionid", "aspsessionid", "cfid", "cftoken", "zenid", "oscsid",
        "returnurl", "return_url", "redirect", "redirect_to", "next",
    }
)  # fmt: skip
_TRACKING_PREFIXES = ("utm_", "mtm_", "pk_", "hsa_")
#: Session ids in the path: ``;jsessionid=…`` and friends.
_PATH_SESSION = re.compile(r";\s*(jsessionid|sid|sessionid|phpsessid)=", re.IGNORECASE)


def tracked(url: str) -> bool:
    """Whether a URL carries tracking parameters or a session id."""
    parts = urlsplit(url)
    if _PATH_SESSION.search(parts.path) or _PATH_SESSION.search(url):
        return True
    return any(
        tracking_param(key) for key, _value in parse_qsl(parts.query, keep_blank_values=True)
    )


def tracking_param(name: str) -> bool:
    """Whether a query parameter tracks a visit or a session rather than names a page."""
    name = name.lower()
    return name in TRACKING_PARAMS or name.startswith(_TRACKING_PREFIXES)


def without_session(path: str) -> str:
    """A URL path without a session id in it (``/a.html;jsessionid=...`` -> ``/a.html``)."""
    return _PATH_SESSION.split(path, maxsplit=1)[0]


def original_rank(url: str, named: bool) -> tuple[int, int, int, str]:
    """Order of a group's pages as its original, best first, from the page alone.

    The page the group names canonical; else a URL without tracking parameters or session
    ids; then the shortest path and query (a print version or a partner's copy sits deeper);
    then URL order. Nothing in it depends on when a page was fetched.
    """
    parts = urlsplit(url)
    path = without_session(parts.path)
    return (0 if named else 1, 1 if tracked(url) else 0, len(path) + len(parts.query), url)


def same_url(a: str, b: str) -> bool:
    """Whether two URLs name one page (w3lib's canonical form, fragments dropped)."""
    if a == b:
        return True
    try:
        return _canonical(a) == _canonical(b)
    except (ValueError, UnicodeError):
        return False


@lru_cache(maxsize=4096)
def _canonical(url: str) -> str:
    """w3lib's canonical form, kept: a group's original and the canonical URLs its pages
    name are compared again with every page that joins the group."""
    return canonicalize_url(url)
