"""URL shapes: one page's (:func:`url_shape`, what crawl budgets and drift snapshots key on)
and a set of pages' (:func:`url_patterns`, what a report names a template by).

A page's shape stands for its path alone: its file stem becomes ``*`` and digits in its
directories ``N`` (``/blog/N/*.html``). A set's patterns are read from the set: a segment
that all its pages of one shape share stays as it is, one that varies becomes ``*``. So a
template of print views is ``/articles/*/print.html``, not one pattern per article's
directory, and a one-page template is its own path. Pages are generalised together only
under one top directory: two sections of a site stay two patterns. Path parameters and query
values never name a page type (``;jsessionid=*``, ``?utm_source=*``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from urllib.parse import urlsplit

_NUM = re.compile(r"\d+")


def url_shape(url: str) -> str:
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/")]
    out = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if last and "." in seg:
            stem, ext = seg.rsplit(".", 1)
            out.append(("*" if stem else "") + "." + ext)
        else:
            out.append(_NUM.sub("N", seg) if seg else seg)
    shape = "/".join(out)
    if parts.query:
        keys = sorted(kv.split("=", 1)[0] for kv in parts.query.split("&") if kv)
        shape += "?" + "&".join(f"{k}=*" for k in keys)
    return shape


def _parts(url: str, extras: bool) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """The URL's path segments (the last split into stem and extension, after a ``\\0``),
    and, with ``extras``, what its path parameters and query add (``;k=*``, ``?k=*&...``)."""
    parts = urlsplit(url)
    segments: list[str] = []
    params: list[str] = []
    for seg in parts.path.split("/"):
        name, *kept = seg.split(";")
        segments.append(name)
        params = [p.split("=", 1)[0] for p in kept if p]  # the last segment's count
    last = segments[-1]
    if "." in last:
        stem, ext = last.rsplit(".", 1)
        segments[-1] = f"{stem}\0.{ext}"
    tail = ""
    if extras:
        tail = "".join(f";{k}=*" for k in params)
        keys = sorted(kv.split("=", 1)[0] for kv in parts.query.split("&") if kv)
        if keys:
            tail += "?" + "&".join(f"{k}=*" for k in keys)
    return tuple(segments), tuple(s.split("\0", 1)[1] if "\0" in s else "" for s in segments), tail


def _generalised(urls: list[str], extras: bool) -> Counter[str]:
    """Each pattern of the set with the number of its pages (see the module docstring)."""
    # pages of one depth, extension, parameters and top directory are generalised together
    # (two sections of a site are never one pattern: ``/articles/*`` and ``/shop/*``)
    Key = tuple[int, tuple[str, ...], str, str | None]
    groups: dict[Key, list[tuple[str, ...]]] = defaultdict(list)
    for url in urls:
        segments, exts, tail = _parts(url, extras)
        top = segments[1] if len(segments) > 2 else None
        groups[(len(segments), exts, tail, top)].append(segments)
    counts: Counter[str] = Counter()
    for (_n, exts, tail, _top), members in groups.items():
        out = []
        for i, ext in enumerate(exts):
            values = {m[i] for m in members}
            if len(values) == 1:
                out.append(next(iter(values)).replace("\0", ""))
            elif ext:
                out.append("*" + ext)
            else:
                out.append("*")
        counts["/".join(out) + tail] += len(members)
    return counts


def _ranked(counts: Counter[str]) -> list[tuple[str, int]]:
    """Most pages first, then in the patterns' order: the same whatever order the URLs came."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def url_patterns(urls: list[str], limit: int = 5) -> list[str]:
    """The set's patterns with their page counts, most pages first (``/shop/*.html (12)``)."""
    return [f"{p or '/'} ({n})" for p, n in _ranked(_generalised(urls, True))[:limit]]


def main_pattern(urls: list[str]) -> str:
    """The path pattern of most of the set's pages, parameters and query left out: they
    name no page type, and copies add them."""
    ranked = _ranked(_generalised(urls, False))
    return (ranked[0][0] or "/") if ranked else "/"
