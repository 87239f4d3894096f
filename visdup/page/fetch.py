"""What one fetch tells of a page, declared once: the crawl's item, the labelling's job and the
stored record all carry these fields, under these names."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(slots=True)
class Fetch:
    """A page's URL and the facts of its response."""

    #: The URL asked for (the first of its redirects).
    url: str
    #: The URL the response came from, after redirects.
    final_url: str | None = None
    status: int | None = None
    #: Links followed from the start URL to reach it.
    depth: int | None = None
    referer: str | None = None
    content_type: str | None = None
    #: The encoding the response was decoded with.
    encoding: str | None = None
    #: The page's links, as the spider read them (absolute URLs).
    links: list[str] = field(default_factory=list, repr=False)

    def fetch_facts(self) -> dict[str, Any]:
        """The response's facts (everything here but the URL), a copy of the links."""
        return fetch_facts(self)


#: The names of a fetch's facts, the URL aside.
FETCH_FACTS: tuple[str, ...] = tuple(f.name for f in fields(Fetch) if f.name != "url")


def fetch_facts(page: Any) -> dict[str, Any]:
    """The fetch's facts of anything that carries them (a :class:`Fetch`, a page item)."""
    facts = {name: getattr(page, name) for name in FETCH_FACTS}
    facts["links"] = list(facts["links"] or ())
    return facts
