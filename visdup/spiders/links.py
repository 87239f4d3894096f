"""The site spider's links: each href resolved to the canonical URL it is followed, stored and
looked up by, remembered across pages, out of scope by its host where that is plain.

An href costs w3lib's quoting and canonical form (two parses) the first time it is met; pages of
a site link to the same menus, and pages of real sites to hundreds of URLs of other sites each
met once. A link is resolved once per directory it is met in (:class:`LinkResolver`), a link to
another site by its plainly written host is left out without the canonical form, and a plain
path that joins to a URL in canonical form already is only joined: every link resolves as the
canonical form resolves it (:func:`_resolve_in_full` is the reference).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

from scrapy.linkextractors import IGNORED_EXTENSIONS
from w3lib.url import parse_url, safe_url_string

from visdup.page.links import fragment_at
from visdup.storage.urls import canonical_url

#: The schemes a crawl follows, with their default ports.
DEFAULT_PORTS = {"http": 80, "https": 443}
_IGNORED = frozenset("." + e for e in IGNORED_EXTENSIONS)
#: The most dots one of them holds (``.tar.gz``: 2).
_IGNORED_DOTS = max(e.count(".") for e in _IGNORED)


def canonical(url: str) -> str:
    """The form a link is followed, stored and looked up in: no fragment, w3lib's canonical."""
    return canonical_url(url)


#: What URL parsers strip from both ends of an href: C0 controls and the space.
_URL_PADDING = "".join(map(chr, range(0x21)))
#: An href with a scheme and a host: the base plays no part in it.
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]")
#: An href with a scheme (``http:x``, ``mailto:``): kept by the whole base.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _link_ref(href: str) -> str:
    """An href as it is resolved: its ends stripped and tabs and line breaks dropped (as URL
    parsers do), its fragment dropped (the canonical form drops it, and a fragment that the
    page's encoding cannot write does not lose the link)."""
    ref = href.strip().strip(_URL_PADDING)
    if "\t" in ref or "\n" in ref or "\r" in ref:  # str.translate costs more than the rest
        ref = ref.replace("\t", "").replace("\n", "").replace("\r", "")
    return ref.split("#", 1)[0]


def resolve_link(base: str, href: str, encoding: str) -> str | None:
    """The canonical absolute URL an ``href`` on a page at ``base`` leads to; None for a link
    not to follow (an unusable URL, or a file by its extension: images, archives, media)."""
    return _resolve_ref(base, _link_ref(href), encoding)


#: An href of characters no step of the canonical form changes (unreserved ones and ``/``)...
_PLAIN_REF = re.compile(r"[A-Za-z0-9/._~-]*\Z")
#: ...that resolves to a URL in canonical form already: http(s), a lower-case host, a port
#: as the canonical form writes it, a path of those characters (no dot segment: ``/.``
#: leaves nothing to resolve), no query, no fragment.
_PLAIN_URL = re.compile(
    r"https?://[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::[1-9][0-9]*)?(/[A-Za-z0-9/._~-]*)\Z"
)


def _resolve_ref(base: str, ref: str, encoding: str) -> str | None:
    """The canonical URL of ``ref`` on a page at ``base`` (None: unusable, or an ignored
    file). Most links of a site are plain paths that resolve to a URL in canonical form
    already, which the canonical form's quoting and parsing (twice) would return unchanged:
    they are only joined (:func:`_resolve_in_full` is the reference). Not an href with an
    empty segment: ``urljoin`` drops those, and w3lib's quoting may first make one a dot
    segment's neighbour (``/..//b`` reads ``/.//b`` from w3lib 2.6), which it keeps."""
    if _PLAIN_REF.match(ref) and "//" not in ref:
        url = _plain_join(base, ref) or urljoin(base, ref)
        plain = _PLAIN_URL.match(url)
        if plain is not None and "/." not in plain.group(1):
            return None if _ignored_file(url) else url
    return _resolve_in_full(base, ref, encoding)


def _plain_join(base: str, ref: str) -> str | None:
    """``urljoin(base, ref)`` of a plain href (:data:`_PLAIN_REF`) by the merge it makes of
    the two (the href from the base's root, or from its directory), without parsing either;
    None where ``urljoin`` must say: an empty href, a host, a dot segment or an empty one
    (``urljoin`` drops those) in either, a base without a host."""
    if not ref or ref[0] == "." or "/." in ref or "//" in ref:
        return None
    start = base.find("://") + 3
    if start < 4:
        return None
    end = stop = len(base)  # where the host ends; where the path ends
    for mark in "?#":
        at = base.find(mark, start)
        if 0 <= at < stop:
            end = stop = at
    slash = base.find("/", start, stop)
    if slash >= 0:
        end = slash
    path = base[end:stop]
    if end == start or "/." in path or "//" in path:
        return None
    if ref[0] == "/":
        return base[:end] + ref
    return base[:end] + path[: path.rfind("/") + 1] + ref if path else base[:end] + "/" + ref


def _resolve_in_full(base: str, ref: str, encoding: str) -> str | None:
    try:
        url = canonical(urljoin(base, safe_url_string(ref, encoding)))
        return None if _ignored_file(url) else url
    except (ValueError, UnicodeError):  # a URL w3lib cannot read: no link
        return None


def _ignored_file(url: str) -> bool:
    """Whether the path of ``url`` ends with one of the ignored extensions (Scrapy's
    ``url_has_any_extension``: the same parse, but a set lookup per dot from the right
    instead of a comparison per extension)."""
    path = parse_url(url).path.lower()
    end = len(path)
    for _ in range(_IGNORED_DOTS):
        end = path.rfind(".", 0, end)
        if end < 0:
            return False
        if path[end:] in _IGNORED:
            return True
    return False


#: An href's scheme and a host named plainly (letters, digits, dots and hyphens, the last
#: label a name: no number a URL parser would read as an address), and its port.
_PLAIN_ORIGIN = re.compile(
    r"([A-Za-z][A-Za-z0-9+.-]*)://((?:[A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*\.?)(?::([0-9]*))?"
    r"(?=[/?#]|$)"
)


def _surely_elsewhere(ref: str, origins: frozenset[tuple[str, str, int]]) -> bool:
    """Whether an href with a scheme and a host leads out of ``origins`` (their hosts and
    subdomains) whatever its canonical form: its host named plainly, its canonical form keeps
    the host as written, in lower case. Anything else is for the canonical form to say."""
    found = _PLAIN_ORIGIN.match(ref)
    if found is None:
        return False
    scheme = found.group(1).lower()
    default = DEFAULT_PORTS.get(scheme)
    if default is None:
        return True  # not http(s): never in scope
    host = found.group(2).lower()
    port = int(found.group(3)) if found.group(3) else default
    return not any(
        scheme == s and port == p and (host == h or host.endswith("." + h)) for s, h, p in origins
    )


#: What an href's result depends on: nothing else (a scheme and a host), the page's
#: directory, or the whole page URL.
_ALONE, _FOLDER, _BASE = 0, 1, 2


def _classify(href: str) -> tuple[str, int]:
    """An href as resolved (:func:`_link_ref`), and what its result depends on."""
    ref = _link_ref(href)
    if _ABSOLUTE.match(ref):
        return ref, _ALONE
    if ref[:1] == "/" and ref[1:2] not in ("/", "\\"):
        return ref, _FOLDER  # a path from the root: the host's (the directory names it)
    if ref and (ref[0].isalnum() or ref[0] in "._-~%") and not _SCHEME.match(ref):
        return ref, _FOLDER  # a relative path
    return ref, _BASE  # empty, a query, ``;params``, ``//host``, a bare scheme...


class LinkResolver:
    """:func:`resolve_link`, remembered across pages.

    Resolving a link costs w3lib's quoting and canonical form, and pages link to the same
    menus (hundreds of links a page on a manual, most of them met before). A relative path
    resolves the same from every page of one directory (RFC 3986 merges it with the base's
    path up to its last ``/``; the rest of the base plays no part), so results are kept by
    (directory, href as resolved, encoding); an href with a scheme and a host by itself; any
    other (empty, only a query or ``;params``, ``//``, a scheme without a host) by the whole
    base. Each directory also keeps its hrefs as written, so that a link met before in that
    directory costs one dictionary lookup (without its fragment: a manual's pages link to many
    anchors of one page).
    The crawl's scope is fixed, so links out of it are kept as None. The memory is bounded:
    past ``limit`` entries it starts again.
    """

    limit = 200_000

    def __init__(
        self,
        in_scope: Callable[[str], bool],
        origins: frozenset[tuple[str, str, int]] | None = None,
    ):
        #: Links ``in_scope`` rejects resolve to None.
        self.in_scope = in_scope
        #: The (scheme, host, port) ``in_scope`` keeps, with their subdomains (None: any):
        #: a link elsewhere by its plainly named host is not put in canonical form at all
        #: (real pages link to many other sites, each link met once).
        self.origins = origins
        #: (what the result depends on, href as resolved, encoding) → canonical URL or None.
        self.memory: dict[tuple[str, str, str], str | None] = {}
        #: href → (href as resolved, what its result depends on): most repeat on every page.
        self.refs: dict[str, tuple[str, int]] = {}
        #: (directory, encoding) → {href as written: canonical URL or None}, for the hrefs
        #: whose result does not depend on the rest of the base.
        self.written: dict[tuple[str, str], dict[str, str | None]] = {}
        self._written_size = 0

    def for_page(self, base: str, encoding: str) -> Callable[[str], str | None]:
        """A resolver for the links of one page at ``base``."""
        parts = urlsplit(base)
        path = parts.path
        folder = f"{parts.scheme}://{parts.netloc}{path[: path.rfind('/') + 1] or '/'}"
        memory, refs, in_scope, origins = self.memory, self.refs, self.in_scope, self.origins
        if len(memory) > self.limit:
            memory.clear()
        if len(refs) > self.limit:
            refs.clear()
        if self._written_size > self.limit:
            self.written.clear()
            self._written_size = 0
        written = self.written.setdefault((folder, encoding), {})

        def resolve(href: str) -> str | None:
            try:
                return written[href]
            except KeyError:
                pass
            written_as = href
            cut = fragment_at(href)
            if cut > 0:
                # without its fragment it is the same link (nothing before the ``#`` to
                # strip: see _link_ref), resolved once for all of its fragments
                href = href[:cut]
                if href in written:
                    url = written[written_as] = written[href]
                    self._written_size += 1
                    return url
            try:
                ref, kind = refs[href]
            except KeyError:
                ref, kind = refs[href] = _classify(href)
            key = (folder if kind == _FOLDER else base if kind == _BASE else "", ref, encoding)
            try:
                url = memory[key]
            except KeyError:
                if kind == _ALONE and origins is not None and _surely_elsewhere(ref, origins):
                    url = None
                else:
                    url = _resolve_ref(base, ref, encoding)
                    if url is not None and not in_scope(url):
                        url = None
                memory[key] = url
            if kind != _BASE:
                written[href] = written[written_as] = url
                self._written_size += 2
            return url

        return resolve
