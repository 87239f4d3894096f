"""Summarise a template's member URLs as patterns, e.g. ``/articles/*.html``."""

from __future__ import annotations

import re
from collections import Counter
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


def url_patterns(urls: list[str], limit: int = 5) -> list[str]:
    """Most common path shapes with their counts, most frequent first."""
    counts = Counter(url_shape(u) for u in urls)
    return [f"{shape} ({n})" for shape, n in counts.most_common(limit)]
